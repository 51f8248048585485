"""Which code is the subject's: its file under every name it goes by, and its lines on the live stack.

Recorders and error descriptions attribute what happens at run time (a compilation, a key draw, an
exception) to the subject's source lines through these."""
from __future__ import annotations

import functools
import os
import sys
from typing import Any

from ...subject import Subject


def source_paths(subject: Subject) -> frozenset[str]:
    paths = {subject.path, os.path.realpath(subject.path)}
    module_file = getattr(subject.module, "__file__", None)
    if module_file:
        paths |= {module_file, os.path.realpath(module_file)}
    for fn in (subject.python_function, subject.function):
        code = getattr(fn, "__code__", None)
        if code is not None and _real(code.co_filename) in {_real(p) for p in paths}:
            paths.add(code.co_filename)
    return frozenset(paths)


@functools.lru_cache(maxsize=256)
def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def same_file(filename: str, paths: frozenset[str]) -> bool:
    return filename in paths or _real(filename) in paths


def caller_lines(paths: frozenset[str], start: Any = None) -> tuple[int, ...]:
    """The lines of every frame of the subject's file on the current stack, innermost first."""
    frame = start if start is not None else sys._getframe(1)
    lines = []
    while frame is not None:
        if same_file(frame.f_code.co_filename, paths):
            lines.append(frame.f_lineno)
        frame = frame.f_back
    return tuple(lines)


def caller_line(paths: frozenset[str], start: Any = None) -> int | None:
    """The line of the innermost frame of the subject's file on the current stack."""
    frame = start if start is not None else sys._getframe(1)
    while frame is not None:
        if same_file(frame.f_code.co_filename, paths):
            return frame.f_lineno
        frame = frame.f_back
    return None
