import jax.numpy as jnp


def normalize(x):
    if jnp.linalg.norm(x) > 1:  # expect: JAX201
        return x / jnp.linalg.norm(x)
    return x


def clipped(x):
    return jnp.clip(x, -1.0, 1.0)
