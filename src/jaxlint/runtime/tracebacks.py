"""Where in the user's file an exception was raised, and which lines a call ran.

JAX filters its own frames out of tracebacks and sometimes re-raises; the worker turns the
filtering off, and these helpers also follow `__cause__`/`__context__`, so the user's frames are
found either way. Confirmers of other families may use them too.
"""
from __future__ import annotations

import os
import sys
import traceback
from contextlib import contextmanager
from typing import Iterator


def same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def frames_in(exc: BaseException, path: str, module_level: bool = False) -> list[tuple[int, int]]:
    """(line, end line) of each frame of `path` in the exception's traceback, innermost last.

    The first exception of the chain (the exception, then its cause or context) that has frames
    in the file is the one read. `module_level`: only the frames of the module's own code.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        found = [(f.lineno, getattr(f, "end_lineno", None) or f.lineno)
                 for f in traceback.extract_tb(exc.__traceback__)
                 if f.lineno is not None and same_file(f.filename, path)
                 and (not module_level or f.name == "<module>")]
        if found:
            return found
        exc = exc.__cause__ or exc.__context__
    return []


def raised_at(exc: BaseException, path: str, within: tuple[int, int] | None = None) -> int | None:
    """The line of the innermost frame of `path` (inside the line range `within`, if given)."""
    for line, end in reversed(frames_in(exc, path)):
        if within is None or within[0] <= line <= within[1]:
            return line
    return None


def raised_on(exc: BaseException, path: str, lines: tuple[int, int], within: tuple[int, int] | None = None,
              module_level: bool = False) -> bool:
    """Whether the innermost frame of `path` (inside `within`) is on the lines `lines` (first, last)."""
    for line, end in reversed(frames_in(exc, path, module_level)):
        if within is None or within[0] <= line <= within[1]:
            return line <= lines[1] and end >= lines[0]
    return False


@contextmanager
def lines_run(path: str, raised: list[BaseException] | None = None) -> Iterator[set[int]]:
    """Record the lines of `path` that run inside the block (only frames of that file are traced),
    and, into `raised`, every exception raised or passing through a frame of that file: the code
    may catch it, but where it was raised is still evidence (see `caught`)."""
    ran: set[int] = set()
    with _traced(path, ran, raised, lines=True):
        yield ran


@contextmanager
def raised_in(path: str, module_lines: set[int] | None = None) -> Iterator[list[BaseException]]:
    """Every exception raised in or passing through a frame of `path` inside the block, caught or
    not, first seen first; and, into `module_lines`, the lines its module-level code ran. Inside
    its functions only exception events are traced, so they run at nearly full speed."""
    raised: list[BaseException] = []
    with _traced(path, module_lines if module_lines is not None else set(), raised,
                 lines="module" if module_lines is not None else False):
        yield raised


@contextmanager
def _traced(path: str, ran: set[int], raised: list[BaseException] | None, lines: bool | str) -> Iterator[None]:
    real = os.path.realpath(path)
    files: dict[str, bool] = {}
    seen: set[int] = set()

    def local(frame, event, arg):
        if event == "line":
            ran.add(frame.f_lineno)
        elif event == "exception" and raised is not None:
            error = arg[1]
            if isinstance(error, BaseException) and id(error) not in seen and len(raised) < _MAX_RAISED:
                seen.add(id(error))
                raised.append(error)
        return local

    def global_(frame, event, arg):
        name = frame.f_code.co_filename
        if name not in files:
            files[name] = name == path or os.path.realpath(name) == real
        if files[name]:
            module = frame.f_code.co_name == "<module>"
            if lines is True or (lines == "module" and module):
                ran.add(frame.f_lineno)
            else:
                frame.f_trace_lines = False
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        yield
    finally:
        sys.settrace(previous)


#: Exceptions kept per block: a loop that raises and catches on every step costs its first ones only.
_MAX_RAISED = 64


def caught(raised: list[BaseException], escaped: BaseException | None) -> list[BaseException]:
    """The exceptions of `raised` other than the one that ended the block (and its chain)."""
    chain: set[int] = set()
    while escaped is not None and id(escaped) not in chain:
        chain.add(id(escaped))
        escaped = escaped.__cause__ or escaped.__context__
    return [error for error in raised if id(error) not in chain]


def describe(exc: BaseException, path: str, within: tuple[int, int] | None = None) -> str:
    """`TypeError at line 9: message` (first line of the message, shortened) for evidence."""
    line = raised_at(exc, path, within) or raised_at(exc, path)
    message = " ".join(str(exc).split())
    if len(message) > 160:
        message = message[:157] + "..."
    where = f" at line {line}" if line else ""
    return f"{type(exc).__name__}{where}" + (f": {message}" if message else "")
