"""The worker's keeper: `python -m jaxlint.runtime.keeper RUN_DIR`, started by the launcher.

The keeper is a small process that runs no user code. It forks the worker (which imports JAX and
the user's module, see worker.py) and looks after it:

- **limits**: the worker gets the wall-clock time limit (enforced here, and by an alarm in the
  worker as a second line), a CPU-time limit (`RLIMIT_CPU`), the memory limit (`RLIMIT_DATA`) and
  no core dumps;
- **output**: the worker's stdout and stderr are a pipe read here; the first and the last
  `CAPTURE_BYTES` are kept (in memory, then in `output.log`), the middle of a flood is counted
  and dropped, so nothing the user's code prints can fill the disk or jaxlint's memory;
- **descendants**: the keeper is a child subreaper (Linux), so whatever the user's code starts,
  even in a new session, stays below it; when the worker ends, every process left below the
  keeper is killed;
- **its parent**: the keeper gets SIGTERM when jaxlint dies (`PR_SET_PDEATHSIG`, Linux) and also
  watches its parent's pid (everywhere); on either, or on SIGTERM/SIGHUP/SIGINT, it kills the
  worker's tree and removes the run's scratch directory, which no one else would remove;
- **how the worker ended**: it appends an `exit` event (status, signal, time limit) to the
  worker's events, so the launcher tells a crash or a user's `os._exit(3)` from an internal error
  (which the worker reports itself, with an `internal` event).
"""
from __future__ import annotations

import json
import math
import os
import select
import shutil
import signal
import sys
import threading
import time

from .processes import become_subreaper, descendants, die_with_parent, kill_tree
from .sandbox import SHM, isolate, shm_files

#: Bytes of the worker's output kept from its start, and again from its end.
CAPTURE_BYTES = 64 * 1024
#: The worker's own alarm fires this long after the keeper's time limit: only if the keeper failed.
ALARM_GRACE_S = 5
#: How often the keeper looks at its parent and the clock.
POLL_S = 0.1
#: After the worker ended, how long output still arriving (from what it started) is read.
DRAIN_S = 0.2
#: How often the memory of the worker's whole tree (shared memory included) is added up.
MEMORY_POLL_S = 0.25

_real_exit = os._exit  # the worker's user code may replace os._exit (worker.py records its calls)


def main(argv: list[str]) -> int:
    run_dir = argv[1]
    with open(os.path.join(run_dir, "plan.json"), encoding="utf-8") as handle:
        plan = json.load(handle)
    stop = _on_termination()
    die_with_parent(signal.SIGTERM)  # handled above: the cleanup below runs
    parent = plan.get("parent")
    become_subreaper()
    events_path = os.path.join(run_dir, "events.jsonl")
    if parent is not None and os.getppid() != parent:
        _orphaned(plan)
        return 0
    read_end, write_end = os.pipe()
    keeper = os.getpid()
    shm_before = _shm_names()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        _worker(plan, events_path, write_end, keeper)  # never returns
    os.close(write_end)
    capture = Capture(CAPTURE_BYTES)
    outcome = _watch(child, read_end, capture, plan, parent, stop)
    if outcome.orphaned:
        kill_tree(keeper, include_root=False)
        _remove_shm(outcome.shm, shm_before)
        _orphaned(plan)
        return 0
    if outcome.timed_out:
        _ask_for_stack(child, read_end, capture)
    if outcome.timed_out or outcome.memory_mib is not None:
        kill_tree(keeper, include_root=False)
        outcome.status = _wait(child)
    _drain(read_end, capture)
    if not outcome.shm_private:
        outcome.shm |= shm_files(descendants(keeper) or [])
    kill_tree(keeper, include_root=False)  # what the worker left running, in whatever session
    _reap_others()
    _remove_shm(outcome.shm, shm_before)
    with open(os.path.join(run_dir, "output.log"), "wb") as handle:
        handle.write(capture.text())
    event = {"event": "exit", "timed_out": outcome.timed_out, "status": None, "signal": None,
             "memory_mib": outcome.memory_mib}
    if outcome.status is not None and os.WIFSIGNALED(outcome.status):
        event["signal"] = os.WTERMSIG(outcome.status)
    elif outcome.status is not None and os.WIFEXITED(outcome.status):
        event["status"] = os.WEXITSTATUS(outcome.status)
    with open(events_path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(event) + "\n")
    return 0


class Capture:
    """The first and the last `limit` bytes of a stream, and how many were dropped between them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - self.limit
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def text(self) -> bytes:
        gap = f"\n[... {self.dropped} bytes of output left out ...]\n".encode() if self.dropped else b""
        return bytes(self.head) + gap + bytes(self.tail)


class _Outcome:
    def __init__(self) -> None:
        self.status: int | None = None  # os.waitpid's status of the worker
        self.timed_out = False
        self.orphaned = False
        self.memory_mib: int | None = None  # what the tree used when it went over the memory limit
        self.shm: set[str] = set()  # /dev/shm files the tree held (where /dev/shm is not private)
        self.shm_private: bool | None = None  # the worker has a /dev/shm of its own; None: not known yet


def _on_termination() -> threading.Event:
    """SIGTERM (also the one sent when jaxlint dies), SIGHUP and SIGINT end the watch."""
    stop = threading.Event()

    def handler(signum, frame):
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, handler)
    return stop


def _watch(child: int, read_end: int, capture: Capture, plan: dict, parent: int | None,
           stop: threading.Event) -> _Outcome:
    outcome = _Outcome()
    deadline = time.monotonic() + float(plan["timeout"])
    limit = int(plan.get("memory_limit") or 0)
    measured = time.monotonic()
    reading = True
    while True:
        if reading:
            ready, _, _ = select.select([read_end], [], [], POLL_S)
            if ready:
                chunk = os.read(read_end, 65536)
                if chunk:
                    capture.add(chunk)
                else:
                    reading = False  # every writer closed it: the worker and all it started
        else:
            time.sleep(POLL_S)
        outcome.status = _reap(child)
        if outcome.status is not None:
            return outcome
        if stop.is_set() or (parent is not None and os.getppid() != parent):
            outcome.orphaned = True
            return outcome
        if time.monotonic() > deadline:
            outcome.timed_out = True
            return outcome
        if time.monotonic() - measured >= MEMORY_POLL_S:
            measured = time.monotonic()
            tree = [child, *(descendants(child) or [])]
            if outcome.shm_private is None:
                outcome.shm_private = _own_shm(child)
            if not outcome.shm_private:
                outcome.shm |= shm_files(tree)
            shm = _private_shm_mib(child) if outcome.shm_private else 0
            if limit and _resident_mib(tree) + shm > limit:  # a cheap upper bound first (see _resident_mib)
                used = _tree_memory_mib(tree) + shm
                if used > limit:
                    outcome.memory_mib = used
                    return outcome


def _resident_mib(tree: list[int]) -> int:
    """An upper bound of the tree's memory, cheap to read (`/proc/PID/status`, no walk of the
    mappings): each process's anonymous and shared resident memory, pages shared between them
    counted once per process."""
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith(("RssAnon:", "RssShmem:")):
                        total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total // 1024


def _tree_memory_mib(tree: list[int]) -> int:
    """The memory of the worker's processes in MiB: each one's proportional share of its anonymous
    and shared memory (`Pss_Anon` + `Pss_Shmem`: shared anonymous memory and /dev/shm mappings
    included, a page shared by several processes counted once in all; the code of the libraries
    it maps is not memory it asked for). Exact but costly to read (the kernel walks every
    mapping), so read only past the cheap bound."""
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii", errors="replace") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line and not line[0].isdigit())
        except (OSError, ValueError):
            continue
        parts = [fields.get("Pss_Anon"), fields.get("Pss_Shmem")]
        if None in parts:  # an older kernel: the whole proportional set size
            parts = [fields.get("Pss", "0 kB")]
        total += sum(int(part.split()[0]) for part in parts) * 1024
    return total // (1024 * 1024)


def _private_shm_mib(worker: int) -> int:
    """What the files in the worker's private /dev/shm hold, which no process needs to map."""
    try:
        shm = os.statvfs(f"/proc/{worker}/root{SHM}")
    except OSError:
        return 0
    return (shm.f_blocks - shm.f_bfree) * shm.f_frsize // (1024 * 1024)


def _own_shm(worker: int) -> bool:
    """Whether the worker's /dev/shm is its private tmpfs (sandbox.py), not the one seen here."""
    try:
        theirs, ours = os.stat(f"/proc/{worker}/root{SHM}"), os.stat(SHM)
    except OSError:
        return False
    return theirs.st_dev != ours.st_dev


def _shm_names() -> set[str]:
    try:
        return {os.path.join(SHM, name) for name in os.listdir(SHM)}
    except OSError:
        return set()


def _remove_shm(paths: set[str], before: set[str]) -> None:
    """The /dev/shm files the worker's tree created and left (a private /dev/shm needs none of
    this): the files it held open or mapped that were not there before it started."""
    for path in paths - before:
        if os.path.dirname(path) == SHM:
            try:
                os.unlink(path)
            except OSError:
                pass


#: After asking the worker for its stack at the time limit, how long its dump is waited for.
STACK_WAIT_S = 1.0


def _ask_for_stack(child: int, read_end: int, capture: "Capture") -> None:
    """At the time limit: SIGUSR1 makes the worker write its Python stack (faulthandler), so the
    launcher can say which line of the user's code was running."""
    try:
        os.kill(child, signal.SIGUSR1)
    except OSError:
        return
    deadline = time.monotonic() + STACK_WAIT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([read_end], [], [], 0.05)
        if not ready:
            continue
        chunk = os.read(read_end, 65536)
        if not chunk:
            return
        capture.add(chunk)
        deadline = min(deadline, time.monotonic() + 0.2)  # the dump is arriving: a moment for the rest


def _reap(child: int) -> int | None:
    """The worker's wait status once it has ended; reaps the orphans reparented here meanwhile."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return None
        if pid == 0:
            return None
        if pid == child:
            return status


def _wait(child: int) -> int | None:
    try:
        return os.waitpid(child, 0)[1]
    except ChildProcessError:
        return None


def _reap_others() -> None:
    """Collect the killed descendants, briefly: the keeper exits next anyway."""
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def _drain(read_end: int, capture: Capture) -> None:
    """Output already written when the worker ended (a crash dump), without waiting for EOF:
    processes it started may hold the pipe open until they are killed."""
    os.set_blocking(read_end, False)
    deadline = time.monotonic() + DRAIN_S
    while time.monotonic() < deadline:
        try:
            chunk = os.read(read_end, 65536)
        except BlockingIOError:
            if not select.select([read_end], [], [], 0.02)[0]:
                return
            continue
        if not chunk:
            return
        capture.add(chunk)


def _orphaned(plan: dict) -> None:
    """jaxlint is gone: no one will read this run or remove its scratch directory."""
    scratch = plan.get("scratch")
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)


# -- the worker, in the forked child --------------------------------------------------------------
def _worker(plan: dict, events_path: str, output: int, keeper: int) -> None:
    status = 3
    try:
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # Before die_with_parent: entering a user namespace clears the parent-death signal.
        isolation = isolate(int(plan.get("memory_limit") or 0), bool(plan.get("network")))
        with open(events_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": "isolation", "network_cut": isolation.network_cut,
                                     "shm_private": isolation.shm_private, "missing": isolation.missing}) + "\n")
        if not die_with_parent(signal.SIGKILL):
            _watch_keeper(keeper)
        if os.getppid() != keeper:
            _real_exit(1)
        _limit_resources(float(plan["timeout"]), plan.get("memory_limit", 0))
        from . import worker

        status = worker.main(plan, events_path)
    except BaseException as exc:  # noqa: B036 - a bug in the worker: say so, the launcher reports it
        import traceback

        traceback.print_exc()
        _report_internal(events_path, exc)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - the user's code may have closed or replaced them
            pass
    # Threads the user's code started must not keep the worker alive.
    _real_exit(status)


def _report_internal(events_path: str, exc: BaseException) -> None:
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    try:
        with open(events_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": "internal", "reason": reason}) + "\n")
    except OSError:
        pass


def _watch_keeper(keeper: int) -> None:
    """Without PR_SET_PDEATHSIG: leave when the keeper is gone."""

    def watch() -> None:
        while os.getppid() == keeper:
            time.sleep(0.5)
        _real_exit(1)

    threading.Thread(target=watch, name="jaxlint-keeper-watch", daemon=True).start()


def _limit_resources(timeout: float, memory_mib: int) -> None:
    if hasattr(signal, "alarm"):
        # SIGALRM's default action ends the process: a second time limit, should the keeper fail.
        signal.alarm(math.ceil(timeout) + ALARM_GRACE_S)
    try:
        import resource
    except ImportError:  # not on this platform: the keeper's time limit still holds
        return
    # CPU time counts every thread: a limit no run within the wall-clock limit can reach.
    cpu = math.ceil(timeout * max(1, os.cpu_count() or 1)) + ALARM_GRACE_S
    _set_limit(resource, resource.RLIMIT_CPU, cpu, cpu + ALARM_GRACE_S)
    _set_limit(resource, resource.RLIMIT_CORE, 0, 0)
    if memory_mib and memory_mib > 0:
        # RLIMIT_DATA, not RLIMIT_AS: XLA and CUDA reserve large address ranges they never touch.
        _set_limit(resource, resource.RLIMIT_DATA, memory_mib * 1024 * 1024, None)


def _set_limit(resource, which: int, soft: int, hard: int | None) -> None:
    try:
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            soft = min(soft, current_hard)
            hard = current_hard if hard is None else min(hard, current_hard)
        elif hard is None:
            hard = current_hard
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):
        pass


if __name__ == "__main__":
    _real_exit(main(sys.argv))
