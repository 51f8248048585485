"""Stopping a run on SIGINT, SIGTERM or SIGHUP: the signal becomes `RunStopped` in the main thread.

A Python signal handler runs between two bytecodes of the main thread, wherever it happens to be,
and an exception raised there is swallowed when that place is a finalizer or a fork hook (printed
as "Exception ignored in ..."): the run would go on as if nothing happened. So the handler also
records the signal, and the long loops (the worker pool) call `raise_if_stopped` to raise it again.
"""
from __future__ import annotations

import contextlib
import signal
from typing import Iterator

#: the signals that stop a run, where the platform has them
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class RunStopped(KeyboardInterrupt):
    """A stop signal, raised in the main thread; a KeyboardInterrupt, so that whatever cleans up
    after Ctrl-C (worker processes terminated, temporary files removed) does it for all of them."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_received: int | None = None


def raise_if_stopped() -> None:
    """Raise `RunStopped` again if a stop signal came (its first raise may have been swallowed)."""
    if _received is not None:
        raise RunStopped(_received)


@contextlib.contextmanager
def signals_stop_the_run() -> Iterator[None]:
    """While the block runs, SIGINT, SIGTERM and SIGHUP raise RunStopped; the previous handlers come
    back afterwards (the command may run inside a host program, or a test). A signal that was
    ignored (`nohup`, a background job's SIGINT) or has a handler of the host's stays as it was."""
    global _received

    def stop(signum, frame):
        global _received
        _received = signum
        raise RunStopped(signum)

    _received = None
    previous = {}
    try:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) in (signal.SIG_DFL, signal.default_int_handler):
                previous[signum] = signal.signal(signum, stop)
    except ValueError:  # not the main thread: signals stay as they are
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _received = None


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Stop signals wait until the block is over (where the platform can hold them): around a fork,
    so that the handler never runs inside the fork hooks, where its exception would be lost, and
    the child starts with them held until it sets its own handlers (`release_signals`)."""
    block = getattr(signal, "pthread_sigmask", None)
    if block is None:
        yield
        return
    previous = block(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        block(signal.SIG_SETMASK, previous)


def release_signals() -> None:
    """In a forked child: let the stop signals through again (see `signals_held`)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
