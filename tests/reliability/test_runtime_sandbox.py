"""The parts of runtime mode's sandbox that need no JAX: killing a process tree that left its
session, capping captured output, the bounded copy of the checked tree, stale scratch
directories, and the words for how a worker ended."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest

from jaxlint.model.settings import RuntimeSettings
from jaxlint.runtime import launcher, scratch
from jaxlint.runtime.keeper import Capture
from jaxlint.runtime.processes import alive, descendants, kill_tree

pytestmark = pytest.mark.system

linux_proc = pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.isdir("/proc/self"),
                                reason="needs /proc and prctl (Linux)")


def _marked(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if marker.encode() in handle.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


@linux_proc
def test_kill_tree_reaches_a_daemon_reparented_to_a_subreaper(tmp_path):
    """A daemon (double fork, setsid) below a subreaper is found through /proc and killed with it."""
    marker = f"daemon-{uuid.uuid4().hex}"
    subreaper = textwrap.dedent(f"""\
        import os, sys, time
        from jaxlint.runtime.processes import become_subreaper
        assert become_subreaper()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", {marker!r} + "-daemon"])
            os._exit(0)
        time.sleep(60)
        """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    root = subprocess.Popen([sys.executable, "-c", subreaper, marker], env=env)
    try:
        deadline = time.monotonic() + 60
        while not _marked(f"{marker}-daemon"):  # only the daemon's command line says so, once it runs
            assert time.monotonic() < deadline
            time.sleep(0.02)
        (daemon,) = _marked(f"{marker}-daemon")
        assert daemon in descendants(root.pid)  # reparented to the subreaper, not to init
        kill_tree(root.pid)
        assert root.wait(timeout=60) == -signal.SIGKILL
        deadline = time.monotonic() + 60
        while alive(daemon) and _marked(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _marked(marker) == []
    finally:
        if root.poll() is None:
            root.kill()
            root.wait()
        for pid in _marked(marker):  # started by this test (the marker is its own): not left behind
            os.kill(pid, signal.SIGKILL)


def test_capture_keeps_the_head_and_the_tail_and_counts_the_rest():
    capture = Capture(1000)
    stream = bytes(range(256)) * 40000  # 10 MB in uneven chunks
    position = 0
    for size in [1, 999, 7, 65536, 3] * 1000:
        capture.add(stream[position:position + size])
        position += size
        if position >= len(stream):
            break
    written = stream[:position]
    assert bytes(capture.head) == written[:1000] and bytes(capture.tail) == written[-1000:]
    assert capture.dropped == len(written) - 2000
    assert len(capture.text()) < 2100 and f"{len(written) - 2000} bytes of output left out".encode() in capture.text()


def test_only_the_end_of_a_log_is_read(tmp_path):
    log = tmp_path / "output.log"
    with open(log, "wb") as handle:
        handle.truncate(1 << 30)  # 1 GiB, sparse: reading it whole would show
        handle.seek(0, os.SEEK_END)
        handle.write(b"the last line\n")
    text = launcher._read_bounded(str(log), 4096)
    assert len(text) == 4096 and text.endswith("the last line\n")
    assert launcher._read_bounded(str(tmp_path / "gone.log"), 4096) == ""


def _project(root):
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "mod.py").write_text("X = 1\n")
    (root / "pkg" / "config.json").write_text("{}")
    (root / "top.py").write_text("")
    for skipped in (".git", "__pycache__", "venv"):
        (root / skipped).mkdir()
        (root / skipped / "inside.py").write_text("")
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    with open(root / "pkg" / "big.bin", "wb") as handle:
        handle.truncate(scratch.MAX_DATA_FILE_BYTES + 1)
    os.mkfifo(root / "pkg" / "fifo")
    os.symlink("/dev/zero", root / "pkg" / "zeros")


def _copy(*args):
    """copy_tree in a thread: a FIFO or a device opened for reading would hang it."""
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("tree", scratch.copy_tree(*args)), daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), "copying the tree hung"
    return result["tree"]


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_the_tree_copy_has_the_code_and_small_files_only(tmp_path):
    source, target = tmp_path / "project", tmp_path / "copy"
    source.mkdir()
    _project(source)
    module = str(source.resolve() / "pkg" / "sub" / "mod.py")
    tree = _copy(str(source), str(target), [module], [str(source)])
    assert _files(target) == ["pkg/__init__.py", "pkg/config.json", "pkg/sub/__init__.py", "pkg/sub/mod.py", "top.py"]
    assert not tree.complete  # the big file was left out
    assert tree.to_copy(module) == str(target / "pkg" / "sub" / "mod.py")
    assert tree.to_copy("/elsewhere/x.py") == "/elsewhere/x.py"
    assert tree.to_copy(str(source.resolve())) == str(target)  # an import root: no trailing `/.`
    assert tree.to_original(f'File "{target}/pkg/sub/mod.py", line 3') == \
        f'File "{source.resolve()}/pkg/sub/mod.py", line 3'


def test_the_module_is_copied_even_when_the_budget_is_spent(tmp_path, monkeypatch):
    monkeypatch.setattr(scratch, "MAX_COPY_FILES", 2)
    source = tmp_path / "project"
    source.mkdir()
    for index in range(5):
        (source / f"m{index}.py").write_text("")
    module = str(source.resolve() / "m4.py")
    tree = scratch.copy_tree(str(source), str(tmp_path / "copy"), [module], [str(source)])
    assert "m4.py" in _files(tmp_path / "copy") and len(_files(tmp_path / "copy")) == 2 and not tree.complete
    tree.ensure([str(source.resolve() / "m3.py")])  # a later module of the run needs another file
    assert "m3.py" in _files(tmp_path / "copy")


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners")
def test_stale_scratch_directories_are_removed_live_ones_kept(tmp_path):
    import fcntl

    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()  # a pid that no longer runs
    stale = tmp_path / f"{scratch.PREFIX}{gone.pid}-abc"
    (stale / "tree").mkdir(parents=True)
    (stale / "owner.lock").write_text("")
    being_made = tmp_path / f"{scratch.PREFIX}{os.getppid()}-def"
    being_made.mkdir()  # no lock yet, and its owner runs: being created
    held = tmp_path / f"{scratch.PREFIX}{gone.pid}-ghi"
    held.mkdir()
    lock = os.open(held / "owner.lock", os.O_WRONLY | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)  # its owner is running
    half_made = tmp_path / f"{scratch.PREFIX}{gone.pid}-jkl"
    half_made.mkdir()  # no lock, and its owner is gone
    other = tmp_path / "not-ours"
    other.mkdir()
    try:
        assert scratch.remove_stale(str(tmp_path)) == 2
    finally:
        os.close(lock)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([being_made.name, held.name, other.name])


def _run(**fields):
    return launcher._Run(path="/project/mod.py", **fields)


RUNTIME = RuntimeSettings()


@pytest.mark.parametrize("run, phase, reason", [
    (_run(internal="KeyError: 'x'", exit={"status": 3, "signal": None, "timed_out": False}), "check",
     "internal error in the worker: KeyError: 'x' while checking this finding (please report this)"),
    (_run(exit={"status": 3, "signal": None, "timed_out": False}, exit_line=4), "import",
     "the module exited with status 3 (os._exit) at line 4 while being imported"),
    (_run(exit={"status": 2, "signal": None, "timed_out": False}), "check",
     "the code exited with status 2 while checking this finding"),
    (_run(exit={"status": None, "signal": int(signal.SIGXCPU), "timed_out": False}), "check",
     "CPU time limit reached while checking this finding"),
    (_run(exit={"status": None, "signal": int(signal.SIGKILL), "timed_out": True}), "import",
     f"time limit ({RUNTIME.timeout:g} s) reached while importing the module; raise `timeout` in "
     "[tool.jaxlint.runtime] to let it finish"),
    (_run(exit={"status": None, "signal": int(signal.SIGSEGV), "timed_out": False},
          log='Fatal Python error: Segmentation fault\n  File "/project/mod.py", line 9 in f\n'), "check",
     "the worker process crashed: SIGSEGV (segmentation fault) at line 9 while checking this finding"),
    (_run(returncode=-int(signal.SIGKILL)), "import",
     "the worker process was killed: SIGKILL while importing the module"),
    (_run(returncode=1, keeper_log="Traceback...\nOSError: no pipes left\n"), "start",
     "internal error in the worker: OSError: no pipes left while starting JAX (please report this)"),
], ids=["internal", "user-exit-at-import", "user-exit-in-check", "cpu-limit", "time-limit", "segfault",
        "keeper-killed", "keeper-failed"])
def test_how_a_worker_ended_in_words(run, phase, reason):
    assert launcher._death(run, RUNTIME, phase) == reason


def test_relative_python_path_entries_reach_the_worker_absolute(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["lib", str(tmp_path / "abs")]))
    environment, _ = launcher._environment(None)
    entries = environment["PYTHONPATH"].split(os.pathsep)
    assert str(tmp_path / "lib") in entries and str(tmp_path / "abs") in entries and "lib" not in entries


def _python(code: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env, **kwargs)


@pytest.mark.skipif(not hasattr(signal, "alarm"), reason="needs SIGALRM and RLIMIT_CPU")
def test_a_worker_has_its_own_time_and_cpu_limits():
    """Should its keeper fail to stop it, a worker stops itself: an alarm after the time limit
    (plus a grace, none here) ends it, and a CPU-time limit is set for it."""
    looping = _python("""\
        import resource
        from jaxlint.runtime import keeper
        keeper.ALARM_GRACE_S = 0
        keeper._limit_resources(1, 0)
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        assert soft != resource.RLIM_INFINITY and hard != resource.RLIM_INFINITY, (soft, hard)
        while True:
            pass
        """)
    try:
        assert looping.wait(timeout=60) == -signal.SIGALRM
    finally:
        if looping.poll() is None:
            looping.kill()
            looping.wait()


@linux_proc
def test_a_process_set_to_die_with_its_parent_does():
    """The worker dies with its keeper, the keeper with jaxlint: here a child with its parent."""
    parent = _python("""\
        import os, signal, sys, time
        from jaxlint.runtime.processes import die_with_parent
        child = os.fork()
        if child == 0:
            assert die_with_parent(signal.SIGKILL)
            print("set", flush=True)
            time.sleep(60)
            os._exit(0)
        print(child, flush=True)
        time.sleep(60)
        """, stdout=subprocess.PIPE, text=True)
    # the parent's line and the child's, in either order: the child has called prctl once it says so
    said = {parent.stdout.readline().strip(), parent.stdout.readline().strip()}
    assert "set" in said, said
    (child,) = (int(line) for line in said if line != "set")
    try:
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 60
        while alive(child) and _state(child) != "Z" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(child) or _state(child) == "Z"
    finally:
        if alive(child) and _state(child) != "Z":
            os.kill(child, signal.SIGKILL)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return "gone"
    return stat[stat.rfind(b")") + 2:].split()[0].decode()
