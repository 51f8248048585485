import jax

from . import clipped_loss, is_finite_batch, smooth_loss
from .buffers import make_buffer, make_list, noisy, setup_evaluation
from .checks import has_rows
from .model import Scale


@jax.jit
def train_step(params, batch):
    return clipped_loss(batch["x"] @ params, batch["y"], 1.0)


@jax.jit
def safe_step(params, batch):
    return smooth_loss(batch["x"] @ params, batch["y"], 1.0)


@jax.jit
def guarded_step(params, batch):
    if is_finite_batch(batch["x"]):  # expect: JAX201
        return params
    return params * 0


@jax.jit
def shaped_step(params, batch):
    if has_rows(batch["x"]):
        return params
    return params * 0


def fill_buffer():
    buf = make_buffer(4)
    buf[0] = 1.0  # expect: JAX401
    return buf


def fill_list():
    values = make_list(4)
    values[0] = 1.0
    return values


def two_noisy_copies(x):
    key = jax.random.key(0)
    a = noisy(key, x)
    b = noisy(key, x)  # expect: JAX101
    return a, b


def two_independent_copies(x):
    key = jax.random.key(0)
    key_a, key_b = jax.random.split(key)
    return noisy(key_a, x), noisy(key_b, x)


def evaluation_keys_replaced(x):
    # the keys `setup_evaluation` splits off are replaced before any use: no number repeats
    key = jax.random.key(0)
    evaluate, (n, keys) = setup_evaluation(key, 2)
    key, *keys = jax.random.split(key, n + 1)
    return evaluate(x + jax.random.normal(keys[0], x.shape))


def evaluation_keys_used(x):
    key = jax.random.key(0)
    evaluate, (n, keys) = setup_evaluation(key, 2)
    first = evaluate(jax.random.normal(keys[0], x.shape))
    key, subkey = jax.random.split(key)  # expect: JAX101
    return first + evaluate(x + jax.random.normal(subkey, x.shape))


scaler = Scale(2.0)


@jax.jit
def scaled_step(x):
    return scaler(x)


@jax.jit
def mean_step(x):
    return scaler.mean_value(x)


@jax.jit
def squashed_step(x):
    return scaler.squashed(x)
