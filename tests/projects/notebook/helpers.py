import jax.numpy as jnp


def normalize(x):
    total = x.sum()
    if total == 0:  # expect: JAX201
        return x
    return x / total


def softmax(x):
    shifted = x - x.max()
    return jnp.exp(shifted) / jnp.exp(shifted).sum()


def make_grid(n):
    return jnp.zeros((n, n))
