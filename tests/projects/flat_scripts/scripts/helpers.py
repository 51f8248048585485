import jax.numpy as jnp


def shrink(x, limit):
    while jnp.linalg.norm(x) > limit:  # expect: JAX201
        x = x / 2
    return x


def scaled(x, scale):
    return x * scale


def count_above(x, threshold):
    return int(jnp.sum(x > threshold))  # expect: JAX203
