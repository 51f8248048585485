"""A package its scripts take everything from with `from pkg import *`: JAX's modules under the
names it imports them as, and (through its own star import) the helpers of `pkg.util`."""
import jax
import jax.random as jr

from .util import *

_seed = 0
