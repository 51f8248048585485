"""A small regression training script with the mistakes people make when they start with JAX."""
import functools

import jax
import jax.numpy as np
from jax.config import config

config.update("jax_enable_x64", False)


def loss(params, x, y):
    pred = np.dot(x, params["w"]) + params["b"]
    return np.mean((pred - y) ** 2)


def update(params, grads, lr):
    return jax.tree_map(lambda p, g: p - lr * g, params, grads)


def train(params, batches, lr=0.1):
    for x, y in batches:
        grads = jax.jit(jax.grad(loss))(params, x, y)
        params = update(params, grads, lr)
    return params


def evaluate(params, x, y, scale):
    scaled = functools.partial(loss, params)
    return jax.jit(lambda a, b: scale * scaled(a, b))(x, y)


def bounded(x):
    return np.clip(x, a_min=0.0, a_max=1.0)


def placement(x):
    return x.device()
