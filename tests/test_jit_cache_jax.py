"""JAX501's premise against JAX itself: JAX keys the trace and compile caches of `jax.jit` on the
function object (and the static arguments), not on the wrapper. Re-wrapping the same function in a loop
finds the compiled code again; wrapping a new object (a lambda, a partial, a bound method, which is a new
object at every access) traces on every iteration."""
import functools
import types

import pytest

from jaxlint.api import lint_source
from jaxlint.model.settings import Settings

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def traces_over_three_iterations(wrap):
    """How many times the function's body ran while `wrap()` was jitted and called in a 3-iteration loop."""
    traced = []

    def body(x):
        traced.append(None)
        return x * 2

    x = jnp.ones(3)
    for _ in range(3):
        jax.jit(wrap(body))(x)
    return len(traced)


def test_rewrapping_the_same_function_traces_once():
    assert traces_over_three_iterations(lambda body: body) == 1


def test_a_module_attribute_is_the_same_function_every_time():
    module = types.ModuleType("numerics")
    assert traces_over_three_iterations(lambda body: setattr(module, "f", body) or module.f) == 1


def test_the_same_static_arguments_find_the_cache_too():
    traced = []

    def scale(x, k):
        traced.append(None)
        return x * k

    for _ in range(3):
        functools.partial(jax.jit, static_argnums=1)(scale)(jnp.ones(3), 2)
    assert len(traced) == 1


@pytest.mark.parametrize("fresh", [
    pytest.param(lambda body: (lambda x: body(x)), id="lambda"),
    pytest.param(lambda body: functools.partial(body), id="partial"),
])
def test_a_new_function_object_traces_every_iteration(fresh):
    assert traces_over_three_iterations(fresh) == 3


def test_a_bound_method_traces_every_iteration_even_of_the_same_object():
    traced = []

    class Model:
        def apply(self, x):
            traced.append(None)
            return x * 3

    model = Model()
    for _ in range(3):
        jax.jit(model.apply)(jnp.ones(3))
    assert len(traced) == 3


def test_jaxlint_reports_the_fresh_objects_and_not_the_stable_ones():
    source = (
        "import jax\nimport numerics\n\n\ndef f(x):\n    return x\n\n\n"
        "def run(model, xs):\n"
        "    for x in xs:\n"
        "        jax.jit(f)(x)\n"
        "        jax.jit(numerics.f)(x)\n"
        "        jax.jit(lambda v: f(v))(x)\n"
        "        jax.jit(model.apply)(x)\n")
    lines = sorted(f.start.line for f in lint_source(source, "t.py", Settings(), enabled={"JAX501"}))
    assert lines == [13, 14]
