"""`not-reproduced` is a strong claim: made only when the flagged line ran under the transform the
finding names, with inputs that stand for the transformed call. The shapes that used to call a
real bug "not reproduced", each in a module of one `confirm()` run:

- an error the code catches itself (`try: x[0] = 1 / except TypeError:`), at module level and in
  a function: the exception is observed where it is raised, not where it escapes;
- a function called plainly first (`relu(1.0)`) and then jitted: the plain call's inputs do not
  settle a finding about the jitted one; the jitted call is what is replayed;
- a flagged line the inputs never reach, in a function or at module level: inconclusive, with
  what to do.
"""
from __future__ import annotations

import os
import textwrap

import pytest

from jaxlint.engine.files import check_file
from jaxlint.engine.registry import known_codes
from jaxlint.frontends.config import load_settings
from jaxlint.runtime import RuntimeOptions, confirm

MODULES = {
    "caught_at_import": """
        import jax.numpy as jnp

        x = jnp.zeros(3)
        try:
            x[0] = 1  # expect JAX401
        except TypeError:
            print("immutable!")
    """,
    "caught_in_function": """
        import jax.numpy as jnp


        def update(n):
            x = jnp.zeros(n)
            try:
                x[0] = 1  # expect JAX401
            except TypeError:
                pass
            return x


        update(3)
    """,
    "plain_then_jitted": """
        import jax
        import jax.numpy as jnp


        def relu(x):
            if x > 0:  # expect JAX201
                return x
            return 0.0


        print(relu(1.0))
        try:
            jax.jit(relu)(jnp.ones(()))
        except Exception as exc:
            print(type(exc).__name__)
    """,
    "plain_only": """
        import jax


        def relu(x):
            if x > 0:  # expect JAX201
                return x
            return 0.0


        fast_relu = jax.jit(relu)
        print(relu(1.0))
    """,
    "unreached": """
        import jax


        @jax.jit
        def long_only(x):
            if x.shape[0] > 5:
                if x.sum() > 0:  # expect JAX201
                    return x
            return x
    """,
    "unreached_at_import": """
        import jax.numpy as jnp

        x = jnp.zeros(3)
        if x.shape[0] > 5:
            x[0] = 1  # expect JAX401
    """,
}


@pytest.mark.runtime
def test_caught_errors_confirm_plain_calls_do_not_settle_and_unreached_lines_are_inconclusive(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxlint.runtime]\ntimeout = 60\n", encoding="utf-8")
    for name, text in MODULES.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    settings = load_settings(tmp_path, known_codes())
    findings = [f for path in sorted(tmp_path.glob("*.py")) for f in check_file(str(path), settings).findings
                if f.code in ("JAX201", "JAX401")]
    expected = {(os.path.basename(f.path)[:-3], f.start.line) for f in findings}
    for name, text in MODULES.items():
        lines = textwrap.dedent(text).lstrip().splitlines()
        flagged = [n for n, line in enumerate(lines, 1) if "# expect" in line]
        assert {(name, n) for n in flagged} <= expected, (name, flagged, expected)
    checked = confirm(findings, settings, RuntimeOptions(jobs=2))
    verdicts = {os.path.basename(f.path)[:-3]: f.runtime for f in checked}

    caught = verdicts["caught_at_import"]
    assert caught["verdict"] == "confirmed", caught
    assert caught["evidence"] == "TypeError at line 5, caught by the code, while importing the module"
    inside = verdicts["caught_in_function"]
    assert inside["verdict"] == "confirmed" and "TypeError at line 7, caught by the code (a plain call" \
        in inside["evidence"], inside

    jitted = verdicts["plain_then_jitted"]
    assert jitted["verdict"] == "confirmed", jitted
    assert "TracerBoolConversionError at line 6 (jax.jit trace; inputs recorded from the call at " \
           "plain_then_jitted.py:13: x=f32[])" in jitted["evidence"], jitted
    plain = verdicts["plain_only"]
    assert plain["verdict"] == "confirmed" and "jax.jit trace" in plain["evidence"], plain

    for name, line in (("unreached", 7), ("unreached_at_import", 5)):
        runtime = verdicts[name]
        assert runtime["verdict"] == "inconclusive", (name, runtime)
        assert f"line {line} " in runtime["evidence"] and ("not reached" in runtime["evidence"]
                                                           or "did not run" in runtime["evidence"]), runtime
    assert "declare example inputs for `long_only` that reach it" in verdicts["unreached"]["evidence"]


@pytest.mark.jax
def test_a_parameter_annotated_with_a_dataclass_gets_one_built_from_its_fields():
    import dataclasses
    from typing import Callable, NamedTuple, Optional

    import jax

    from jaxlint.runtime.subject import Inputs
    from jaxlint.runtime.structured import structured_inputs

    class Limits(NamedTuple):
        low: float
        high: float = 2.0

    @dataclasses.dataclass
    class State:
        step: int
        params: dict
        apply_fn: Callable
        limits: Limits
        rate: jax.Array = None  # filled in by the program: built
        note: Optional[str] = None  # optional: kept
        frozen: int = 0

    params = [{"name": "state", "kind": "positional", "default": None, "annotation": "State"},
              {"name": "x", "kind": "positional", "default": None, "annotation": None}]
    probes = Inputs(lambda: ((1, 2), {}), "probes: state=f32[3], x=f32[3]")
    # the checked module's names: what its annotations are resolved against
    namespace = {"State": State, "Limits": Limits, "Callable": Callable, "Optional": Optional, "jax": jax}
    inputs = structured_inputs(params, probes, namespace)
    assert inputs.description == "annotations: state=State(...), x=f32[3]"
    (state, x), kwargs = inputs.make()
    assert x == 2 and kwargs == {}
    assert state.step == 3 and state.frozen == 0 and state.note is None and callable(state.apply_fn)
    assert state.limits == Limits(1.0, 2.0) and state.rate.shape == () and set(state.params) == {"w"}
    assert structured_inputs(params[1:], probes, {}) is None


#: fixture -> its true findings that used to come back `not-reproduced`, and why they cannot be
#: refuted with the inputs runtime mode has
WRONGLY_REFUTED = {
    "JAX101_linen_init.py": 21,  # the key's first use is `net.init`, which JAX's checker does not count
    "JAX302_globals.py": 41,  # uniform probes hide the temperature
    "JAX302_fresh_traces.py": 66,  # traced again in the run: the stale value was not compared
    "JAX303_mutation.py": 58,  # clearing an empty cache shows nothing
}


@pytest.mark.runtime
def test_true_findings_that_the_inputs_cannot_settle_are_inconclusive_never_refuted():
    from conftest import FIXTURES, expectations
    from jaxlint.model.settings import Settings

    paths = [FIXTURES / name for name in WRONGLY_REFUTED]
    findings = [f for path in paths for f in check_file(str(path), Settings()).findings]
    checked = confirm(findings, Settings(), RuntimeOptions(jobs=2))
    for path in paths:
        expected = set(expectations(path.read_text(encoding="utf-8")))
        mine = [f for f in checked if f.path == str(path) and f.runtime and (f.start.line, f.code) in expected]
        assert mine, path.name
        refuted = [(f.start.line, f.code, f.runtime["evidence"]) for f in mine if f.runtime["verdict"] == "not-reproduced"]
        assert not refuted, (path.name, refuted)
        (runtime,) = [f.runtime for f in mine if f.start.line == WRONGLY_REFUTED[path.name]]
        assert runtime["verdict"] == "inconclusive", (path.name, runtime)


@pytest.mark.jax
def test_only_inputs_a_caller_passes_refute_a_finding(tmp_path):
    """Guessed inputs (annotations, probes) that trace the flagged line cleanly leave the finding
    inconclusive; the same run with a caller's inputs (an example, a recorded call, a call site's
    literals) refutes it."""
    import importlib.util

    import jax.numpy as jnp

    from jaxlint.runtime import errors
    from jaxlint.runtime.subject import Inputs, Subject

    path = tmp_path / "clean.py"
    path.write_text("def halve(x):\n    y = x / 2\n    return y\n", encoding="utf-8")
    spec = importlib.util.spec_from_file_location("clean_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def subject(inputs: Inputs) -> Subject:
        return Subject(code="JAX201", line=2, path=str(path), message="", module=module, function=module.halve,
                       python_function=module.halve, qualname="halve", inputs=inputs, trace_mode="jit",
                       end_line=2, function_lines=(1, 3), candidates=[inputs], extra={"modes": ["jit"]})

    raises = [("ConcretizationTypeError", None)]
    probes = Inputs(lambda: ((jnp.ones(3),), {}), "probes: x=f32[3]")
    guessed = errors.confirm(subject(probes), raises)
    assert guessed.verdict == "inconclusive", guessed
    assert guessed.evidence == ("line 2 traced cleanly with jax.jit trace (probes: x=f32[3]), but these inputs are "
                                "guesses: declare example inputs for `halve`, or call it from the module, its "
                                "`__main__` block or a test, to settle it")
    example = Inputs(lambda: ((jnp.ones(3),), {}), "example from pyproject.toml: (f32[3])", from_caller=True)
    refuted = errors.confirm(subject(example), raises)
    assert refuted.verdict == "not-reproduced", refuted
    assert refuted.evidence == "line 2 traced cleanly with jax.jit trace (example from pyproject.toml: (f32[3]))"
