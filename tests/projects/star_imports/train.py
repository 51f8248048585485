"""A training script whose every JAX name comes from `from pkg import *`."""
from pkg import *


def loss(w, x):
    return jnp.sum((w * x) ** 2)


def two_draws(seed):
    key = jr.key(seed)
    a = jr.normal(key, (3,))
    b = jr.normal(key, (3,))  # expect: JAX101
    return a + b


def two_independent_draws(seed):
    key_a, key_b = jr.split(jr.key(seed))
    return jr.normal(key_a, (3,)) + jr.normal(key_b, (3,))


def train(w, batches):
    for x in batches:
        grads = jax.jit(jax.grad(loss))(w, x)  # expect: JAX501
        w = w - 0.1 * grads
    return w


def train_compiled_once(w, batches):
    step = jax.jit(jax.grad(loss))
    for x in batches:
        w = w - 0.1 * step(w, x)
    return w


@jax.jit
def normalized_step(x):
    return normalize(x)


@jax.jit
def clipped_step(x):
    return clipped(x)
