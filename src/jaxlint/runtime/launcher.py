"""Running one worker per module, with a time limit, in a scratch copy, and reading what it reported.

A run (`RuntimeRun`, one per `confirm`) has one scratch directory (scratch.py). In it, each tree
the run's modules import from is copied once, and workers import the modules from that copy. A
worker is started through its keeper (keeper.py), which enforces the limits, captures the output
and kills whatever the worker leaves running. The worker writes an event line as it reaches each
step, so when it dies — killed at the time limit, a segfault in XLA, an `os._exit` in the user's
code — the finding it was checking gets the reason, and a fresh worker resumes with the findings
after it (at most `MAX_RUNS` workers per module). If it dies before the module is imported, every
finding of the module gets the reason. If it dies while running the program's entry points to record
the arguments of its calls (recording.py), one more worker checks the module without running them.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field

from ..model.settings import RuntimeSettings
from .processes import adopted, end_adopted, kill_group, kill_tree, set_subreaper
from .sandbox import scrubbed
from .scratch import Scratch, TreeCopy, copy_tree, remove_stale

#: Worker processes one module may use: the first, and restarts after a finding killed one.
MAX_RUNS = 3
#: The keeper enforces the time limit; the launcher waits this much longer before killing it too.
KEEPER_GRACE_S = 15
#: At most this much of the worker's captured output is read (the keeper keeps its head and tail).
OUTPUT_READ_BYTES = 256 * 1024
#: Keepers running now, and the runs whose scratch directory exists. Keepers run in their own
#: sessions, so Ctrl-C does not reach them: `stop_all`.
_LIVE: set[subprocess.Popen] = set()
_OPEN_RUNS: set[RuntimeRun] = set()
_LIVE_LOCK = threading.Lock()
_STOPPED = threading.Event()
_INTERRUPTED = "not checked: the run was interrupted"


#: Every keeper this process started (pids): the children it knows. Anything else that became its
#: child while runs were open was left behind by a keeper's tree (see `_Adoption`).
_KEEPERS: set[int] = set()


class _Adoption:
    """While runs are open, this process is a child subreaper (Linux): user code that kills its
    own keeper leaves what it started, even in a new session, below this process instead of
    init, and `sweep` ends it."""

    def __init__(self) -> None:
        self.open = 0
        self.present: set[int] = set()  # children this process had before: not the run's
        self.lock = threading.Lock()

    def start(self) -> None:
        with self.lock:
            if self.open == 0 and set_subreaper(True):
                self.present = {pid for pid, _ in adopted(set())}
            self.open += 1

    def sweep(self) -> None:
        with _LIVE_LOCK:  # no keeper is being started meanwhile: each is in _KEEPERS once it exists
            end_adopted(self.present | _KEEPERS)

    def stop(self) -> None:
        with self.lock:
            self.open -= 1
            if self.open == 0:
                self.sweep()
                set_subreaper(False)
                with _LIVE_LOCK:
                    _KEEPERS.clear()


_ADOPTION = _Adoption()


def allow_runs() -> None:
    """A new run starts: workers may be started again after an earlier `stop_all`; the scratch
    directories of runs that died without removing theirs are removed."""
    _STOPPED.clear()
    remove_stale()


def stop_all() -> None:
    """Kill every running worker with all it started, remove the scratch directories, and start
    no more workers (the run was interrupted)."""
    _STOPPED.set()
    with _LIVE_LOCK:
        for process in list(_LIVE):
            if process.poll() is None:
                kill_tree(process.pid)
        runs = list(_OPEN_RUNS)
    for run in runs:
        run.close()


@dataclass
class ModuleResult:
    #: finding index -> (verdict, evidence)
    verdicts: dict[int, tuple[str, str]] = field(default_factory=dict)
    device: str | None = None
    #: top-level statements that raised while the module was imported and were skipped: (line, error)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    #: what the worker could not isolate ("network and /dev/shm: the kernel refused ...")
    not_isolated: list[str] = field(default_factory=list)
    #: environment variables left out of the worker's environment as credentials
    scrubbed: list[str] = field(default_factory=list)


class RuntimeRun:
    """One runtime run: its scratch directory, the copies of the trees its modules import from,
    and a worker (or a few, after crashes) per module. `close()` removes the scratch directory."""

    def __init__(self, runtime: RuntimeSettings, device: str | None, enable_x64: bool = False) -> None:
        self.runtime, self.device, self.enable_x64 = runtime, device, enable_x64
        self._lock = threading.Lock()
        self._scratch: Scratch | None = None
        self._trees: dict[str, TreeCopy] = {}
        self._numbers = itertools.count()

    def check_module(self, payload: dict) -> ModuleResult:
        result = ModuleResult()
        entries = payload["findings"]
        if _STOPPED.is_set():
            _all_remaining(result, entries, 0, _INTERRUPTED)
            return result
        try:
            scratch, tree = self._tree_for(payload)
            directory = os.path.join(scratch.path, f"module-{next(self._numbers)}")
            os.mkdir(directory)
        except OSError as exc:
            reason = _INTERRUPTED if _STOPPED.is_set() else \
                f"the module could not be copied to a scratch directory: {exc}"
            _all_remaining(result, entries, 0, reason)
            return result
        try:
            _run_all(result, _in_copy(payload, tree), scratch.path, directory, self.runtime, self.device,
                     self.enable_x64)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        result.verdicts = {index: (verdict, tree.to_original(evidence))
                           for index, (verdict, evidence) in result.verdicts.items()}
        return result

    def close(self) -> None:
        with self._lock:
            if self._scratch is not None:
                self._scratch.remove()
                self._scratch = None
                self._trees.clear()
                _ADOPTION.stop()
        with _LIVE_LOCK:
            _OPEN_RUNS.discard(self)

    def _tree_for(self, payload: dict) -> tuple[Scratch, TreeCopy]:
        """The copy of the tree the module is imported from, made by the first module that needs it."""
        with self._lock:
            if _STOPPED.is_set():
                raise InterruptedError("the run was interrupted")  # and its scratch directory removed
            if self._scratch is None:
                self._scratch = Scratch()
                _ADOPTION.start()
                with _LIVE_LOCK:
                    _OPEN_RUNS.add(self)
            base, first, walk_from = _tree_of(payload)
            tree = self._trees.get(base)
            if tree is None:
                target = os.path.join(self._scratch.path, f"tree-{len(self._trees)}")
                tree = self._trees[base] = copy_tree(base, target, first, walk_from)
            else:
                tree.ensure(first)  # left out by the budget of an earlier module's copy
            return self._scratch, tree


def _tree_of(payload: dict) -> tuple[str, list[str], list[str]]:
    """What to copy for a module: the base directory — its import root, or the whole project when
    the root is inside it — the files it needs first (itself, its packages' `__init__.py`, its
    `jaxlint_examples.py`), and the directories to walk before the rest of the base (its import
    roots)."""
    path, roots = payload["path"], payload["roots"]
    root = roots[0]
    project = payload.get("project")
    base = project if project and _inside(root, project) else root
    first = [path, os.path.join(os.path.dirname(path), "jaxlint_examples.py")]
    directory = os.path.dirname(path)
    while _inside(directory, root) and directory != root:
        first.append(os.path.join(directory, "__init__.py"))
        directory = os.path.dirname(directory)
    return base, first, [r for r in roots if _inside(r, base)]


def _in_copy(payload: dict, tree: TreeCopy) -> dict:
    """The payload with the module and its import roots in the copy; the roots themselves stay on
    the path after the copies, for what the copy's budget left out."""
    copied = [tree.to_copy(root) for root in payload["roots"]]
    roots = copied + [root for root in payload["roots"] if root not in copied]
    return {**payload, "path": tree.to_copy(payload["path"]), "roots": roots}


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _run_all(result: ModuleResult, payload: dict, scratch: str, directory: str, runtime: RuntimeSettings,
             device: str | None, enable_x64: bool) -> None:
    entries = payload["findings"]
    start, number, runs = 0, -1, MAX_RUNS
    while number + 1 < runs:
        number += 1
        if start >= len(entries):
            return
        if _STOPPED.is_set():
            _all_remaining(result, entries, start, _INTERRUPTED)
            return
        try:
            run = _spawn({**payload, "start": start, "device": device, "memory_limit": runtime.memory_limit,
                          "enable_x64": enable_x64, "network": runtime.network, "pass_env": list(runtime.pass_env)},
                         scratch, os.path.join(directory, f"run-{number}"),
                         runtime.timeout)
        except OSError as exc:
            _all_remaining(result, entries, start, f"the worker process could not be started: {exc}")
            return
        result.device = run.device or result.device
        result.verdicts.update(run.verdicts)
        result.skipped = result.skipped or run.skipped  # each worker imports the module again
        result.scrubbed = run.scrubbed
        if run.isolation is not None:
            result.not_isolated = list(run.isolation.get("missing") or [])
        if _STOPPED.is_set():
            _all_remaining(result, entries, start, _INTERRUPTED)
            return
        if run.fatal:
            _all_remaining(result, entries, start, run.fatal)
            return
        if run.finished:
            return
        if run.current is None and run.recording:
            # The program's entry points, run for their calls' arguments, ended the worker: the
            # next one does without them.
            payload, runs = {**payload, "record": False}, runs + 1
            continue
        if run.current is None:  # died before checking a finding: starting JAX or importing the module
            _all_remaining(result, entries, start, _death(run, runtime, "import" if run.ready else "start"))
            return
        result.verdicts[run.current] = ("inconclusive", _death(run, runtime, "check"))
        position = next(i for i, e in enumerate(entries) if e["index"] == run.current)
        start = position + 1
    _all_remaining(result, entries, 0, "not checked: the worker process was stopped repeatedly by earlier findings")


def _all_remaining(result: ModuleResult, entries: list[dict], start: int, reason: str) -> None:
    for entry in entries[start:]:
        result.verdicts.setdefault(entry["index"], ("inconclusive", reason))


# -- one worker ---------------------------------------------------------------------------------
@dataclass
class _Run:
    verdicts: dict[int, tuple[str, str]] = field(default_factory=dict)
    device: str | None = None
    skipped: list[tuple[int, str]] = field(default_factory=list)
    ready: bool = False
    current: int | None = None
    recording: bool = False  # running the program's entry points for their calls' arguments
    finished: bool = False
    fatal: str | None = None
    internal: str | None = None  # the worker's own bug, as it reported it
    exit: dict | None = None  # how the worker ended, from its keeper
    exit_line: int | None = None  # the user's line that called os._exit
    returncode: int | None = None  # the keeper's
    timed_out: bool = False  # the keeper itself had to be killed
    log: str = ""
    keeper_log: str = ""
    path: str = ""
    scrubbed: list[str] = field(default_factory=list)  # credentials left out of its environment
    isolation: dict | None = None  # what the worker could not isolate (network, /dev/shm), from its keeper


def _spawn(payload: dict, scratch: str, run_dir: str, timeout: float) -> _Run:
    """One worker (through its keeper) in `run_dir`; `scratch` is what the keeper removes if
    jaxlint dies meanwhile."""
    work = os.path.join(run_dir, "cwd")
    os.makedirs(work)
    plan = {**payload, "parent": os.getpid(), "scratch": scratch, "timeout": timeout}
    with open(os.path.join(run_dir, "plan.json"), "w", encoding="utf-8") as handle:
        json.dump(plan, handle, default=str)  # TOML dates in examples become strings
    events_path = os.path.join(run_dir, "events.jsonl")
    open(events_path, "w").close()
    run = _Run(path=payload["path"])
    environment, run.scrubbed = _environment(payload.get("device"), payload.get("pass_env", ()))
    with open(os.path.join(run_dir, "keeper.log"), "wb") as keeper_log, _LIVE_LOCK:
        process = subprocess.Popen(
            [sys.executable, "-m", "jaxlint.runtime.keeper", run_dir],
            cwd=work, env=environment, stdin=subprocess.DEVNULL,
            stdout=keeper_log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        _LIVE.add(process)
        _KEEPERS.add(process.pid)
        stopped = _STOPPED.is_set()  # `stop_all` ran while it was starting, and did not see it
    try:
        if stopped:
            kill_tree(process.pid)
        try:
            run.returncode = process.wait(timeout=timeout + KEEPER_GRACE_S)
        except subprocess.TimeoutExpired:
            run.timed_out = True
            kill_tree(process.pid)
            run.returncode = process.wait()
    finally:
        if process.returncode is None:  # interrupted while waiting: take the tree down before leaving
            kill_tree(process.pid)
            process.wait()
        kill_group(process.pid)  # anything left in its session (where /proc could not be walked)
        with _LIVE_LOCK:
            _LIVE.discard(process)
        _ADOPTION.sweep()  # what the user's code started and then orphaned by killing its keeper
    run.log = _read_bounded(os.path.join(run_dir, "output.log"), OUTPUT_READ_BYTES)
    run.keeper_log = _read_bounded(os.path.join(run_dir, "keeper.log"), 16 * 1024)
    _read_events(events_path, run)
    return run


#: Seconds the device check may take: importing JAX and asking it for its devices.
DEVICE_CHECK_S = 120
_DEVICE_CHECK = """
import sys
import jax
try:
    jax.devices(sys.argv[1])
except Exception as exc:
    print(" ".join(str(exc).split())[:240] or type(exc).__name__)
    sys.exit(3)
"""


def missing_device(device: str) -> str | None:
    """Why the `--device` kind is not there (JAX's reason, and what is), or None when it is: asked
    once, up front, in a process of its own (asking imports JAX and may start a backend)."""
    environment, _ = _environment(device)
    try:
        done = subprocess.run([sys.executable, "-c", _DEVICE_CHECK, device], env=environment,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=DEVICE_CHECK_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"could not ask JAX for its devices: {exc}"
    if done.returncode == 0:
        return None
    lines = done.stdout.strip().splitlines() or [" ".join(done.stderr.split())[-200:] or "JAX could not start"]
    return "; ".join(lines)


def _read_bounded(path: str, limit: int) -> str:
    """The end of a file, at most `limit` bytes of it; "" when it is gone (the run was stopped)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - limit))
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _environment(device: str | None, passed=()) -> tuple[dict[str, str], list[str]]:
    """The keeper's (and so the worker's) environment, and the names of the credentials left out."""
    env, dropped = scrubbed(dict(os.environ), tuple(passed))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    # Several workers may share one accelerator: allocate as needed instead of 75% up front.
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if device in ("cpu", "tpu"):
        env["JAX_PLATFORMS"] = device  # the worker still checks that such a device exists
    elif device == "gpu":
        env.pop("JAX_PLATFORMS", None)  # "gpu" means CUDA or ROCm: let JAX find which
    # The worker runs in another directory: relative entries of PYTHONPATH mean this one.
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) if p else p for p in env["PYTHONPATH"].split(os.pathsep))
    # jaxlint's own import path must reach the worker, whether installed or run from a checkout.
    # Only added when this process found it through its working directory, which the worker lacks.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    if package_root not in {os.path.realpath(p) for p in sys.path if p}:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return env, dropped


def _read_events(path: str, run: _Run) -> None:
    try:
        handle = open(path, encoding="utf-8", errors="replace")
    except OSError:
        return  # removed: the run was stopped
    with handle:
        for line in handle:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut short by the process dying
            kind = event.get("event")
            if kind == "ready":
                run.ready, run.device = True, event.get("device")
            elif kind == "recording":
                run.recording = True
            elif kind == "recorded":
                run.recording = False
            elif kind == "start":
                run.current = event.get("index")
            elif kind == "result":
                run.verdicts[event["index"]] = (event["verdict"], event["evidence"])
                run.current = None
            elif kind == "skipped":
                run.skipped.append((event.get("line"), event.get("error", "")))
            elif kind == "done":
                run.finished = True
            elif kind == "fatal":
                run.fatal = event.get("reason") or "the worker could not start"
            elif kind == "internal":
                run.internal = event.get("reason") or "no message"
            elif kind == "exit-call":
                run.exit_line = event.get("line")
            elif kind == "exit":
                run.exit = event
            elif kind == "isolation":
                run.isolation = event


_PHASES = {"start": "while starting JAX", "import": "while importing the module",
           "check": "while checking this finding"}
_SIGNALS = {"SIGSEGV": " (segmentation fault)", "SIGBUS": " (bus error)", "SIGABRT": " (aborted)",
            "SIGKILL": " (out of memory?)"}


def _death(run: _Run, runtime: RuntimeSettings, phase: str) -> str:
    """Why the worker stopped early, in words, with the user's line when it is known."""
    during = _PHASES[phase]
    if run.internal:
        return f"internal error in the worker: {run.internal[:200]} {during} (please report this)"
    ended = run.exit
    if run.timed_out or (ended and ended.get("timed_out")):
        return _time_limit(run, runtime, during)
    if ended and ended.get("memory_mib") is not None:
        return (f"memory limit ({runtime.memory_limit} MiB) reached {during}: the worker's processes used "
                f"{ended['memory_mib']} MiB, shared memory included; raise `memory-limit` in "
                f"[tool.jaxlint.runtime] to let it finish")
    if ended is None:  # the keeper did not say: it was killed, or failed itself
        if run.returncode is not None and run.returncode < 0:
            return f"the worker process was killed: {_signal_name(-run.returncode)} {during}"
        last = [text for text in run.keeper_log.strip().splitlines() if text.strip()][-1:] or ["no message"]
        return f"internal error in the worker: {last[0][:200]} {during} (please report this)"
    line = run.exit_line or _crash_line(run.log, run.path)
    at = f" at line {line}" if line else ""
    if ended.get("signal") is not None:
        name = _signal_name(ended["signal"])
        if name == "SIGXCPU":
            return f"CPU time limit reached {during}"
        if name == "SIGALRM":
            return _time_limit(run, runtime, during)
        return f"the worker process crashed: {name}{_SIGNALS.get(name, '')}{at} {during}"
    how = " (os._exit)" if run.exit_line is not None else ""
    status = ended.get("status")
    if phase == "import":
        return f"the module exited with status {status}{how}{at} while being imported"
    if phase == "check":
        return f"the code exited with status {status}{how}{at} {during}"
    return f"the worker process exited with status {status} {during}"


def _time_limit(run: _Run, runtime: RuntimeSettings, during: str) -> str:
    """The time limit, the user's line the worker was running when it was reached (from the stack
    the worker dumped when its keeper asked), and the setting to raise."""
    line = _crash_line(run.log, run.path)
    at = f" at line {line}" if line else ""
    return (f"time limit ({runtime.timeout:g} s) reached{at} {during}; raise `timeout` in "
            f"[tool.jaxlint.runtime] to let it finish")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _crash_line(log: str, path: str) -> int | None:
    """The innermost line of `path` in faulthandler's dump (`File "…", line N in …`)."""
    real = os.path.realpath(path)
    found = None
    for match in re.finditer(r'File "([^"]+)", line (\d+)', log):
        if os.path.realpath(match.group(1)) == real:
            found = found or int(match.group(2))  # faulthandler lists the innermost frame first
    return found
