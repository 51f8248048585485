"""Code that treats traced values like ordinary Python values."""
import jax
import jax.numpy as jnp


@jax.jit
def safe_log(x):
    print("computing log of", x)
    if x > 0:
        return jnp.log(x)
    return jnp.zeros_like(x)


def body(i, total):
    while total > 100.0:
        total = total / 2
    return total + i


def accumulate(n):
    return jax.lax.fori_loop(0, n, body, 0.0)
