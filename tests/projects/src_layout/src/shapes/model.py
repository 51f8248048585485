import jax.numpy as jnp


class Scale:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, x):
        scaled = x * self.factor
        if scaled.max() > 1.0:  # expect: JAX201
            return scaled / scaled.max()
        return scaled

    def mean_value(self, x):
        return float(x.mean())  # expect: JAX203

    def squashed(self, x):
        return jnp.tanh(x * self.factor)
