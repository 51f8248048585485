"""An input pipeline: token ids, one-hot labels, shuffling, augmentation and standardisation.

Written the way NumPy code is written, it goes wrong in JAX. `jaxlint check examples/pipeline.py`
reports each mistake before the code runs:

- `token_ids` asks for int64, which JAX silently turns into int32 unless x64 is enabled (JAX402);
- `one_hot` assigns into a JAX array, which is immutable (JAX401);
- `masked` writes the mask with `.at[...].set(...)` but throws the updated array away, so the mask
  stays all ones (JAX404);
- `to_grayscale` passes a Python list where `jnp.dot` needs an array (JAX403);
- `shuffled_epochs` re-creates the same key every epoch, so every epoch has the same order (JAX103);
- `augment` draws NumPy noise inside `jax.jit`: drawn once while tracing, then the same on every
  call (JAX102);
- `standardise` logs inside `jax.jit`: the line is logged once, while tracing, and shows a tracer
  instead of the mean (JAX304);
- `thumbnails` passes a list as the static `shape` of `resized`: JAX hashes static arguments, and a
  list has no hash (JAX505);
- `Normaliser.__call__` is jitted with `self` traced, and a `Normaliser` is not a pytree (JAX507).

`clean.py` has versions of each that work.
"""
import functools
import logging

import jax
import jax.numpy as jnp
import numpy as np

logger = logging.getLogger(__name__)

NUM_CLASSES = 10


def token_ids(tokens: list[int]) -> jax.Array:
    return jnp.asarray(tokens, dtype=jnp.int64)


def one_hot(label: int, num_classes: int = NUM_CLASSES) -> jax.Array:
    target = jnp.zeros(num_classes)
    target[label] = 1.0
    return target


def masked(batch: jax.Array, padding: int) -> jax.Array:
    mask = jnp.ones(batch.shape[0])
    mask.at[batch.shape[0] - padding:].set(0.0)
    return batch * mask[:, None]


def to_grayscale(images: jax.Array) -> jax.Array:
    return jnp.dot(images, [0.299, 0.587, 0.114])


def shuffled_epochs(data: jax.Array, epochs: int) -> list[jax.Array]:
    shuffled = []
    for _ in range(epochs):
        key = jax.random.key(0)
        order = jax.random.permutation(key, data.shape[0])
        shuffled.append(data[order])
    return shuffled


@jax.jit
def augment(images: jax.Array) -> jax.Array:
    noise = np.random.normal(0.0, 0.1, size=images.shape)
    return images + noise


@jax.jit
def standardise(batch: jax.Array) -> jax.Array:
    logger.info("batch mean before standardising: %s", batch.mean())
    return (batch - batch.mean()) / (batch.std() + 1e-6)


@functools.partial(jax.jit, static_argnums=1)
def resized(images: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    return jax.image.resize(images, shape, "linear")


def thumbnails(images: jax.Array) -> jax.Array:
    return resized(images, [images.shape[0], 16, 16])


class Normaliser:
    def __init__(self, mean: float, std: float):
        self.mean = mean
        self.std = std

    @jax.jit
    def __call__(self, batch: jax.Array) -> jax.Array:
        return (batch - self.mean) / self.std
