"""Numerical helpers that use traced values as if they were ordinary Python numbers.

Under `jax.jit` a function's arguments are tracers: abstract arrays whose values are known only
when the compiled code runs. Each of the first four functions needs a value while JAX traces it,
so it raises on its first call: a Python `if` on an array (JAX201), `range()` of an array
(JAX202), `float()` of an array (JAX203), and boolean-mask indexing, whose result has a shape
that depends on the values (JAX204). `simulate` works, but its 1000-step Python loop is unrolled
into 1000 copies of the step, and compiling it is slow (JAX205). `clipped` checks whether its
argument is a NumPy array, which a tracer never is, so the clipping never happens (JAX206), and
`log_step` hands `jax.debug.print` an f-string that Python fills in while tracing: every call prints
the tracer, not the value (JAX305). `radial_forces` computes, but its gradient is NaN for a
particle at the origin: the `where` hides the `sqrt` of 0, not its infinite derivative (JAX405).

`jaxlint check examples/tracing.py` reports all eight before anything runs; `clean.py` has
versions that trace.
"""
import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def safe_log(x: jax.Array) -> jax.Array:
    if x > 0:
        return jnp.log(x)
    return jnp.zeros_like(x)


@jax.jit
def power(x: jax.Array, n: int) -> jax.Array:
    result = jnp.ones_like(x)
    for _ in range(n):
        result = result * x
    return result


@jax.jit
def normalise(x: jax.Array) -> jax.Array:
    scale = float(jnp.max(jnp.abs(x)))
    return x / scale


@jax.jit
def positive_mean(x: jax.Array) -> jax.Array:
    return jnp.mean(x[x > 0])


@jax.jit
def simulate(x: jax.Array, dt: float = 0.01) -> jax.Array:
    for _ in range(1000):
        x = x + dt * jnp.sin(x)
    return x


@jax.jit
def clipped(x: jax.Array) -> jax.Array:
    if isinstance(x, np.ndarray):
        x = jnp.clip(x, -1.0, 1.0)
    return x * 2


@jax.jit
def log_step(x: jax.Array) -> jax.Array:
    norm = jnp.linalg.norm(x)
    jax.debug.print(f"norm {norm}")
    return x / norm


def radial_energy(positions: jax.Array) -> jax.Array:
    squared = jnp.sum(positions ** 2, axis=-1)
    return jnp.sum(jnp.where(squared > 0, jnp.sqrt(squared), 0.0))


radial_forces = jax.grad(radial_energy)
