"""Dataclass pytrees used by the training steps of another module."""
import dataclasses

import jax


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Schedule:
    rate: jax.Array
    warmup: int = dataclasses.field(default=2, metadata=dict(static=True))


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Window(Schedule):
    width: jax.Array = None
