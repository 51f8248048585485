"""The same training script written the JAX way: jaxlint reports nothing here."""
import jax
import jax.numpy as jnp


def loss(params, x, y):
    pred = jnp.dot(x, params["w"]) + params["b"]
    return jnp.mean((pred - y) ** 2)


@jax.jit
def train_step(params, x, y, lr):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


def train(params, batches, lr=0.1):
    for x, y in batches:
        params = train_step(params, x, y, lr)
    return params


def bounded(x):
    return jnp.clip(x, min=0.0, max=1.0)
