"""JAX206's premise, from JAX: a tracer is an instance of `jax.Array` and `jnp.ndarray`, of no NumPy
class and no Python number type, and its type is never a JAX array class itself, under every
transform that traces (jit, a lax body, vmap, grad); a NumPy array or a Python float given to
`jax.jit` arrives as a tracer."""
import importlib

import pytest

from jaxlint.rules.type_check_on_traced import ARRAY_CLASSES, NUMPY_CLASSES, PYTHON_NUMBERS

pytestmark = pytest.mark.jax


def resolved(qualified):
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


def seen_by(transform, argument):
    """What `isinstance` and `type` say of the traced argument under `transform`."""
    import jax
    import jax.numpy as jnp

    seen = {}

    def probe(x):
        seen["instance"] = {name: isinstance(x, resolved(name)) for name in NUMPY_CLASSES | PYTHON_NUMBERS | ARRAY_CLASSES}
        seen["type"] = {name: type(x) is resolved(name) for name in ARRAY_CLASSES | NUMPY_CLASSES | PYTHON_NUMBERS}
        return x * 2.0

    if transform == "jit":
        jax.jit(probe)(argument)
    elif transform == "vmap":
        jax.vmap(probe)(jnp.atleast_1d(jnp.asarray(argument)))
    elif transform == "grad":
        jax.grad(lambda x: probe(x).sum())(jnp.asarray(argument, dtype=jnp.float32))
    else:
        jax.lax.fori_loop(0, 2, lambda i, x: probe(x), jnp.asarray(argument, dtype=jnp.float32))
    return seen


@pytest.mark.parametrize("transform", ["jit", "vmap", "grad", "fori_loop"])
@pytest.mark.parametrize("kind", ["numpy array", "python float", "jax array"])
def test_a_tracer_is_a_jax_array_and_nothing_else_the_rule_names(transform, kind):
    import jax.numpy as jnp
    import numpy as np

    argument = {"numpy array": np.ones(3, dtype=np.float32), "python float": 1.5, "jax array": jnp.ones(3)}[kind]
    seen = seen_by(transform, argument)
    assert {name for name, holds in seen["instance"].items() if holds} == set(ARRAY_CLASSES)
    assert not any(seen["type"].values())


def test_outside_a_trace_the_same_checks_hold_for_numpy_data_and_never_for_type_is_jax_array():
    import jax.numpy as jnp
    import numpy as np

    assert isinstance(np.ones(3), resolved("numpy.ndarray"))
    assert isinstance(1.5, resolved("builtins.float")) and isinstance(np.float32(1), resolved("numpy.generic"))
    assert not any(type(jnp.ones(3)) is resolved(name) for name in ARRAY_CLASSES)
