import jax

from cyc import layers


def activation(x):
    if x.mean() > 0:  # expect: JAX201
        return x
    return -x


def identity(x):
    return x


@jax.jit
def apply(x):
    return layers.dense(x)


@jax.jit
def apply_plain(x):
    return layers.plain(x)
