"""Running the analysis of a file on a thread with a deep stack.

Code that CPython compiles can still be deep: a 3,000-level chain of calls or conditional
expressions, a `+` or `and` chain of thousands of terms, an `elif` ladder of hundreds of branches.
libcst's parser recurses natively once per level, libcst's own Python code and jaxlint's walks and
interpreters recurse in Python, and a main thread's stack (8 MB) and Python's default recursion
limit (1,000) are far too small for that. Rather than rewrite every recursive walk, the analysis of
each file runs on one reused thread whose stack is large (reserved address space: the memory is only
touched as deep as a file needs), with the recursion limit raised to what that stack can hold
while it runs. A file deeper still gets a RecursionError, which the checker turns into a note of what
was skipped rather than a crash.

The thread is started on first use in each process (a forked worker gets its own), and runs one
file at a time. Where it cannot be started, or while a profiler watches the calling thread (a
profiler follows only its own thread), the analysis runs on the calling thread with the limits
that thread has.
"""
from __future__ import annotations

import os
import queue
import sys
import threading
from typing import Any, Callable, TypeVar

T = TypeVar("T")

#: The stack of the analysis thread (address space reserved, not memory used), largest first: a
#: system that refuses the first gets the next.
STACK_SIZES = (1 << 30, 256 << 20)
#: Python frames allowed per byte of that stack: a frame called through C code (a sort key, a
#: constructor, `yield from`) takes up to ~5 KB of it, one called from Python code none.
BYTES_PER_FRAME = 8 << 10
#: Stack the calling thread is assumed to have when the analysis runs there (Linux's default).
CALLER_STACK = 8 << 20


class _Worker:
    """A daemon thread running one job at a time; back among the idle ones once a job is done."""

    def __init__(self, stack_size: int) -> None:
        self.stack_size = stack_size
        self.jobs: "queue.SimpleQueue[_Job]" = queue.SimpleQueue()
        previous = threading.stack_size()
        try:
            threading.stack_size(stack_size)
            self.thread = threading.Thread(target=self._serve, name="jaxlint-analysis", daemon=True)
            self.thread.start()
        finally:
            threading.stack_size(previous)

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job.result = job.function(*job.args)
            except BaseException as exc:  # handed to the caller, which raises it
                job.error = exc
            # idle again before the caller wakes, so that its next file finds this thread free;
            # a caller that gave up waiting (an interrupt) leaves the thread to the next one
            with _lock:
                if _state.pid == os.getpid():
                    _state.idle.append(self)
            job.done.set()
            # the job holds what it analysed (a whole project's trees): not this thread's to keep
            # until the next one comes
            del job


class _Job:
    __slots__ = ("function", "args", "result", "error", "done")

    def __init__(self, function: Callable[..., Any], args: tuple) -> None:
        self.function = function
        self.args = args
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class _State:
    """The analysis threads of this process, and the recursion limit to restore."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.idle: list[_Worker] = []
        #: the stack size that could be had (tried largest first); 0 when no thread can be started
        self.stack_size: int | None = None
        self.running = 0
        self.saved_limit = 0


_lock = threading.Lock()
_state = _State()


def _after_fork() -> None:
    # the threads stay behind in the parent, and a lock held there would stay held here
    global _lock, _state
    _lock = threading.Lock()
    _state = _State()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _take_worker() -> _Worker | None:
    """An idle analysis thread, started if need be (called with the lock held)."""
    if _state.idle:
        return _state.idle.pop()
    sizes = STACK_SIZES if _state.stack_size is None else (_state.stack_size,)
    for size in sizes:
        if not size:
            continue
        try:
            worker = _Worker(size)
        except (RuntimeError, ValueError, MemoryError):
            continue
        _state.stack_size = size
        return worker
    _state.stack_size = 0
    return None


def stack_depth_available() -> int:
    """Bytes of stack `call_with_deep_stack` runs its function with (for callers that must bound
    native recursion, which no recursion limit catches)."""
    if sys.getprofile() is not None:
        return CALLER_STACK
    with _lock:
        if _state.stack_size is None:
            worker = _take_worker()
            if worker is not None:
                _state.idle.append(worker)
        return _state.stack_size or CALLER_STACK


def call_with_deep_stack(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` on an analysis thread, with the recursion limit its stack allows; on the
    calling thread when that is not possible. Its exception, if any, is raised here."""
    if sys.getprofile() is not None:
        return function(*args)
    state = _state
    with _lock:
        worker = _take_worker()
        if worker is None:
            return function(*args)
        if state.running == 0:
            state.saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(state.saved_limit, worker.stack_size // BYTES_PER_FRAME))
        state.running += 1
    job = _Job(function, args)
    try:
        worker.jobs.put(job)
        job.done.wait()
    finally:
        with _lock:
            state.running -= 1
            if state.running == 0:
                sys.setrecursionlimit(state.saved_limit)
    if job.error is not None:
        raise job.error
    return job.result
