"""A package whose functions are re-exported here and used through relative imports."""
from .checks import is_finite_batch
from .losses import clipped_loss, smooth_loss
from .state import Schedule
