"""Counting how many times the flagged statement runs, with a `sys.settrace` hook on the subject's frames."""
from __future__ import annotations

import sys
from typing import Any

from ...subject import Subject
from .frames import same_file, source_paths


class StatementCounter:
    """Counts executions of the statement at lines `first..last` of the subject's file.

    An execution starts when a frame enters the span, or jumps back inside it (the next iteration of
    a comprehension on one line). Functions and lambdas defined inside the span (a traced lambda, a
    decorated def) are part of the statement, not executions of it, so their frames are not watched.
    """

    _COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})

    def __init__(self, subject: Subject, span: tuple[int, int]):
        self.paths = source_paths(subject)
        self.first, self.last = span
        self.count = 0
        self._state: dict[int, tuple[bool, int]] = {}
        self._codes: dict[Any, bool] = {}
        self._old: Any = None

    def _watched(self, code: Any) -> bool:
        if not same_file(code.co_filename, self.paths):
            return False
        inner = self.first <= code.co_firstlineno <= self.last and code.co_name not in self._COMPREHENSIONS
        return not inner

    def _global(self, frame: Any, event: str, arg: Any) -> Any:
        code = frame.f_code
        mine = self._codes.get(code)
        if mine is None:
            mine = self._codes[code] = self._watched(code)
        return self._local if mine else None

    def _local(self, frame: Any, event: str, arg: Any) -> Any:
        # A comprehension's frame is entered once per execution of its line, which the enclosing
        # frame counts already; each later pass of its loop is a line event at an earlier or the
        # same offset. (Its frame is kept across `return` events: a generator returns at each yield.)
        comprehension = frame.f_code.co_name in self._COMPREHENSIONS
        if event == "line":
            inside = self.first <= frame.f_lineno <= self.last
            was_inside, last = self._state.get(id(frame), (comprehension, -1))
            if inside and (not was_inside or 0 <= frame.f_lasti <= last):
                self.count += 1
            self._state[id(frame)] = (inside, frame.f_lasti)
        elif event == "return" and not comprehension:
            self._state.pop(id(frame), None)
        return self._local

    def __enter__(self) -> "StatementCounter":
        self._old = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(self._old)
