"""What a test tells inside its branches: a value checked not to be a tracer is concrete there."""
from __future__ import annotations

import pytest

from jaxlint.engine.checker import check_source, enabled_rules
from jaxlint.model.settings import Settings


def codes(source: str) -> list[tuple[int, str]]:
    settings = Settings()
    return [(f.start.line, f.code) for f in check_source(source, "t.py", settings, enabled_rules(settings, "t.py"))]


GUARDED = '''
import jax
import numpy as np
from jax.core import Tracer


@jax.jit
def resolve(pred, x):
    if not isinstance(pred, Tracer):
        if pred.item():
            return x
    shape = x.shape if hasattr(x, "shape") else np.asarray(x).shape
    flat, treedef = jax.tree_util.tree_flatten(x)
    if treedef != jax.tree_util.tree_structure(x) or x.__class__.__name__ == "Array":
        return x
    return shape
'''

UNGUARDED = '''
import jax
import numpy as np
from jax.core import Tracer


@jax.jit
def resolve(pred, x):
    if isinstance(pred, Tracer):
        if pred.item():
            return x
    shape = np.asarray(x).shape if hasattr(x, "shape") else x.shape
    return shape
'''


def test_branches_where_a_value_is_known_not_to_be_a_tracer_are_not_reported():
    assert codes(GUARDED) == []


def test_the_branches_where_it_may_be_one_still_are():
    assert codes(UNGUARDED) == [(10, "JAX203"), (12, "JAX203")]


@pytest.mark.jax
def test_jax_agrees_that_the_guarded_function_traces():
    import jax.numpy as jnp

    namespace: dict = {}
    exec(compile(GUARDED, "guarded.py", "exec"), namespace)
    namespace["resolve"](jnp.array(True), jnp.ones(3))
    namespace["resolve"](True, jnp.ones(3))
