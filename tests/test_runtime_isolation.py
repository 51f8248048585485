"""Runtime mode imports user code in worker processes: hostile modules cost their own verdicts only.

Each module below does something at import (or while traced) that would take down or hang a
linter that imported it itself. Each must come back `inconclusive` with the reason, within the
time limit, while the well-behaved module checked in the same run is still confirmed and nothing
is written into the user's tree. One `confirm()` run covers every module.
"""
from __future__ import annotations

import os
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
    "loops": ("while True:\n    pass", f"time limit ({TIMEOUT} s) reached while importing the module"),
    "raises": ("raise RuntimeError('boom')", "the module could not be imported: RuntimeError at line 2: boom"),
    "segfaults": ("import ctypes\nctypes.string_at(0)", "crashed: SIGSEGV (segmentation fault) at line 3"),
    "allocates": ("hoard = []\nwhile True:\n    hoard.append(bytearray(2 ** 30))",
                  "MemoryError at line 4 (memory limit 1024 MiB)"),
    "quits": ("import os\nos._exit(0)", "the module exited with status 0 (os._exit) at line 3 while being imported"),
    "needs_missing_package": ("import not_an_installed_package",
                              "ModuleNotFoundError at line 2: No module named 'not_an_installed_package'"),
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
    for name, (body, _) in HOSTILE.items():
        (tmp_path / f"{name}.py").write_text(f"import jax\n{body}\n{FLAGGED}", encoding="utf-8")
    (tmp_path / "good.py").write_text(f"import jax\n{FLAGGED}", encoding="utf-8")
    (tmp_path / "hangs.py").write_text(HANGS_WHILE_TRACED, encoding="utf-8")
    before = sorted(os.listdir(tmp_path))
    settings = load_settings(tmp_path, known_codes())
    paths = sorted(tmp_path.glob("*.py"))
    findings = [f for path in paths for f in check_file(str(path), settings).findings]
    assert len(findings) == len(HOSTILE) + 3 and {f.code for f in findings} == {"JAX201"}

    started = time.monotonic()
    checked = confirm(findings, settings, RuntimeOptions(jobs=4))
    elapsed = time.monotonic() - started

    verdicts = {(os.path.basename(f.path)[:-3], f.start.line): f.runtime for f in checked}
    for name, (_, reason) in HOSTILE.items():
        (runtime,) = [v for (module, _), v in verdicts.items() if module == name]
        assert runtime["verdict"] == "inconclusive", (name, runtime)
        assert reason in runtime["evidence"], (name, runtime)
    assert verdicts[("good", 6)]["verdict"] == "confirmed"
    # A hang while tracing costs that finding; a fresh worker checks the next one.
    assert verdicts[("hangs", 8)] == {"verdict": "inconclusive", "device": verdicts[("hangs", 8)]["device"],
                                      "evidence": f"time limit ({TIMEOUT} s) reached while checking this finding"}
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
