import jax.numpy as jnp


def clipped_loss(pred, target, clip):
    err = pred - target
    if jnp.abs(err).max() > clip:  # expect: JAX201
        err = jnp.clip(err, -clip, clip)
    return jnp.mean(err ** 2)


def smooth_loss(pred, target, clip):
    err = pred - target
    err = jnp.where(jnp.abs(err) > clip, jnp.clip(err, -clip, clip), err)
    return jnp.mean(err ** 2)
