"""Runtime mode imports user code in worker processes: hostile modules cost their own verdicts only.

Each module below does something at import (or while traced) that would take down or hang a
linter that imported it itself. Each must come back `inconclusive` with the reason, within the
time limit, while the well-behaved module checked in the same run is still confirmed and nothing
is written into the user's tree. One `confirm()` run covers every module.
"""
from __future__ import annotations

import os
import re
import textwrap
import time

import pytest

from jaxlint.frontends.config import load_settings
from jaxlint.engine.files import check_file
from jaxlint.engine.registry import known_codes
from jaxlint.runtime import RuntimeOptions, confirm

TIMEOUT = 8
FLAGGED = '''

@jax.jit
def relu(x):
    if x > 0:
        return x
    return -x
'''
#: module name -> (what it does at import, what the verdict's evidence must say)
HOSTILE = {
    "exits": ("import sys\nsys.exit(3)", "the module exited with status 3 (sys.exit) at line 3 while being imported"),
    # the line the loop was on (its `while` or its body), and the setting to raise
    "loops": ("while True:\n    pass", f"time limit ({TIMEOUT} s) reached at line "),
    "segfaults": ("import ctypes\nctypes.string_at(0)", "crashed: SIGSEGV (segmentation fault) at line 3"),
    "allocates": ("hoard = []\nwhile True:\n    hoard.append(bytearray(2 ** 30))",
                  "MemoryError at line 4 (memory limit 1024 MiB)"),
    "quits": ("import os\nos._exit(0)", "the module exited with status 0 (os._exit) at line 3 while being imported"),
}
#: module name -> a top-level statement that fails: skipped, the function after it is still checked
SKIPPED = {
    "raises": ("raise RuntimeError('boom')", "line 2 raised RuntimeError: boom and was skipped"),
    "needs_missing_package": ("import not_an_installed_package",
                              "line 2 raised ModuleNotFoundError: No module named 'not_an_installed_package'"),
    "reads_stdin": ("import sys\nassert sys.stdin.read() == 'data'", "line 3 raised AssertionError"),
}
HANGS_WHILE_TRACED = '''\
import jax


@jax.jit
def stuck(x):
    while True:
        pass
    if x > 0:
        return x
    return -x


@jax.jit
def fine(x):
    if x > 0:
        return x
    return -x
'''


@pytest.mark.runtime
def test_hostile_modules_are_inconclusive_and_the_others_still_confirmed(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.jaxlint.runtime]\ntimeout = {TIMEOUT}\nmemory-limit = 1024\n", encoding="utf-8")
    for name, (body, _) in {**HOSTILE, **SKIPPED}.items():
        (tmp_path / f"{name}.py").write_text(f"import jax\n{body}\n{FLAGGED}", encoding="utf-8")
    (tmp_path / "good.py").write_text(f"import jax\n{FLAGGED}", encoding="utf-8")
    (tmp_path / "hangs.py").write_text(HANGS_WHILE_TRACED, encoding="utf-8")
    before = sorted(os.listdir(tmp_path))
    settings = load_settings(tmp_path, known_codes())
    paths = sorted(tmp_path.glob("*.py"))
    findings = [f for path in paths for f in check_file(str(path), settings).findings]
    assert len(findings) == len(HOSTILE) + len(SKIPPED) + 3 and {f.code for f in findings} == {"JAX201"}

    started = time.monotonic()
    notes: list[str] = []
    checked = confirm(findings, settings, RuntimeOptions(jobs=4), notes=notes)
    elapsed = time.monotonic() - started

    verdicts = {(os.path.basename(f.path)[:-3], f.start.line): f.runtime for f in checked}
    for name, (_, reason) in HOSTILE.items():
        (runtime,) = [v for (module, _), v in verdicts.items() if module == name]
        assert runtime["verdict"] == "inconclusive", (name, runtime)
        assert reason in runtime["evidence"], (name, runtime)
    assert verdicts[("good", 6)]["verdict"] == "confirmed"
    # A failing top-level statement is skipped and reported; the function after it is still checked.
    for name, (_, note) in SKIPPED.items():
        (runtime,) = [v for (module, _), v in verdicts.items() if module == name]
        assert runtime["verdict"] == "confirmed", (name, runtime)
        assert any(n.startswith(str(tmp_path / f"{name}.py")) and note in n for n in notes), (name, notes)
    # A hang while tracing costs that finding; a fresh worker checks the next one.
    hang = verdicts[("hangs", 8)]
    assert hang["verdict"] == "inconclusive" and re.fullmatch(
        rf"time limit \({TIMEOUT} s\) reached at line [67] while checking this finding; raise `timeout` in "
        r"\[tool\.jaxlint\.runtime\] to let it finish", hang["evidence"]), hang
    loops = [v for (module, _), v in verdicts.items() if module == "loops"][0]
    assert re.search(r"at line [23] while importing the module; raise `timeout`", loops["evidence"]), loops
    assert verdicts[("hangs", 15)]["verdict"] == "confirmed"
    # Two time limits at most in a row (the hang in `loops` overlaps them), plus the other modules.
    assert elapsed < 3 * TIMEOUT + 30
    # Nothing written into the user's tree: no bytecode, no core dump, no scratch files.
    assert sorted(os.listdir(tmp_path)) == before


def test_segfault_reason_names_the_line_from_faulthandler(tmp_path):
    """The crash line comes from the dump faulthandler writes to the worker's log."""
    from jaxlint.runtime.launcher import _crash_line

    log = textwrap.dedent(f"""\
        Fatal Python error: Segmentation fault

        Current thread 0x00007f (most recent call first):
          File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
          File "{tmp_path}/mod.py", line 3 in <module>
          File "<frozen importlib._bootstrap>", line 241 in _call_with_frames_removed
        """)
    assert _crash_line(log, str(tmp_path / "mod.py")) == 3
    assert _crash_line(log, str(tmp_path / "other.py")) is None


NEEDS_PACKAGE = '''\
import jax
import not_an_installed_optimiser as optim
from not_an_installed_layers import linen as nn


@jax.jit
def plain(x):
    if x > 0:
        return x
    return -x


@jax.jit
def update(x):
    if x > 0:
        return optim.apply(x)
    return x


def schedule(x):
    return optim.scale(x)


@jax.jit
def through_helper(x):
    y = schedule(x)
    if x > 0:
        return y
    return x


class Model(nn.Module):
    @jax.jit
    def __call__(self, x):
        if x > 0:
            return x
        return -x


@jax.jit
def decay(x):
    rate = optim.rate
    while x > rate:
        x = x / 2
    return x
'''
NOTEBOOK_CELLS = [
    ("code", "import jax\nimport jax.numpy as jnp\n"),
    ("code", "@jax.jit\ndef relu(x):\n    if x > 0:\n        return x\n    return -x\n"),
    ("code", "scale = 1 / 0\nafter_the_failure = 2\n"),
    ("markdown", "Later cells still run.\n"),
    ("code", "@jax.jit\ndef countdown(x):\n    while x > 0:\n        x = x - after_the_failure\n    return x\n"),
    ("code", "@jax.jit\ndef scaled(x):\n    y = x * scale\n    if y > 0:\n        return y\n    return x\n"),
]


def _notebook(cells) -> str:
    import json

    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": source,
                                  **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                                 for kind, source in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.runtime
def test_a_failing_cell_or_a_missing_package_costs_only_the_findings_that_need_it(tmp_path):
    from jaxlint.runtime import summary_line

    (tmp_path / "pyproject.toml").write_text(f"[tool.jaxlint.runtime]\ntimeout = {TIMEOUT * 4}\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(NEEDS_PACKAGE, encoding="utf-8")
    (tmp_path / "analysis.ipynb").write_text(_notebook(NOTEBOOK_CELLS), encoding="utf-8")
    before = sorted(os.listdir(tmp_path))
    settings = load_settings(tmp_path, known_codes())
    findings = [f for name in ("analysis.ipynb", "train.py")
                for f in check_file(str(tmp_path / name), settings).findings]
    notes: list[str] = []
    checked = confirm(findings, settings, RuntimeOptions(jobs=2), notes=notes)

    verdicts = {(os.path.basename(f.path), f.cell, f.start.line): f.runtime for f in checked}
    assert set(verdicts) == {("analysis.ipynb", 1, 3), ("analysis.ipynb", 4, 3), ("analysis.ipynb", 5, 4),
                             ("train.py", None, 8), ("train.py", None, 15), ("train.py", None, 27),
                             ("train.py", None, 35), ("train.py", None, 43)}, verdicts
    # The notebook: cell 3 fails at its first line; the findings in cells 2 and 5 are still
    # confirmed (cell 5 uses the name cell 3 binds after the failing line, which still ran).
    assert verdicts[("analysis.ipynb", 1, 3)]["verdict"] == "confirmed"
    assert verdicts[("analysis.ipynb", 4, 3)]["verdict"] == "confirmed"
    needs_scale = verdicts[("analysis.ipynb", 5, 4)]
    assert needs_scale["verdict"] == "inconclusive"
    assert needs_scale["evidence"].startswith("needs `scale`, which the module does not define: cell 3 (counted from 1), line 1 "
                                              "raised ZeroDivisionError: division by zero"), needs_scale
    assert f"{tmp_path / 'analysis.ipynb'}: cell 3 (counted from 1), line 1 raised ZeroDivisionError: division by zero and was " \
           f"skipped; the rest of the notebook was still run" in notes
    # The module: the function that does not use the missing package is confirmed; the others say
    # which package to install, through a helper and through a base class too.
    assert verdicts[("train.py", None, 8)]["verdict"] == "confirmed"
    assert verdicts[("train.py", None, 15)]["verdict"] == "confirmed"  # JAX raises before `optim` is needed
    assert verdicts[("train.py", None, 27)] == {
        "verdict": "inconclusive", "device": verdicts[("train.py", None, 27)]["device"],
        "evidence": "needs `optim`, from `not_an_installed_optimiser`, which is not installed (ModuleNotFoundError "
                    "at line 2): install `not_an_installed_optimiser` to confirm this finding"}
    assert verdicts[("train.py", None, 35)]["evidence"].startswith("needs `nn`, from `not_an_installed_layers`")
    assert verdicts[("train.py", None, 43)]["evidence"].endswith("install `not_an_installed_optimiser` to confirm "
                                                                 "this finding")
    summary = summary_line(checked).splitlines()
    assert summary[1:] == ["Runtime: install `not_an_installed_layers` to confirm this finding.",
                           "Runtime: install `not_an_installed_optimiser` to confirm these 2 findings."]
    assert sorted(os.listdir(tmp_path)) == before
