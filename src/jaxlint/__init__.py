"""jaxlint: a static analyzer for JAX code."""

__version__ = "0.1.0"
