"""What JAX does with this project's functions: (module, function, arguments, exception or None)."""
import jax.numpy as jnp

from shapes.state import Schedule, Window


def batch():
    return {"x": jnp.ones((2, 3)), "y": jnp.ones(2)}


CHECKS = [
    ("shapes.train", "train_step", lambda: (jnp.ones(3), batch()), "TracerBoolConversionError"),
    ("shapes.train", "safe_step", lambda: (jnp.ones(3), batch()), None),
    ("shapes.train", "guarded_step", lambda: (jnp.ones(3), batch()), "TracerBoolConversionError"),
    ("shapes.train", "shaped_step", lambda: (jnp.ones(3), batch()), None),
    ("shapes.train", "fill_buffer", lambda: (), "TypeError"),
    ("shapes.train", "fill_list", lambda: (), None),
    ("shapes.train", "two_noisy_copies", lambda: (jnp.ones(3),), "KeyReuseError"),
    ("shapes.train", "two_independent_copies", lambda: (jnp.ones(3),), None),
    ("shapes.train", "evaluation_keys_used", lambda: (jnp.ones(3),), "KeyReuseError"),
    ("shapes.train", "scaled_step", lambda: (jnp.ones(3),), "TracerBoolConversionError"),
    ("shapes.train", "mean_step", lambda: (jnp.ones(3),), "ConcretizationTypeError"),
    ("shapes.train", "squashed_step", lambda: (jnp.ones(3),), None),
    ("shapes.scheduled", "warm_step", lambda: (jnp.ones(3), Schedule(jnp.ones(()))), "TracerBoolConversionError"),
    ("shapes.scheduled", "windowed_step", lambda: (jnp.ones(3), Window(jnp.ones(()), 2, jnp.ones(()))),
     "TracerBoolConversionError"),
]
