"""JAX501 reports a jit in a loop only where the jitted expression may be a new function object each
iteration: a function reached through a module, or a name the loop does not rebind, is the same object
every time (JAX finds its compiled code again); a bound method or a factory result may not be."""
import textwrap

from jaxlint.api import lint_source
from jaxlint.model.settings import Settings

SOURCE = textwrap.dedent("""
    import jax
    import mylib.models as models
    from mylib.state import model, make_step


    def local(x):
        return x + 1


    def run(trained, xs):
        for x in xs:
            jax.jit(models.forward)(x)
            jax.jit(model.apply)(x)
            jax.jit(trained.apply)(x)
            jax.jit(local)(x)
            step = make_step()
            jax.jit(step)(x)
""")


def test_a_stable_function_is_not_reported_a_method_or_a_name_bound_in_the_loop_is():
    found = {f.start.line: f.message for f in lint_source(SOURCE, "t.py", Settings(), enabled={"JAX501"})}
    # line 13: a module's function; line 16: a module-level function of the file: one object, one trace
    assert sorted(found) == [14, 15, 18]
    # `from … import model` may be an object: its `apply` may be a new bound method at every access
    for line in (14, 15, 18):
        assert "a bound method `obj.method`" in found[line]
