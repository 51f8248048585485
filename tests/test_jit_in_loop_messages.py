"""JAX501's message says what the jitted expression is: a function reached through a module is the
same object every time (only the wrapper is rebuilt), a bound method or factory result may not be."""
import textwrap

from jaxlint.api import lint_source
from jaxlint.model.settings import Settings

SOURCE = textwrap.dedent("""
    import jax
    import mylib.models as models
    from mylib.state import model


    def run(trained, xs):
        for x in xs:
            jax.jit(models.forward)(x)
            jax.jit(model.apply)(x)
            jax.jit(trained.apply)(x)
""")


def test_a_module_function_is_named_a_stable_function_and_a_method_a_possibly_fresh_one():
    found = {f.start.line: f.message for f in lint_source(SOURCE, "t.py", Settings(), enabled={"JAX501"})}
    assert sorted(found) == [9, 10, 11]
    assert found[9].startswith("`jax.jit` applied inside a loop: JAX reuses the compiled code")
    # `from … import model` may be an object: its `apply` may be a new bound method at every access
    for line in (10, 11):
        assert "a bound method `obj.method`" in found[line]
