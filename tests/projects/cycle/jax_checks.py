"""What JAX does with this project's functions: (module, function, arguments, exception or None)."""
import jax.numpy as jnp

CHECKS = [
    ("cyc.model", "apply", lambda: (jnp.ones(3),), "TracerBoolConversionError"),
    ("cyc.model", "apply_plain", lambda: (jnp.ones(3),), None),
]
