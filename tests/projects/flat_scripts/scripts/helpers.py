import jax
import jax.numpy as jnp


def shrink(x, limit):
    while jnp.linalg.norm(x) > limit:  # expect: JAX201
        x = x / 2
    return x


def scaled(x, scale, clip=None):
    if scale > 1:  # a Python number at every call: static under the caller's trace
        x = x * scale
    if clip is not None:
        x = jnp.clip(x, -clip, clip)
    return x


def count_above(x, threshold):
    return int(jnp.sum(x > threshold))  # expect: JAX203


# a key for each label, derived without consuming the key it is given
labelled = lambda key, label: jax.random.fold_in(key, hash(label) % 1000)


def smoothed(x):
    # `run_sampler` also calls it outside any trace: there this jit is what compiles it
    return jax.jit(jnp.cumsum)(x) / 2


def sharpened(x):
    # only `smooth_and_sharpen` reaches it, always jitted: the inner jit is inlined
    return jax.jit(jnp.cumprod)(x) * 2  # expect: JAX503


@jax.jit
def smooth_and_sharpen(x):
    return smoothed(x) + sharpened(x)


def make_step(scale):
    # a factory of jitted functions: what it returns dispatches asynchronously where it is called
    def step(x):
        return jnp.tanh(x) * scale
    return jax.jit(step)
