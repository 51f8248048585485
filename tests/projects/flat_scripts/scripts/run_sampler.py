import time

import jax
import jax.numpy as jnp
from jax import lax

from helpers import count_above, labelled, make_step, scaled, shrink, smoothed


def body(i, x):
    return shrink(x, 10.0)


@jax.jit
def sample(x):
    return lax.fori_loop(0, 3, body, x)


@jax.vmap
def count(x):
    return count_above(x, 0.5)


@jax.jit
def rescale(x):
    return scaled(x, 2.0)


def count_eagerly(x):
    return count_above(x, 0.5)


def shuffled_epochs(seed, epochs, n):
    # one key per epoch, each derived from the same root key: the root is never drawn from
    key = jax.random.key(seed)
    orders = []
    for epoch in range(epochs):
        orders.append(jax.random.permutation(labelled(key, f"epoch-{epoch}"), n))
    return orders


def smooth_eagerly(x):
    return smoothed(x)


def time_step(x):
    step = make_step(2.0)
    start = time.perf_counter()
    y = step(x)
    elapsed = time.perf_counter() - start  # expect: JAX504
    return y, elapsed


def time_step_waited(x):
    step = make_step(2.0)
    start = time.perf_counter()
    y = step(x).block_until_ready()
    return y, time.perf_counter() - start


if __name__ == "__main__":
    print(rescale(jnp.ones(3)))
