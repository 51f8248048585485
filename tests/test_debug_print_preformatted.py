"""JAX305's premise and fix, from JAX: text formatted by Python before `jax.debug.print` sees it holds
a tracer's description under jit, vmap and grad (a format spec raises); the fixed call prints the same
text as the f-string prints outside a trace, on every call; and a second fix changes nothing."""
import pytest

from jaxlint.engine.checker import check_source, enabled_rules
from jaxlint.engine.files import check_file
from jaxlint.model.settings import Settings

SOURCE = '''import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    loss = jnp.mean(x)
    jax.debug.print(f"loss {loss:.3f} {{braces}} mean={loss} scale={x.real}")
    jax.debug.print("first {:.2f} {last}".format(x[0], last=x[-1]), ordered=True)
    jax.debug.print(f"raw {loss!r}")
    return loss
'''
FIXED = '''import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    loss = jnp.mean(x)
    jax.debug.print("loss {loss:.3f} {{braces}} mean={loss} scale={real}", loss=loss, real=x.real)
    jax.debug.print("first {:.2f} {last}", x[0], last=x[-1], ordered=True)
    jax.debug.print(f"raw {loss!r}")
    return loss
'''


def fixed(tmp_path, source):
    target = tmp_path / "step.py"
    target.write_text(source)
    return check_file(str(target), Settings(), fix=True).fixed_text


def test_fix_passes_the_values_and_is_stable(tmp_path):
    text = fixed(tmp_path, SOURCE)
    assert text == FIXED
    settings = Settings()
    again = check_source(text, "step.py", settings, enabled_rules(settings, "step.py"))
    # what is left is the `!r` conversion, which has no exact rewrite
    assert [(f.code, f.start.line, f.fix is None) for f in again if f.code == "JAX305"] == [("JAX305", 10, True)]


@pytest.mark.parametrize("text", [
    'jax.debug.print(f"{loss:.3f} {x}")',  # `x` is a traced argument, maybe a pytree: formatted otherwise
    'jax.debug.print(f"{loss} {x.shape}")',  # a static field: an array once passed
    'jax.debug.print(f"{loss + 1}")',  # an expression has no name to pass it by
    'jax.debug.print(f"{loss}", loss)',  # the text is formatted again with other arguments
    'jax.debug.print("%s" % loss)',
])
def test_no_fix_where_the_text_would_change(text):
    source = f"import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    loss = jnp.mean(x)\n    {text}\n"
    settings = Settings()
    found = [f for f in check_source(source, "f.py", settings, enabled_rules(settings, "f.py")) if f.code == "JAX305"]
    assert [(f.start.line, f.fix) for f in found] == [(7, None)]


@pytest.mark.jax
def test_preformatted_text_holds_the_tracer_under_every_transform(capfd):
    import jax
    import jax.numpy as jnp

    jax.jit(lambda x: jax.debug.print(f"jit {x}"))(jnp.ones(2))
    jax.vmap(lambda x: jax.debug.print(f"vmap {x}"))(jnp.ones(2))
    jax.grad(lambda x: jax.debug.print("grad %s" % x) or x)(1.0)
    jax.effects_barrier()
    out = capfd.readouterr().out.splitlines()
    assert [line.split(" ", 1)[1].split("(")[0] for line in out] == ["JitTracer", "VmapTracer", "GradTracer"]
    with pytest.raises(TypeError):
        jax.jit(lambda x: jax.debug.print(f"{x:.3f}"))(jnp.float32(1.5))


@pytest.mark.jax
def test_fixed_code_prints_what_the_f_string_prints_outside_a_trace(capfd):
    import jax
    import jax.numpy as jnp

    namespace = {}
    exec(compile(FIXED, "fixed.py", "exec"), namespace)
    x = jnp.asarray([1.0, 2.0, 4.5])
    namespace["step"](x)
    jax.effects_barrier()
    loss = jnp.mean(x)
    expected = [f"loss {loss:.3f} {{braces}} mean={loss} scale={x.real}",
                "first {:.2f} {last}".format(x[0], last=x[-1])]
    printed = [line for line in capfd.readouterr().out.splitlines() if not line.startswith("raw ")]
    assert sorted(printed) == sorted(expected)  # unordered prints may come in any order
