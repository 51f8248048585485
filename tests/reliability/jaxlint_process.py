"""Running `jaxlint` in a process of its own for the reliability tests: bounded in time, in a process
group of its own so that whatever it leaves running can be found, optionally with jaxlint patched
first (a test double loaded by a `-c` wrapper, so that nothing test-only lives in the product)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

#: every run of these tests ends well within this, even on a machine busy with other work; a hang
#: fails the test instead of stalling the suite. The waits below poll for what they wait for and
#: return as soon as it is there: a long ceiling costs nothing when all goes well.
TIMEOUT = 120
#: how long processes may take to exit, or to appear, on a busy machine
SETTLE_SECONDS = 60.0

_WRAPPER = """
import sys
{patch}
from jaxlint.frontends.cli import main
main(sys.argv[1:], prog_name="jaxlint")
"""

#: a patch: the checker process kills itself with SIGSEGV on any file whose name contains "crash"
CRASH_ON_NAME = """
import os, signal
from jaxlint.frontends import runner
_lint_file = runner.lint_file
def lint_file(path, *args, **kwargs):
    if "crash" in os.path.basename(path):
        os.kill(os.getpid(), signal.SIGSEGV)
    return _lint_file(path, *args, **kwargs)
runner.lint_file = lint_file
"""


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    #: processes of its process group still there after it exited (pid, command line)
    left_running: list[tuple[int, str]]

    @property
    def problem_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("jaxlint:")]


def command(args: list[str], patch: str | None = None) -> list[str]:
    if patch is None:
        return [sys.executable, "-m", "jaxlint", *args]
    return [sys.executable, "-c", _WRAPPER.format(patch=patch), *args]


def environment() -> dict[str, str]:
    """The test's environment, with the jaxlint under test first on the path: the one this process
    imported (a relative PYTHONPATH would not survive the change of directory)."""
    import jaxlint

    source_root = os.path.dirname(os.path.dirname(os.path.abspath(jaxlint.__file__)))
    env = {**os.environ, "NO_COLOR": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH", "")) if p)
    env.pop("CI", None)
    return env


def start(args: list[str], cwd: Path, patch: str | None = None, env_extra: dict[str, str] | None = None,
          **options) -> subprocess.Popen:
    return subprocess.Popen(command(args, patch), cwd=cwd, env={**environment(), **(env_extra or {})},
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True,
                            **options)


def finish(process: subprocess.Popen, timeout: float = TIMEOUT) -> Finished:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AssertionError(f"jaxlint did not finish within {timeout} s")
    return Finished(process.returncode, stdout, stderr, left_running(process.pid))


def run(args: list[str], cwd: Path, patch: str | None = None, timeout: float = TIMEOUT) -> Finished:
    return finish(start(args, cwd, patch), timeout)


def group_members(group: int) -> list[tuple[int, str]]:
    """Live processes (not zombies) of process group `group`, from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, _parent, process_group = stat.rsplit(")", 1)[1].split()[:3]
        if int(process_group) == group and state != "Z":
            members.append((int(entry), cmdline.strip()))
    return members


def left_running(group: int, wait: float = SETTLE_SECONDS) -> list[tuple[int, str]]:
    """The members of `group` still alive after up to `wait` seconds (workers may take a moment to exit)."""
    deadline = time.monotonic() + wait
    while True:
        members = group_members(group)
        if not members or time.monotonic() > deadline:
            return members
        time.sleep(0.05)


def wait_for_members(group: int, count: int, timeout: float = SETTLE_SECONDS) -> None:
    wait_until(lambda: len(group_members(group)) >= count, f"process group {group} with {count} processes", timeout)


def wait_until(condition, what: str, timeout: float = SETTLE_SECONDS) -> None:
    """Returns once `condition()` holds; fails the test if it still does not after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened within {timeout} s: {what}")
        time.sleep(0.02)


def snapshot(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every entry under `root` with its mode and, for regular files, its content."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        content = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        found[str(path.relative_to(root))] = (info.st_mode, content)
    return found


def finding_paths(stdout: str, code: str = "JAX601") -> set[str]:
    """Paths with a `code` finding in text output."""
    return {line.split(":", 1)[0] for line in stdout.splitlines() if f": {code} " in line}


needs_proc = os.path.isdir("/proc/self")
