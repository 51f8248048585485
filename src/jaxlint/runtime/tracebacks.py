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
def lines_run(path: str) -> Iterator[set[int]]:
    """Record the lines of `path` that run inside the block (only frames of that file are traced)."""
    ran: set[int] = set()
    real = os.path.realpath(path)
    files: dict[str, bool] = {}

    def local(frame, event, arg):
        if event == "line":
            ran.add(frame.f_lineno)
        return local

    def global_(frame, event, arg):
        name = frame.f_code.co_filename
        if name not in files:
            files[name] = name == path or os.path.realpath(name) == real
        if files[name]:
            ran.add(frame.f_lineno)
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        yield ran
    finally:
        sys.settrace(previous)


def describe(exc: BaseException, path: str, within: tuple[int, int] | None = None) -> str:
    """`TypeError at line 9: message` (first line of the message, shortened) for evidence."""
    line = raised_at(exc, path, within) or raised_at(exc, path)
    message = " ".join(str(exc).split())
    if len(message) > 160:
        message = message[:157] + "..."
    where = f" at line {line}" if line else ""
    return f"{type(exc).__name__}{where}" + (f": {message}" if message else "")
