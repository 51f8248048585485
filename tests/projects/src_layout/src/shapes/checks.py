import jax.numpy as jnp


def is_finite_batch(x):
    return jnp.isfinite(x).all()


def has_rows(x):
    return x.shape[0] > 0
