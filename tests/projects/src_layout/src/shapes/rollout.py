"""Loops bounded by the settings of another module: the field's default is the trip count."""
import jax
import jax.numpy as jnp

from .settings import SETTINGS, RunSettings

short = RunSettings(rollout_steps=10)


@jax.jit
def rollout(x):
    for _ in range(SETTINGS.rollout_steps):  # expect: JAX205
        x = x + 0.01 * jnp.sin(x)
    return x


@jax.jit
def warm_up(x):
    for _ in range(short.rollout_steps):  # set where it is made: not the default
        x = jnp.tanh(x)
    for _ in range(RunSettings().warmup_steps):  # the default, below the threshold
        x = jnp.tanh(x)
    return x
