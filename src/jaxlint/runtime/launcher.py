"""Running one worker process per module, with a time limit, and reading what it reported.

The worker writes an event line as it reaches each step, so when it dies — killed at the time
limit, a segfault in XLA, an `os._exit` in the user's code — the finding it was checking gets the
reason, and a fresh worker resumes with the findings after it (at most `MAX_RUNS` workers per
module). If it dies before the module is imported, every finding of the module gets the reason.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field

from ..model.settings import RuntimeSettings

#: Worker processes one module may use: the first, and restarts after a finding killed one.
MAX_RUNS = 3
#: Workers running now. They run in their own sessions, so Ctrl-C does not reach them: `stop_all`.
_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()
_STOPPED = threading.Event()


def allow_runs() -> None:
    """A new run starts: workers may be started again after an earlier `stop_all`."""
    _STOPPED.clear()


def stop_all() -> None:
    """Kill every running worker and start no more (the run was interrupted)."""
    _STOPPED.set()
    with _LIVE_LOCK:
        for process in list(_LIVE):
            _kill(process)


@dataclass
class ModuleResult:
    #: finding index -> (verdict, evidence)
    verdicts: dict[int, tuple[str, str]] = field(default_factory=dict)
    device: str | None = None


def run_module(payload: dict, runtime: RuntimeSettings, device: str | None, enable_x64: bool = False) -> ModuleResult:
    result = ModuleResult()
    entries = payload["findings"]
    start = 0
    for _ in range(MAX_RUNS):
        if start >= len(entries):
            break
        if _STOPPED.is_set():
            _all_remaining(result, entries, start, "not checked: the run was interrupted")
            return result
        try:
            run = _spawn({**payload, "start": start, "device": device, "memory_limit": runtime.memory_limit,
                          "enable_x64": enable_x64}, runtime.timeout)
        except OSError as exc:
            _all_remaining(result, entries, start, f"the worker process could not be started: {exc}")
            return result
        result.device = run.device or result.device
        result.verdicts.update(run.verdicts)
        if run.fatal:
            _all_remaining(result, entries, start, run.fatal)
            return result
        if run.finished:
            break
        reason = _death(run, runtime)
        if run.current is None:  # died before checking a finding: starting JAX or importing the module
            phase = "while importing the module" if run.ready else "while starting JAX"
            _all_remaining(result, entries, start, f"{reason} {phase}")
            return result
        result.verdicts[run.current] = ("inconclusive", f"{reason} while checking this finding")
        position = next(i for i, e in enumerate(entries) if e["index"] == run.current)
        start = position + 1
    _all_remaining(result, entries, 0, "not checked: the worker process was stopped repeatedly by earlier findings")
    return result


def _all_remaining(result: ModuleResult, entries: list[dict], start: int, reason: str) -> None:
    for entry in entries[start:]:
        result.verdicts.setdefault(entry["index"], ("inconclusive", reason))


@dataclass
class _Run:
    verdicts: dict[int, tuple[str, str]] = field(default_factory=dict)
    device: str | None = None
    ready: bool = False
    current: int | None = None
    finished: bool = False
    fatal: str | None = None
    returncode: int | None = None
    timed_out: bool = False
    log: str = ""
    path: str = ""


def _spawn(payload: dict, timeout: float) -> _Run:
    scratch = tempfile.mkdtemp(prefix="jaxlint-runtime-")
    try:
        plan_path = os.path.join(scratch, "plan.json")
        events_path = os.path.join(scratch, "events.jsonl")
        log_path = os.path.join(scratch, "worker.log")
        work = os.path.join(scratch, "cwd")
        os.mkdir(work)
        with open(plan_path, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, default=str)  # TOML dates in examples become strings
        open(events_path, "w").close()
        run = _Run(path=payload["path"])
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "jaxlint.runtime.worker", plan_path, events_path],
                cwd=work, env=_environment(payload.get("device")), stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
            with _LIVE_LOCK:
                _LIVE.add(process)
            try:
                run.returncode = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                run.timed_out = True
                _kill(process)
                run.returncode = process.wait()
            finally:
                _kill(process)  # whatever it started in its session goes too
                with _LIVE_LOCK:
                    _LIVE.discard(process)
        with open(log_path, "rb") as handle:
            run.log = handle.read()[-20000:].decode("utf-8", "replace")
        _read_events(events_path, run)
        return run
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _environment(device: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    # Several workers may share one accelerator: allocate as needed instead of 75% up front.
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if device in ("cpu", "tpu"):
        env["JAX_PLATFORMS"] = device  # the worker still checks that such a device exists
    elif device == "gpu":
        env.pop("JAX_PLATFORMS", None)  # "gpu" means CUDA or ROCm: let JAX find which
    # jaxlint's own import path must reach the worker, whether installed or run from a checkout.
    # Only added when this process found it through its working directory, which the worker lacks.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    if package_root not in {os.path.realpath(p) for p in sys.path if p}:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return env


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _read_events(path: str, run: _Run) -> None:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut short by the process dying
            kind = event.get("event")
            if kind == "ready":
                run.ready, run.device = True, event.get("device")
            elif kind == "start":
                run.current = event.get("index")
            elif kind == "result":
                run.verdicts[event["index"]] = (event["verdict"], event["evidence"])
                run.current = None
            elif kind == "done":
                run.finished = True
            elif kind == "fatal":
                run.fatal = event.get("reason") or "the worker could not start"


def _death(run: _Run, runtime: RuntimeSettings) -> str:
    """Why the worker stopped early, in words, with the user's line when the log shows it."""
    if run.timed_out:
        return f"time limit ({runtime.timeout:g} s) reached"
    code = run.returncode
    line = _crash_line(run.log, run.path)
    at = f" at line {line}" if line else ""
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        what = {"SIGSEGV": " (segmentation fault)", "SIGBUS": " (bus error)", "SIGABRT": " (aborted)",
                "SIGKILL": " (out of memory?)"}.get(name, "")
        return f"the worker process crashed: {name}{what}{at}"
    if code == 3:
        last = [text for text in run.log.strip().splitlines() if text.strip()][-1:] or ["no message"]
        return f"internal error in the worker: {last[0][:200]} (please report this)"
    return f"the worker process exited with status {code}{at} (the code called os._exit or similar)"


def _crash_line(log: str, path: str) -> int | None:
    """The innermost line of `path` in faulthandler's dump (`File "…", line N in …`)."""
    real = os.path.realpath(path)
    found = None
    for match in re.finditer(r'File "([^"]+)", line (\d+)', log):
        if os.path.realpath(match.group(1)) == real:
            found = found or int(match.group(2))  # faulthandler lists the innermost frame first
    return found
