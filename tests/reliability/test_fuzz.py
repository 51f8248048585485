"""Fuzzing the whole analysis and `--fix`: generic programs from hypothesmith, JAX-shaped programs
and notebooks from `fuzz_programs`, each put through `fuzz_checks` (no crash, JAX000 only for what
CPython rejects, positions inside the file, fixes that compile and are idempotent).

Bounded and reproducible: a fixed number of examples, derandomized, so every run (and CI) tries the
same programs, in about a minute all together. The tests are marked `fuzz`: the full suite runs
them, `pytest -m fuzz` runs them alone, and a marker selection that does not name `fuzz` (the
static run) leaves them out (tests/conftest.py). `scripts/fuzz.py` runs the same checks for as
long as asked, in parallel, with fresh seeds.

Nesting stays shallow: hypothesmith's programs are short, and deep nesting is tested on its own.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps caches (and, when a test fails, patches) in `.hypothesis/` of the current
# directory, the checkout: elsewhere. Before hypothesmith is imported, which fills one.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "jaxlint-hypothesis")

import hypothesmith  # noqa: E402

from reliability.fuzz_checks import (SETTINGS_VARIANTS, compiles, notebook_violations,  # noqa: E402
                                     python_violations, with_jax_import)
from reliability.fuzz_programs import jax_notebooks, jax_program_bytes, spliced_program_bytes  # noqa: E402

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[2]


def bounded(examples: int):
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much, HealthCheck.large_base_example])


def _report(violations, program) -> str:
    text = program if isinstance(program, str) else program.decode("utf-8", "replace")
    return "\n".join(map(str, violations)) + "\n--- program ---\n" + text


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # hypothesmith compiles what it draws
@bounded(150)
@given(hypothesmith.from_grammar())
def test_programs_from_the_grammar(source):
    program = with_jax_import(source)
    assume(program is not None)
    violations = python_violations(program.encode("utf-8"))
    assert not violations, _report(violations, program)


@bounded(60)
@given(hypothesmith.from_node())
def test_programs_from_libcst_nodes(source):
    # libcst writes code that CPython may reject (`return` at module level): the analysis must
    # hold there too, and must not call it unparsable when CPython compiles it
    program = with_jax_import(source)
    assume(program is not None)
    violations = python_violations(program.encode("utf-8"))
    assert not violations, _report(violations, program)


@bounded(200)
@given(jax_program_bytes(), st.sampled_from(SETTINGS_VARIANTS))
def test_jax_shaped_programs(data, options):
    assert compiles(data), "the generator drew a program CPython rejects:\n" + data.decode("utf-8", "replace")
    violations = python_violations(data, settings=options)
    assert not violations, _report(violations, data)


@bounded(150)
@given(spliced_program_bytes(), st.sampled_from(SETTINGS_VARIANTS))
def test_programs_spliced_from_the_fixtures(data, options):
    assert compiles(data), "the splicing made a program CPython rejects:\n" + data.decode("utf-8", "replace")
    violations = python_violations(data, settings=options)
    assert not violations, _report(violations, data)


@bounded(40)
@given(jax_notebooks(), st.sampled_from(SETTINGS_VARIANTS))
def test_jax_shaped_notebooks(text, options):
    violations = notebook_violations(text, settings=options)
    assert not violations, _report(violations, text)


def test_a_static_selection_leaves_the_fuzz_tests_out(tmp_path):
    def collected(*marker_selection):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
        run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                              *marker_selection, str(Path(__file__))], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=120)
        return [line for line in run.stdout.splitlines() if "::" in line], run

    static, run = collected("-m", "not jax and not runtime")
    assert static == [] and "deselected" in run.stdout, run.stdout + run.stderr
    alone, run = collected("-m", "fuzz")
    assert any(line.endswith("::test_jax_shaped_programs") for line in alone), run.stdout + run.stderr
