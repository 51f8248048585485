"""What jaxlint knows about JAX, without rules: transforms, tracing, value kinds, keys, dispatch."""
