"""JAX301's fix: the fixed code prints the runtime values on every call, and a second fix changes nothing."""
import os
import shutil

import pytest

from jaxlint.model.settings import Settings
from jaxlint.engine.checker import check_source, enabled_rules

from conftest import FIXTURES

SOURCE = FIXTURES / "fixes" / "print.py"
GOLDEN = FIXTURES / "fixes" / "print.fixed.py"


def fixed_text(tmp_path):
    from jaxlint.engine.files import check_file

    target = tmp_path / "print.py"
    shutil.copy(SOURCE, target)
    return check_file(str(target), Settings(), fix=True).fixed_text


def test_fix_matches_golden_and_is_stable(tmp_path):
    text = fixed_text(tmp_path)
    if os.environ.get("JAXLINT_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
    settings = Settings()
    again = check_source(text, "print.py", settings, enabled_rules(settings, "print.py"))
    assert [f for f in again if f.fix is not None] == []
    # What is left is the print that cannot be rewritten exactly.
    assert [(f.code, f.start.line) for f in again] == [("JAX301", 19)]


@pytest.mark.jax
def test_fixed_code_prints_values_on_every_call(tmp_path, capfd):
    import jax

    namespace = {}
    exec(compile(GOLDEN.read_text(), str(GOLDEN), "exec"), namespace)
    step, report = namespace["step"], namespace["report"]
    for value in (1.0, 2.0):
        assert float(step(jax.numpy.asarray(value))) == value * 2
        jax.effects_barrier()
    assert float(report(jax.numpy.asarray(0.5), 3)) == 3.5
    jax.effects_barrier()
    out = capfd.readouterr().out
    assert out.splitlines() == ["x = 1.0", "x = 2.0", "step 3: loss=0.50 {done}"]


@pytest.mark.jax
def test_original_prints_tracers_once(capfd):
    import jax

    namespace = {}
    exec(compile(SOURCE.read_text(), str(SOURCE), "exec"), namespace)
    step = namespace["step"]
    step(jax.numpy.asarray(1.0))
    step(jax.numpy.asarray(2.0))
    out = capfd.readouterr().out
    assert out.count("x =") == 1 and "Tracer" in out


def test_constant_print_gets_no_fix_and_says_it_runs_at_trace_time():
    from jaxlint.model.settings import Settings

    source = 'import jax\n\n@jax.jit\ndef f(x):\n    print("compiling f")\n    return x\n'
    settings = Settings()
    [finding] = check_source(source, "a.py", settings, enabled_rules(settings, "a.py"))
    assert finding.code == "JAX301" and finding.fix is None
    assert "once per compilation" in finding.message


STATIC_PRINTS = '''import functools
import jax


@functools.partial(jax.jit, static_argnums=1)
def f(x, n):
    print("shape", x.shape)
    print(f"{x.shape=} {x.dtype}")
    print("n =", n, len(x))
    rows = x.shape[0] * n
    print(rows)
    print("both", x.shape, x)
    return x
'''


def test_static_values_are_not_reported_and_a_traced_value_beside_them_is():
    """`print("shape", x.shape)` shows the values every call would show, once per compilation, as its
    author wants when watching shapes or recompiles: not reported. A print that also shows a traced
    value keeps the tracer message and its safe fix."""
    settings = Settings()
    findings = check_source(STATIC_PRINTS, "a.py", settings, enabled_rules(settings, "a.py"))
    by_line = {f.start.line: f for f in findings if f.code == "JAX301"}
    assert sorted(by_line) == [12]
    assert "shows tracers" in by_line[12].message
    assert by_line[12].fix is not None and by_line[12].fix.applicability.value == "safe"


@pytest.mark.jax
def test_static_print_runs_once_per_compilation(capfd):
    """What the message says, checked: the static print fires per compilation (a new shape), not per call."""
    import jax.numpy as jnp

    namespace = {}
    exec(compile(STATIC_PRINTS, "static_prints.py", "exec"), namespace)
    f = namespace["f"]
    for x in (jnp.ones(2), jnp.ones(2), jnp.ones(3)):
        f(x, 1)
    out = capfd.readouterr().out
    assert out.count("shape (") == 2 and "Traced" not in out.split("both")[0]


def test_more_static_values_identity_exceptions_and_comprehensions():
    source = '''import jax


@jax.jit
def f(x, m):
    dims = max([x[a].shape[-1] for a in range(2)])
    print("max_dim", dims)
    print(f"Inside: {m.left is m.right = }")
    print(f"mesh: {jax.sharding.get_abstract_mesh()}")
    try:
        if x > 0:
            pass
    except jax.errors.TracerBoolConversionError as e:
        print(f"error: {e}")
    print("value", m.left)
    return x
'''
    settings = Settings()
    found = {f.start.line: f for f in check_source(source, "a.py", settings, enabled_rules(settings, "a.py"))
             if f.code == "JAX301"}
    assert sorted(found) == [15]
    assert "shows tracers" in found[15].message  # a field of a traced argument: traced
