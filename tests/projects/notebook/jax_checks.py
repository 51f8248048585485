"""What JAX does with this project's functions: (module, function, arguments, exception or None)."""
import jax
import jax.numpy as jnp

CHECKS = [
    ("helpers", "normalize", lambda: (jnp.arange(3.0),), None),
    ("helpers", "softmax", lambda: (jnp.arange(3.0),), None),
]
#: the notebook's cells call these through `jax.jit`
JITTED = [
    ("helpers", "normalize", lambda: (jnp.arange(3.0),), "TracerBoolConversionError"),
    ("helpers", "softmax", lambda: (jnp.arange(3.0),), None),
]
