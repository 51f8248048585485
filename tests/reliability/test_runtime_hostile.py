"""Runtime mode against hostile user modules, through the command line as CI runs it.

One `jaxlint check --runtime` run covers a tree of modules that each do one hostile thing at
import (or while their function is checked) next to a well-behaved one. Every test asserts its
own module's verdict and the run's common guarantees: bounded time, exit status 1 (findings, not
an internal error), the other modules' verdicts intact, no process left running (every process
the run started carries a marker in its environment), nothing written into the checked tree and
no scratch directory left in the temporary directory. A second group sends SIGTERM, SIGHUP or
SIGKILL to jaxlint while a module is being imported.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.runtime,
    pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds leftover processes in /proc"),
]

SRC = Path(__file__).resolve().parents[2] / "src"
TIME_LIMIT = 60  # the worker's, in the tree's configuration: no module here comes near it
FLOOD_BYTES = 64 * 1024 * 1024
FLAGGED = '''

@jax.jit
def relu(x):
    if x > 0:
        return x
    return -x
'''
SLEEPER = '[sys.executable, "-c", "import time; time.sleep(1000)", os.environ["HOSTILE_MARKER"]]'
#: module -> its code before FLAGGED
MODULES = {
    "good": "import jax\n",
    # a child in a new session, and a daemon (double fork, setsid), both sleeping "forever"
    "spawns": f"""\
import os, subprocess, sys
import jax
subprocess.Popen({SLEEPER}, start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, {SLEEPER})
    os._exit(0)
""",
    "floods": f"""\
import os, sys
import jax
line = "x" * 4095 + "\\n"
for _ in range({FLOOD_BYTES} // 4096):
    sys.stdout.write(line)
with open(os.environ["FLOOD_REPORT"], "w") as report:
    report.write("done")
""",
    "writes_beside": """\
import os, sys
import jax
assert sys.argv == [__file__]  # as for `python writes_beside.py`
with open(os.path.join(os.path.dirname(__file__), "out.txt"), "w") as out:
    out.write("written at import")
""",
    "chdirs": """\
import os
import jax
os.chdir(os.path.dirname(os.path.abspath(__file__)))
with open("chdir_out.txt", "w") as out:
    out.write("written at import")
os.chdir("pkg")
with open("deeper.txt", "w") as out:
    out.write("written at import")
""",
    "exits": "import os\nimport jax\nos._exit(3)\n",
    "sys_exits": "import sys\nimport jax\nsys.exit(3)\n",
    # the first function ends the worker while it is checked; the second is checked by a fresh one
    "exits_in_check": """\
import os
import jax


@jax.jit
def leaves(x):
    os._exit(3)
    if x > 0:
        return x
    return -x
""",
}


def _tree(root: Path) -> None:
    (root / "pyproject.toml").write_text(f"[tool.jaxlint.runtime]\ntimeout = {TIME_LIMIT}\n", encoding="utf-8")
    (root / "pkg").mkdir()
    (root / "pkg" / "data.txt").write_text("kept as it is\n", encoding="utf-8")
    for name, code in MODULES.items():
        (root / f"{name}.py").write_text(code + FLAGGED, encoding="utf-8")


def snapshot(root: Path) -> dict[str, str]:
    """Every file and directory under `root`, with the hash of each file's bytes."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        found[relative] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return found


def processes_marked(marker: str) -> list[str]:
    """Live processes whose environment or command line holds the marker (zombies show neither)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read()
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if marker.encode() in environ or marker.encode() in cmdline:
            found.append(f"{name}: " + cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def kill_marked(marker: str) -> None:
    """After a failed test: what it started must not run on (the marker is the test's own)."""
    for entry in processes_marked(marker):
        try:
            os.kill(int(entry.split(":")[0]), signal.SIGKILL)
        except OSError:
            pass


def wait_until_none_marked(marker: str, within: float = 60.0) -> list[str]:
    deadline = time.monotonic() + within
    while True:
        left = processes_marked(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def scratch_left(temp: Path) -> list[str]:
    return sorted(p.name for p in temp.iterdir() if p.name.startswith("jaxlint-runtime-"))


def _environment(marker: str, temp: Path, side: Path) -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1", "HOSTILE_MARKER": marker, "TMPDIR": str(temp),
           "FLOOD_REPORT": str(side / "flood.txt"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)}
    env.pop("CI", None)
    return env


class _PeakSize:
    """The largest total size of the files under a directory while it runs, sampled."""

    def __init__(self, directory: Path) -> None:
        self.directory, self.peak, self._done = directory, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.is_set():
            total = 0
            for folder, _, files in os.walk(self.directory):
                for name in files:
                    try:
                        total += os.lstat(os.path.join(folder, name)).st_size
                    except OSError:
                        pass
            self.peak = max(self.peak, total)
            self._done.wait(0.02)

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    tree, temp, side = base / "tree", base / "temp", base / "side"
    for directory in (tree, temp, side):
        directory.mkdir()
    _tree(tree)
    before = snapshot(tree)
    marker = f"jaxlint-hostile-{uuid.uuid4().hex}"
    sizes = _PeakSize(temp)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "jaxlint", "check", "--runtime", "--no-cache", "--jobs", "2",
         "--output-format", "json", str(tree)],
        cwd=side, env=_environment(marker, temp, side), capture_output=True, text=True, timeout=240)
    elapsed = time.monotonic() - started
    peak = sizes.stop()
    findings = json.loads(done.stdout) if done.stdout.strip() else []
    verdicts = {(Path(f["path"]).stem, f["line"]): f.get("runtime") for f in findings}
    yield {"done": done, "elapsed": elapsed, "verdicts": verdicts, "before": before, "tree": tree,
           "temp": temp, "side": side, "marker": marker, "peak": peak}
    kill_marked(marker)


def assert_run_intact(run: dict) -> None:
    """What every hostile module must leave as it was: the run, the tree, the machine."""
    done = run["done"]
    assert done.returncode == 1, (done.returncode, done.stderr[-3000:])
    assert "internal error" not in done.stdout + done.stderr and "please report" not in done.stderr
    assert run["elapsed"] < TIME_LIMIT  # no worker waited for its time limit
    assert run["verdicts"][("good", 6)]["verdict"] == "confirmed", run["verdicts"]
    assert len(run["verdicts"]) == len(MODULES) + 1  # exits_in_check has two
    assert wait_until_none_marked(run["marker"]) == []
    assert snapshot(run["tree"]) == run["before"]
    assert scratch_left(run["temp"]) == []


def verdict(run: dict, module: str, line: int | None = None) -> dict:
    line = line or 1 + MODULES[module].count("\n") + 4  # the `if` of FLAGGED
    return run["verdicts"][(module, line)]


def test_children_in_a_new_session_are_killed_with_the_worker(hostile_run):
    # Both sleepers left the worker's process group; neither may outlive the run.
    assert wait_until_none_marked(hostile_run["marker"]) == []
    assert verdict(hostile_run, "spawns")["verdict"] == "confirmed"
    assert_run_intact(hostile_run)


def test_an_output_flood_is_capped_not_written_out_or_read_whole(hostile_run):
    assert (hostile_run["side"] / "flood.txt").read_text() == "done"  # all of it was printed
    assert verdict(hostile_run, "floods")["verdict"] == "confirmed"
    # The worker printed 64 MiB; at no time did the temporary directory hold more than a few.
    assert hostile_run["peak"] < 8 * 1024 * 1024, hostile_run["peak"]
    assert_run_intact(hostile_run)


def test_writes_beside_the_module_and_after_chdir_land_in_the_scratch_copy(hostile_run):
    assert snapshot(hostile_run["tree"]) == hostile_run["before"]
    assert verdict(hostile_run, "writes_beside")["verdict"] == "confirmed"
    assert verdict(hostile_run, "chdirs")["verdict"] == "confirmed"
    # Findings keep the checked file's path; nothing of the copy shows through.
    assert all(str(hostile_run["tree"]) in f for f in json.loads(hostile_run["done"].stdout) for f in [f["path"]])
    assert "jaxlint-runtime-" not in hostile_run["done"].stdout
    assert_run_intact(hostile_run)


def test_a_user_exit_is_inconclusive_with_its_status_not_an_internal_error(hostile_run):
    expected = {
        ("exits", None): "the module exited with status 3 (os._exit) at line 3 while being imported",
        ("sys_exits", None): "the module exited with status 3 (sys.exit) at line 3 while being imported",
        ("exits_in_check", 8): "the code exited with status 3 (os._exit) at line 7 while checking this finding",
    }
    for (module, line), evidence in expected.items():
        runtime = verdict(hostile_run, module, line)
        assert (runtime["verdict"], runtime["evidence"]) == ("inconclusive", evidence), module
    # The worker started afresh after the exit and checked the next function.
    assert verdict(hostile_run, "exits_in_check", 15)["verdict"] == "confirmed"
    assert_run_intact(hostile_run)


SLEEPS_AT_IMPORT = f"""\
import os, subprocess, sys, time
import jax
subprocess.Popen({SLEEPER}, start_new_session=True)
time.sleep(1000)
{FLAGGED}"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=lambda s: s.name)
def test_jaxlint_stopped_by_a_signal_leaves_no_worker_and_no_scratch(tmp_path, signum):
    tree, temp = tmp_path / "tree", tmp_path / "temp"
    tree.mkdir()
    temp.mkdir()
    (tree / "pyproject.toml").write_text(f"[tool.jaxlint.runtime]\ntimeout = {TIME_LIMIT}\n", encoding="utf-8")
    (tree / "sleeps.py").write_text(SLEEPS_AT_IMPORT, encoding="utf-8")
    before = snapshot(tree)
    marker = f"jaxlint-hostile-{uuid.uuid4().hex}"
    jaxlint = subprocess.Popen([sys.executable, "-m", "jaxlint", "check", "--runtime", "--no-cache", str(tree)],
                               cwd=tmp_path, env=_environment(marker, temp, tmp_path),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        # The sleeper's command line names the marker: the module is being imported.
        while not any("time.sleep(1000)" in p for p in processes_marked(marker)):
            assert jaxlint.poll() is None and time.monotonic() < deadline, "the module was never imported"
            time.sleep(0.05)
        assert scratch_left(temp) != []  # the run's scratch directory, while it runs
        jaxlint.send_signal(signum)
        status = jaxlint.wait(timeout=60)
        assert status not in (0, 1)  # neither "clean" nor "findings": the run did not finish
        assert wait_until_none_marked(marker) == []
        deadline = time.monotonic() + 60
        while scratch_left(temp) and time.monotonic() < deadline:
            time.sleep(0.05)  # the worker's keeper removes it once it sees jaxlint gone
        assert scratch_left(temp) == []
        assert snapshot(tree) == before
    finally:
        if jaxlint.poll() is None:
            jaxlint.kill()
            jaxlint.wait()
        kill_marked(marker)
