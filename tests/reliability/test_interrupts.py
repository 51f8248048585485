"""SIGINT (Ctrl-C), SIGTERM (a cancelled CI job) and SIGHUP stop a run cleanly: one line on stderr,
no traceback, exit status 128 + the signal (never 1, the findings status), the worker processes
terminated, nothing left running and nothing written."""
from __future__ import annotations

import os
import signal

import pytest

from jaxlint_process import finish, needs_proc, snapshot, start, wait_for_members

pytestmark = [pytest.mark.system, pytest.mark.skipif(not needs_proc or not hasattr(signal, "SIGHUP"), reason="needs POSIX and /proc")]

#: every file takes a while, so that the run is surely in the middle of its files when stopped
SLOW_CHECKS = """
import time
from jaxlint.frontends import runner
_lint_file = runner.lint_file
def lint_file(path, *args, **kwargs):
    time.sleep(0.2)
    return _lint_file(path, *args, **kwargs)
runner.lint_file = lint_file
"""


@pytest.mark.parametrize("name, to_group, message", [
    ("SIGTERM", False, "jaxlint: stopped by SIGTERM"),
    ("SIGHUP", False, "jaxlint: stopped by SIGHUP"),
    # Ctrl-C at a terminal reaches the whole foreground process group, workers included
    ("SIGINT", True, "jaxlint: interrupted"),
])
def test_a_signal_stops_the_run_and_its_workers(tmp_path, name, to_group, message):
    for index in range(40):
        (tmp_path / f"f{index:02d}.py").write_text("import jax.numpy as np\n")
    before = snapshot(tmp_path)
    process = start(["check", "--no-cache", "--jobs", "2", "."], tmp_path, patch=SLOW_CHECKS)
    try:
        wait_for_members(process.pid, 3)  # jaxlint and its two workers, busy with the first files
        signum = getattr(signal, name)
        if to_group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        result = finish(process, timeout=20)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert result.returncode == 128 + signum
    assert result.stderr.splitlines() == [message]  # no traceback, no "Aborted!", no summary
    assert result.stdout == ""
    assert result.left_running == []
    assert snapshot(tmp_path) == before
