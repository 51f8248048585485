"""What JAX does with this project's functions: (module, function, arguments, exception or None)."""
import jax.numpy as jnp

CHECKS = [
    ("run_sampler", "sample", lambda: (jnp.ones(3),), "TracerBoolConversionError"),
    ("run_sampler", "count", lambda: (jnp.ones((2, 3)),), "ConcretizationTypeError"),
    ("run_sampler", "rescale", lambda: (jnp.ones(3),), None),
    ("run_sampler", "count_eagerly", lambda: (jnp.ones(3),), None),
    ("run_sampler", "shuffled_epochs", lambda: (0, 3, 4), None),
]
#: the directory the scripts run from (it is first on `sys.path` when they run)
PATH = ["scripts"]
