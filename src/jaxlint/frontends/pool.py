"""Checking files in worker processes that may die.

A file can kill the process that checks it: libcst's native parser overflows its stack on some
deeply nested code (SIGSEGV), the kernel's OOM killer picks the biggest process, someone sends a
signal. A `multiprocessing.Pool` then waits forever for the lost task. Here each worker is given
one file at a time, so when a worker dies the file it was checking is known. A fresh worker takes
over and checks that file once more (the death may have had nothing to do with it: the OOM killer,
a signal sent to the worker between two files); if it dies again the file gets a one-line internal
error. Every other file is still checked.

`check_in_workers` with one job is how the command line checks a few files too: one forked child
costs about 5 ms, and a crash then loses one file instead of the whole run. Where `fork` cannot be
used (no such start method, or JAX already imported by a program embedding jaxlint: forking a
process running JAX's threads can deadlock), a single job runs in this process instead (see
`start_method`).

Workers ignore SIGINT (the terminal sends Ctrl-C to the whole process group; the parent decides)
and take SIGTERM and SIGHUP with the default action, so that stopping them never prints a
traceback. The parent holds the stop signals while it forks (stopping.py says why). When the
parent stops early (an exception, a signal turned into one), the workers are terminated before
the exception goes on. A worker whose parent disappears (SIGKILL) notices within a second and
exits.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections import deque
from multiprocessing.connection import wait
from typing import Callable, Sequence

from ..model.result import FileResult
from .stopping import raise_if_stopped, release_signals, signals_held

#: seconds a worker waits for its next file before checking that its parent is still there
_PARENT_CHECK_INTERVAL = 0.5
#: seconds given to workers to exit after the last file, and after SIGTERM, before SIGKILL
_EXIT_GRACE = 2.0
#: how many workers a file may see die before it is reported as their cause
_ATTEMPTS = 2

Check = Callable[[str], FileResult]


def start_method(jobs: int) -> str | None:
    """The multiprocessing start method for `jobs` workers; None: check in this process.

    `fork` costs a few milliseconds and shares the imported analyzer; it is used unless JAX is
    loaded in this process (a host program embedding jaxlint). Several jobs then use the platform's
    default method (their start-up cost is spread over many files); one job runs in this process.
    """
    forkable = "fork" in multiprocessing.get_all_start_methods() and "jax" not in sys.modules
    if forkable:
        return "fork"
    if jobs > 1:
        return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    return None


def check_in_workers(paths: Sequence[str], check: Check, jobs: int, method: str,
                     on_result: Callable[[int, FileResult], None]) -> None:
    """Check every path with `check` in up to `jobs` worker processes; `on_result(index, result)`
    for each path as its result arrives (in any order). `check` must return, not raise, and with a
    start method other than fork it must be picklable."""
    context = multiprocessing.get_context(method)
    pending = deque(enumerate(paths))
    deaths: dict[int, int] = {}
    workers: list[_Worker] = []
    retired: list[_Worker] = []
    finished = False
    try:
        while pending or workers:
            for worker in [w for w in workers if w.task is None]:
                if pending:
                    worker.give(pending.popleft())
                else:
                    worker.retire()
                    workers.remove(worker)
                    retired.append(worker)
            while pending and len(workers) < jobs:
                _Worker(context, check, workers).give(pending.popleft())
            if not workers:
                break
            raise_if_stopped()
            ready = set(wait([w.connection for w in workers] + [w.process.sentinel for w in workers]))
            raise_if_stopped()
            for worker in list(workers):
                if worker.connection in ready or worker.process.sentinel in ready:
                    task, result = worker.take()
                    if not worker.alive:
                        worker.close()
                        workers.remove(worker)
                    if result is None:
                        deaths[task[0]] = deaths.get(task[0], 0) + 1
                        if deaths[task[0]] < _ATTEMPTS:
                            pending.appendleft(task)
                            continue
                        result = FileResult(task[1], internal_error=death_message(worker.process.exitcode))
                    on_result(task[0], result)
        finished = True
    finally:
        _stop(workers, graceful=finished)
        _stop(retired, graceful=True)


class _Worker:
    def __init__(self, context, check: Check, workers: list[_Worker]) -> None:
        """Start a worker and add it to `workers` before a stop signal can interrupt: whatever
        stops the run next finds it there and terminates it."""
        # Anything buffered now would be written again by the child when it exits.
        _flush_standard_streams()
        self.connection, child_end = context.Pipe()
        # the parent's pid as the parent knows it: a worker that asked for it itself, after a parent
        # killed while it started, would get its new parent's and never notice the loss
        self.process = context.Process(target=_serve, args=(child_end, check, os.getpid()), daemon=True)
        self.task: tuple[int, str] | None = None
        self.alive = True
        with signals_held():
            self.process.start()
            workers.append(self)
        # Closed at once, so that workers forked later never hold this pipe's child end: the
        # parent must read EOF when this worker dies.
        child_end.close()

    def give(self, task: tuple[int, str]) -> None:
        self.task = task
        try:
            self.connection.send(task)
        except OSError:  # it died since its last file; `take` finds out
            pass

    def take(self) -> tuple[tuple[int, str], FileResult | None]:
        """The file given last and its result; None when the worker died before sending it."""
        task, self.task = self.task, None
        try:
            if self.connection.poll():
                index, result = self.connection.recv()
                if index == task[0] and isinstance(result, FileResult):
                    self.alive = not _is_ready(self.process.sentinel)
                    return task, result
        except (EOFError, OSError, ValueError, TypeError):  # died while sending
            pass
        self.alive = False
        self.process.join(_EXIT_GRACE)
        return task, None

    def retire(self) -> None:
        try:
            self.connection.send(None)
        except OSError:
            pass

    def close(self) -> None:
        self.process.join(_EXIT_GRACE)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
        self.connection.close()


def _stop(workers: list[_Worker], graceful: bool) -> None:
    """Every worker gone, none left behind: asked to exit after the last file, terminated otherwise."""
    for worker in workers:
        if graceful:
            worker.retire()
        elif worker.process.exitcode is None:
            worker.process.terminate()
    for worker in workers:
        worker.close()


def death_message(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown signal"
        cause = {signal.SIGSEGV: "; a stack overflow in the parser on deeply nested code is the usual cause",
                 signal.SIGKILL: "; the system kills the biggest process when memory runs out"}.get(-exitcode, "")
        how = f"died (signal {-exitcode}, {name}{cause})"
    elif exitcode is None:
        how = "stopped answering"
    else:
        how = f"exited with status {exitcode}"
    return f"the checker process {how} while checking this file; the other files were checked (please report this)"


def _serve(connection, check: Check, parent: int) -> None:
    """A worker: check the paths the parent (`parent`, its pid) sends, one at a time, until it sends
    None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    release_signals()  # held by the parent around the fork
    while True:
        while not connection.poll(_PARENT_CHECK_INTERVAL):
            if os.getppid() != parent:
                return
        try:
            task = connection.recv()
        except (EOFError, OSError):
            return
        if task is None:
            finish = getattr(check, "finish", None)
            if finish is not None:  # what the worker keeps for later runs (a project's index)
                try:
                    finish()
                except Exception:  # only a cache: never a reason to fail the run
                    pass
            return
        index, path = task
        try:
            result = check(path)
        except Exception as exc:  # `check` reports its own failures; this is the last resort
            result = FileResult(path, internal_error=f"{type(exc).__name__}: {exc} (please report this)")
        try:
            connection.send((index, result))
        except (OSError, ValueError):
            return
        except Exception as exc:  # a result that cannot be pickled
            connection.send((index, FileResult(path, internal_error=f"cannot send the result: {exc}")))


def _is_ready(sentinel) -> bool:
    return bool(wait([sentinel], 0))


def _flush_standard_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
