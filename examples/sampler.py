"""Markov chain Monte Carlo for a two-component Gaussian mixture: Metropolis and Langevin steps.

Random numbers in JAX come from explicit keys, and most mistakes here do not raise: they give
samples that look plausible and are wrong. `jaxlint check examples/sampler.py` reports

- one key used for both the proposal and the acceptance test, and one key reused on every step
  of the chain (JAX101): correlated draws, the same noise every step;
- a Python `if` on the traced acceptance test (JAX201): raises under `jax.jit`;
- one key broadcast to every chain of a `vmap` (JAX104): all chains get the same noise;
- a 500-step Python loop under `jax.jit` (JAX205): unrolled, so it compiles slowly.

`clean.py` has versions of each that work.
"""
import jax
import jax.numpy as jnp


def log_density(x: jax.Array) -> jax.Array:
    return jnp.sum(jnp.logaddexp(-0.5 * (x - 2.0) ** 2, -0.5 * (x + 2.0) ** 2))


@jax.jit
def metropolis_step(key: jax.Array, x: jax.Array) -> jax.Array:
    proposal = x + 0.5 * jax.random.normal(key, x.shape)
    log_u = jnp.log(jax.random.uniform(key))
    return jnp.where(log_u < log_density(proposal) - log_density(x), proposal, x)


def run_chain(key: jax.Array, x: jax.Array, num_steps: int = 100) -> jax.Array:
    samples = []
    for _ in range(num_steps):
        x = metropolis_step(key, x)
        samples.append(x)
    return jnp.stack(samples)


@jax.jit
def accept(key: jax.Array, x: jax.Array, proposal: jax.Array) -> jax.Array:
    if jnp.log(jax.random.uniform(key)) < log_density(proposal) - log_density(x):
        return proposal
    return x


def langevin_step(key: jax.Array, x: jax.Array, step_size: float = 0.01) -> jax.Array:
    noise = jax.random.normal(key, x.shape)
    return x + step_size * jax.grad(log_density)(x) + jnp.sqrt(2.0 * step_size) * noise


def langevin_chains(key: jax.Array, xs: jax.Array) -> jax.Array:
    return jax.vmap(langevin_step, in_axes=(None, 0))(key, xs)


@jax.jit
def langevin_chain(key: jax.Array, x: jax.Array) -> jax.Array:
    for _ in range(500):
        key, subkey = jax.random.split(key)
        x = langevin_step(subkey, x)
    return x
