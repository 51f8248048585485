"""A checker process that dies (SIGSEGV in the native parser, the OOM killer, a signal) costs only the
file it was checking: that file gets one internal-error line, every other file is checked and
reported, the run ends in bounded time with status 2, nothing is left running, nothing is written."""
from __future__ import annotations

import os
import signal
import time

import pytest

from jaxlint_process import (CRASH_ON_NAME, finding_paths, group_members, needs_proc, run, snapshot, start,
                             wait_for_members, wait_until)

pytestmark = [pytest.mark.system, pytest.mark.skipif(not needs_proc or not hasattr(os, "fork"), reason="needs fork and /proc")]

BAD = "import jax.numpy as np\n"


def tree(root, count: int, extra: dict[str, str]) -> set[str]:
    """`count` files with one JAX601 each, plus `extra`; returns the names of the first ones."""
    names = {f"f{index:02d}.py" for index in range(count)}
    for name in names:
        (root / name).write_text(BAD)
    for name, text in extra.items():
        (root / name).write_text(text)
    return names


def died_lines(result) -> list[str]:
    return [line for line in result.problem_lines if "internal error: the checker process died" in line]


@pytest.mark.parametrize("jobs, count", [("2", 20), ("1", 3)], ids=["pool", "few-files"])
def test_a_worker_killed_by_a_signal_costs_only_its_file(tmp_path, jobs, count):
    good = tree(tmp_path, count, {"crash.py": BAD})
    before = snapshot(tmp_path)
    result = run(["check", "--no-cache", "--jobs", jobs, "."], tmp_path, patch=CRASH_ON_NAME)
    assert result.returncode == 2, result.stderr
    assert finding_paths(result.stdout) == good  # every other file's finding is there
    assert died_lines(result) == [
        "jaxlint: crash.py: internal error: the checker process died (signal 11, SIGSEGV; a stack overflow in "
        "the parser on deeply nested code is the usual cause) while checking this file; the other files were "
        "checked (please report this)"]
    assert "Traceback" not in result.stderr and "All checks passed" not in result.stderr
    assert result.left_running == []
    assert snapshot(tmp_path) == before


def test_deeply_nested_brackets_that_overflow_the_parser_lose_only_that_file(tmp_path):
    """The real input behind the crash: 1,500 nested brackets in a file that mentions JAX. The file
    gets a JAX000 (when CPython's own parser rejects it first) or an internal error (when libcst's
    native parser overflows its stack); either way the run ends and the other file is reported."""
    (tmp_path / "nested.py").write_text("import jax\nx = " + "[" * 1500 + "]" * 1500 + "\n")
    (tmp_path / "good.py").write_text(BAD)
    result = run(["check", "--no-cache", "nested.py", "good.py"], tmp_path)
    assert finding_paths(result.stdout) == {"good.py"}
    rejected = "nested.py" in finding_paths(result.stdout, "JAX000")
    crashed = [line for line in died_lines(result) if line.startswith("jaxlint: nested.py: ")]
    assert rejected != bool(crashed), result.stderr  # reported, one way or the other
    assert result.returncode == (2 if crashed else 1)
    assert "Traceback" not in result.stderr and result.left_running == []


def test_a_worker_that_dies_once_is_replaced_and_the_file_checked_again(tmp_path):
    """A death that had nothing to do with the file (the OOM killer, a stray SIGKILL) is not blamed on it."""
    good = tree(tmp_path, 20, {"victim.py": BAD})
    marker = tmp_path.parent / f"{tmp_path.name}-killed-once"
    patch = f"""
import os, signal
from jaxlint.frontends import runner
_lint_file = runner.lint_file
def lint_file(path, *args, **kwargs):
    if path.endswith("victim.py") and not os.path.exists({str(marker)!r}):
        open({str(marker)!r}, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return _lint_file(path, *args, **kwargs)
runner.lint_file = lint_file
"""
    result = run(["check", "--no-cache", "--jobs", "2", "."], tmp_path, patch=patch)
    assert marker.exists(), "the worker was never killed: the test tested nothing"
    assert result.returncode == 1, result.stderr
    assert finding_paths(result.stdout) == good | {"victim.py"}
    assert result.problem_lines == [] and result.left_running == []


def test_workers_exit_when_jaxlint_is_killed_outright(tmp_path):
    """SIGKILL leaves no chance to clean up: the workers notice their parent is gone and exit."""
    files, busy = tmp_path / "tree", tmp_path / "busy"
    files.mkdir()
    busy.mkdir()
    tree(files, 20, {})
    # each worker holds on to its first file until jaxlint is gone, so that jaxlint is surely
    # killed in the middle of the run, and then returns to the loop that notices it is gone
    patch = """
import os, time
from jaxlint.frontends import runner
_lint_file = runner.lint_file
def lint_file(path, *args, **kwargs):
    parent = os.getppid()
    open(os.path.join(os.environ["JAXLINT_TEST_BUSY"], str(os.getpid())), "w").close()
    while os.getppid() == parent:
        time.sleep(0.05)
    return _lint_file(path, *args, **kwargs)
runner.lint_file = lint_file
"""
    process = start(["check", "--no-cache", "--jobs", "2", "."], files, patch=patch,
                    env_extra={"JAXLINT_TEST_BUSY": str(busy)})
    try:
        wait_for_members(process.pid, 3)  # jaxlint and both workers
        wait_until(lambda: len(list(busy.iterdir())) == 2, "both workers busy with a file")
        process.kill()
        process.communicate(timeout=60)
        deadline = time.monotonic() + 60  # a worker looks for its parent twice a second: far sooner
        while group_members(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group_members(process.pid) == []
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_worker_whose_parent_died_while_it_started_exits():
    """The worker is told its parent's pid by the parent: one that asked for it itself after the
    parent was killed would read its new parent's and wait for work forever."""
    import multiprocessing

    from jaxlint.frontends.pool import _serve

    context = multiprocessing.get_context("fork")
    parent_end, child_end = context.Pipe()
    gone = os.getpid()  # the worker's real parent is this process: any other pid is a parent gone
    worker = context.Process(target=_serve, args=(child_end, lambda path: None, gone + 1_000_000), daemon=True)
    worker.start()
    child_end.close()
    worker.join(timeout=60)
    alive = worker.is_alive()
    if alive:
        worker.kill()
    parent_end.close()
    assert not alive, "the worker kept waiting for a parent that is gone"
    assert worker.exitcode == 0  # it returned, it did not crash
