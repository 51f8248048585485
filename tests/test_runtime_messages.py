"""Every inconclusive verdict says what to do in one line, and the summary stays short.

Fast tests of the pieces (the planner, the install line, the notes, the sandbox's report); the
ones marked `runtime` start JAX: a time limit names the line it reached and the setting, a
`--device` that is not there is one error before anything runs.
"""
from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from jaxlint.engine.files import check_file
from jaxlint.frontends.cli import main
from jaxlint.model.settings import Settings
from jaxlint.runtime import isolation_notes, note_lines
from jaxlint.runtime import sandbox
from jaxlint.runtime.missing import install_lines, needs_package
from jaxlint.runtime.planner import plan_module

CELLS = [
    ["import jax\n"],
    ["@jax.jit\n", "def relu(x):\n", "    if x > 0:\n", "        return x\n", "    return -x\n"],
    ["relu(1.0)\n"],
]


def _notebook(cells: list[list[str]]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": source} for source in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_a_notebook_cell_that_does_not_parse_is_named_and_left_out_and_the_others_run(tmp_path):
    good = tmp_path / "good.ipynb"
    good.write_text(_notebook(CELLS), encoding="utf-8")
    findings = [f for f in check_file(str(good), Settings()).findings if f.code == "JAX201"]
    assert len(findings) == 1
    broken = tmp_path / "broken.ipynb"
    broken.write_text(_notebook([*CELLS, ["data = <your data here>\n"]]), encoding="utf-8")
    plan = plan_module(str(broken), list(enumerate(findings)), Settings(), {}, ())
    assert plan.reason is None and plan.payload is not None
    assert plan.unparsed == [("cell 4 (counted from 1), line 1", "SyntaxError: invalid syntax")]
    assert "<your data here>" not in plan.payload["source"]
    assert plan.payload["source"].count("\n") == plan.notebook.text.count("\n")

    module = tmp_path / "broken.py"
    module.write_text("import jax\n\n\ndef f(x:\n    return x\n", encoding="utf-8")
    plan = plan_module(str(module), list(enumerate(findings)), Settings(), {}, ())
    assert plan.reason.startswith("the module does not parse (line 4") and plan.reason.endswith(
        "fix it to check this finding"), plan.reason


def test_the_install_line_names_the_distribution_where_it_differs_from_the_import():
    evidence = [needs_package("absl", "flags", "ModuleNotFoundError at line 3"),
                needs_package("absl", "absl", "ModuleNotFoundError at line 4"),
                needs_package("not_a_known_package", "not_a_known_package", "ModuleNotFoundError at line 5")]
    assert evidence[0].endswith("install `absl-py` (import name `absl`) to confirm this finding")
    assert evidence[2].endswith("install `not_a_known_package` to confirm this finding")
    assert install_lines(evidence) == ["install `absl-py` (import name `absl`) to confirm these 2 findings",
                                       "install `not_a_known_package` to confirm this finding"]


def test_skipped_statements_are_summarised_unless_verbose():
    skipped = [f"t.ipynb: cell {n}, line 1 raised NameError: x and was skipped; the rest of the notebook was "
               f"still run" for n in range(1, 96)]
    notes = ["the checked code could reach the network (...)", *skipped]
    short = note_lines(notes)
    assert short[:4] == notes[:4] and len(short) == 5
    assert short[-1] == ("95 top-level statements raised and were skipped in all (92 more than the 3 above; "
                         "`--verbose` lists them)")
    assert note_lines(notes, verbose=True) == notes
    assert note_lines(notes[:3]) == notes[:3]
    credentials = ("environment variables that look like credentials were left out of the checked code's "
                   "environment (GITHUB_TOKEN); `pass-env` in [tool.jaxlint.runtime] keeps the ones it needs")
    assert note_lines([*notes[:3], credentials]) == notes[:3]
    assert note_lines([*notes[:3], credentials], verbose=True)[-1] == credentials


def test_namespaces_the_kernel_refuses_are_reported_and_the_run_goes_on(monkeypatch):
    class Refusing:
        def unshare(self, flags):
            return -1

    monkeypatch.setattr(sandbox.ctypes, "CDLL", lambda *a, **k: Refusing())
    monkeypatch.setattr(sandbox.ctypes, "get_errno", lambda: 1)
    monkeypatch.setattr(sandbox.sys, "platform", "linux")
    result = sandbox.isolate(1024, network=False)
    assert not result.network_cut and not result.shm_private
    assert result.missing == ["network and /dev/shm: the kernel refused a namespace (Operation not permitted)"]
    (note,) = isolation_notes(result.missing)
    assert note.startswith("the checked code could reach the network and the machine's /dev/shm "
                           "(the kernel refused a namespace (Operation not permitted)); run `--runtime` on code")
    allowed = sandbox.isolate(1024, network=True)
    assert allowed.missing == ["/dev/shm: the kernel refused a namespace (Operation not permitted)"]
    assert isolation_notes(allowed.missing)[0].startswith("the checked code could reach the machine's /dev/shm")


@pytest.mark.runtime
def test_a_missing_device_is_one_error_before_anything_runs(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(textwrap.dedent('''\
        import jax


        @jax.jit
        def relu(x):
            if x > 0:
                return x
            return -x
    '''), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--runtime", "--device", "tpu", "--no-cache", "m.py"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("jaxlint: error: --device tpu: JAX finds no tpu device here ("), lines
    assert lines[0].endswith("leave out --device to run on JAX's default backend")


@pytest.mark.runtime
def test_a_time_limit_names_the_line_it_reached_and_the_setting(tmp_path):
    from jaxlint.engine.registry import known_codes
    from jaxlint.frontends.config import load_settings
    from jaxlint.runtime import RuntimeOptions, confirm

    (tmp_path / "pyproject.toml").write_text("[tool.jaxlint.runtime]\ntimeout = 5\n", encoding="utf-8")
    (tmp_path / "slow.py").write_text(textwrap.dedent('''\
        import time

        import jax


        def load():
            while True:
                time.sleep(0.01)


        load()


        @jax.jit
        def relu(x):
            if x > 0:
                return x
            return -x
    '''), encoding="utf-8")
    settings = load_settings(tmp_path, known_codes())
    findings = check_file(str(tmp_path / "slow.py"), settings).findings
    (checked,) = confirm(findings, settings, RuntimeOptions())
    assert checked.runtime["evidence"] == ("time limit (5 s) reached at line 8 while importing the module; raise "
                                           "`timeout` in [tool.jaxlint.runtime] to let it finish"), checked.runtime
