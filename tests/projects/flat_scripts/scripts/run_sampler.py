import jax
import jax.numpy as jnp
from jax import lax

from helpers import count_above, labelled, scaled, shrink, smoothed


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


if __name__ == "__main__":
    print(rescale(jnp.ones(3)))
