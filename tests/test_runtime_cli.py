"""`jaxlint check --runtime` as a user runs it, on a small src-layout package with declared examples.

The package imports a sibling module relatively (so it must be imported as `pkg.model`), declares
example inputs in pyproject.toml and in `jaxlint_examples.py`, has a finding whose line the chosen
inputs do not reach (`inconclusive`, saying so), and one whose line the program's own jitted call
traces cleanly (its parameter is static in a way the static analysis does not read), which is
`not-reproduced`.
A notebook beside it is run as its joined code cells, one of which imports a package that is not
installed.
"""
from __future__ import annotations

import json
import os
import textwrap

import pytest
from click.testing import CliRunner

from jaxlint.frontends.cli import main

PYPROJECT = """\
[tool.jaxlint.runtime]
timeout = 60

[tool.jaxlint.runtime.examples]
"pkg.model:pick" = [{rows = "f32[3]"}, 1]
"""
MODEL = """\
import jax
import jax.numpy as jnp

from .util import SCALE


@jax.jit
def pick(table, index):
    row = table["rows"][index] * SCALE
    if row > 0:
        return row
    return -row


@jax.jit
def pick_undeclared(table, index):
    row = table["rows"][index] * SCALE
    if row > 0:
        return row
    return -row


@jax.jit
def only_for_long_inputs(x):
    if x.shape[0] > 5:
        if x.sum() > 0:
            return x
    return x


class Model:
    def __init__(self, scale):
        self.scale = scale

    def step(self, x):
        y = jnp.asarray(x) * self.scale
        y[0] = 0.0
        return y


OPTIONS = {"static_argnames": "n"}


def power(x, n):
    if n > 1:
        return x ** n
    return x


fast_power = jax.jit(power, **OPTIONS)
fast_power(jnp.ones(3), 3)
"""
EXAMPLES = """\
import jax.numpy as jnp

EXAMPLES = {
    "model.py:Model.step": lambda: {"init": [2.0], "args": [jnp.ones(3)]},
}
"""


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Exploring"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["%matplotlib inline\n", "import jax\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["@jax.jit\n", "def relu(x):\n", "    if x > 0:\n", "        return x\n", "    return -x\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["import not_an_installed_plotter as plotter\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["@jax.jit\n", "def shown(x):\n", "    plotter.show(x)\n", "    if x > 0:\n", "        return x\n",
                    "    return -x\n"]},
    ],
    "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"},
                 "language_info": {"name": "python"}},
    "nbformat": 4, "nbformat_minor": 5,
}


@pytest.fixture
def package(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "util.py").write_text("SCALE = 2.0\n", encoding="utf-8")
    (pkg / "model.py").write_text(MODEL, encoding="utf-8")
    (pkg / "jaxlint_examples.py").write_text(EXAMPLES, encoding="utf-8")
    (tmp_path / "explore.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    return tmp_path


@pytest.mark.runtime
def test_declared_examples_verdicts_json_and_dropping_refuted(package, run_cli):
    result = run_cli("check", "--runtime", "--no-cache", "--output-format", "json", ".", cwd=package)
    assert result.returncode == 1, result.stderr
    found = json.loads(result.stdout)
    notebook = [f for f in found if f["path"] == "explore.ipynb"]
    findings = {(f["line"], f["code"]): f for f in found if f["path"] != "explore.ipynb"}
    # A notebook's code cells run as one module (magics masked); the evidence names the cell. The
    # cell whose import fails is skipped: the function that needs it says which package to install.
    assert [(f["cell"], f["line"], f["code"], f["runtime"]["verdict"]) for f in notebook] == [
        (2, 3, "JAX201", "confirmed"), (4, 4, "JAX201", "inconclusive")]
    assert notebook[0]["runtime"]["evidence"].startswith("TracerBoolConversionError at cell 3 (counted from 1), line 3 (jax.jit trace")
    assert notebook[1]["runtime"]["evidence"] == (
        "needs `plotter`, from `not_an_installed_plotter`, which is not installed (ModuleNotFoundError at cell 4 "
        "(counted from 1), line 1): install `not_an_installed_plotter` to confirm this finding")
    assert "Runtime: install `not_an_installed_plotter` to confirm this finding.\n" in result.stderr
    assert "Runtime: explore.ipynb: cell 4 (counted from 1), line 1 raised ModuleNotFoundError: No module named " \
           "'not_an_installed_plotter' and was skipped; the rest of the notebook was still run.\n" in result.stderr
    for finding in findings.values():
        assert set(finding["runtime"]) == {"verdict", "evidence", "device"}
        assert finding["runtime"]["device"]
    # The probes cannot index a dict; the declared example can, and JAX raises at the flagged line.
    declared = findings[(10, "JAX201")]["runtime"]
    assert declared["verdict"] == "confirmed", declared
    assert declared["evidence"].startswith(
        "TracerBoolConversionError at line 10 (jax.jit trace; example from pyproject.toml")
    assert findings[(18, "JAX201")]["runtime"]["verdict"] == "inconclusive"
    # A method: the example in jaxlint_examples.py gives the constructor's and the call's arguments.
    method = findings[(37, "JAX401")]["runtime"]
    assert method["verdict"] == "confirmed" and "example from jaxlint_examples.py" in method["evidence"], method
    unreached = findings[(26, "JAX201")]["runtime"]
    assert unreached["verdict"] == "inconclusive" and unreached["evidence"].startswith(
        "line 26 was not reached: jax.jit trace with probes: x=f32[3] ran cleanly without it; declare example "
        "inputs for `only_for_long_inputs` that reach it"), unreached
    refuted = findings[(45, "JAX201")]["runtime"]
    assert refuted["verdict"] == "not-reproduced" and refuted["evidence"].startswith(
        "line 45 traced cleanly with jax.jit trace (inputs recorded from the call at model.py:51"), refuted
    assert "Runtime on " in result.stderr and "3 confirmed, 1 not reproduced, 3 inconclusive" in result.stderr

    dropped = run_cli("check", "--runtime", "--runtime-drop-refuted", "--no-cache", ".", cwd=package)
    assert dropped.returncode == 1
    lines = dropped.stdout.splitlines()
    assert len(lines) == 6 and not any(":45:" in line for line in lines)
    assert any(line.endswith("]") and "[confirmed: TracerBoolConversionError at line 10" in line for line in lines)
    assert "(1 not reproduced dropped)" in dropped.stderr
    # Nothing written into the user's tree by the workers (the static cache is off here).
    written = [os.path.join(d, name) for d, dirs, files in os.walk(package) for name in dirs + files]
    assert not [p for p in written if "__pycache__" in p or p.endswith(".pyc")]


def _invoke(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


@pytest.mark.parametrize("args, message", [
    (["--runtime", "--fix"], "cannot be combined with --fix or --diff"),
    (["--runtime", "--diff"], "cannot be combined with --fix or --diff"),
    (["--device", "cpu"], "only apply with --runtime"),
    (["--runtime-drop-refuted"], "only apply with --runtime"),
])
def test_runtime_usage_errors_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(textwrap.dedent("import jax\n"), encoding="utf-8")
    result = _invoke("m.py", *args)
    assert result.exit_code == 2
    assert message in result.stderr
