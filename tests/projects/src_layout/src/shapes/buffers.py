import jax
import jax.numpy as jnp


def make_buffer(size):
    return jnp.zeros((size,))


def make_list(size):
    return [0.0] * size


def noisy(key, x):
    return x + 0.1 * jax.random.normal(key, x.shape)


def setup_evaluation(key, n):
    evaluate = jnp.sum
    keys = jax.random.split(key, n)
    return evaluate, (n, keys)
