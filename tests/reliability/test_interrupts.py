"""SIGINT (Ctrl-C), SIGTERM (a cancelled CI job) and SIGHUP stop a run cleanly: one line on stderr,
no traceback, exit status 128 + the signal (never 1, the findings status), the worker processes
terminated, nothing left running and nothing written."""
from __future__ import annotations

import os
import signal

import pytest

from jaxlint_process import finish, needs_proc, snapshot, start, wait_for_members, wait_until

pytestmark = [pytest.mark.system, pytest.mark.skipif(not needs_proc or not hasattr(signal, "SIGHUP"), reason="needs POSIX and /proc")]

#: every file waits until the run is stopped: a worker says it has begun one (a file in the
#: directory named by JAXLINT_TEST_BUSY), so the signal surely comes in the middle of the files,
#: however slow the machine (a run that sleeps a fixed time could end before the test sends it)
HELD_CHECKS = """
import os, time
from jaxlint.frontends import runner
_lint_file = runner.lint_file
def lint_file(path, *args, **kwargs):
    open(os.path.join(os.environ["JAXLINT_TEST_BUSY"], str(os.getpid())), "w").close()
    while True:
        time.sleep(0.05)
runner.lint_file = lint_file
"""


@pytest.mark.parametrize("name, to_group, message", [
    ("SIGTERM", False, "jaxlint: stopped by SIGTERM"),
    ("SIGHUP", False, "jaxlint: stopped by SIGHUP"),
    # Ctrl-C at a terminal reaches the whole foreground process group, workers included
    ("SIGINT", True, "jaxlint: interrupted"),
])
def test_a_signal_stops_the_run_and_its_workers(tmp_path, name, to_group, message):
    tree, busy = tmp_path / "tree", tmp_path / "busy"
    tree.mkdir()
    busy.mkdir()
    for index in range(40):
        (tree / f"f{index:02d}.py").write_text("import jax.numpy as np\n")
    before = snapshot(tree)
    process = start(["check", "--no-cache", "--jobs", "2", "."], tree, patch=HELD_CHECKS,
                    env_extra={"JAXLINT_TEST_BUSY": str(busy)})
    try:
        wait_for_members(process.pid, 3)  # jaxlint and its two workers
        wait_until(lambda: len(list(busy.iterdir())) == 2, "both workers busy with a file")
        signum = getattr(signal, name)
        if to_group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        result = finish(process)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert result.returncode == 128 + signum
    assert result.stderr.splitlines() == [message]  # no traceback, no "Aborted!", no summary
    assert result.stdout == ""
    assert result.left_running == []
    assert snapshot(tree) == before
