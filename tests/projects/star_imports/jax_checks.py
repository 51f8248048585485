"""What JAX does with this project's functions: (module, function, arguments, exception or None)."""
import jax.numpy as jnp

CHECKS = [
    ("train", "two_draws", lambda: (0,), "KeyReuseError"),
    ("train", "two_independent_draws", lambda: (0,), None),
    ("train", "train_compiled_once", lambda: (jnp.ones(3), [jnp.ones(3)]), None),
    ("train", "normalized_step", lambda: (jnp.ones(3),), "TracerBoolConversionError"),
    ("train", "clipped_step", lambda: (jnp.ones(3),), None),
]
