"""Per-function summaries, in two forms.

`Summaries`: computed on demand and memoised by (function, abstract argument signature). A summary
is whatever the caller's `compute` makes of one function run with one signature (for the value
domain: what it returns given the values of its arguments). Each (function, signature) is computed
once. A function reached again while its own summary is being computed (recursion, direct or
mutual) gets `unknown` — the analysis prefers knowing less to guessing — and so does a chain of
calls deeper than `max_depth`.

`SettledSummaries`: one summary per function of a set, to a fixed point (for the key domain: which
parameters a function consumes). Every function is analysed once, in the order given; an analysis
reads the summaries of other functions through `read`, and a function is analysed again only when
a summary it read has changed since — at most `max_runs` times, which bounds recursive cycles.
"""
from __future__ import annotations

import operator
from collections import deque
from typing import Callable, Generic, Hashable, Iterable, TypeVar

import libcst as cst

S = TypeVar("S")
FunctionNode = cst.FunctionDef | cst.Lambda

#: how many summaries may be in progress at once (a call chain this deep is cut)
MAX_DEPTH = 8


class Summaries(Generic[S]):
    def __init__(self, compute: Callable[[FunctionNode, Hashable], S], unknown: S,
                 max_depth: int = MAX_DEPTH) -> None:
        self._compute = compute
        self.unknown = unknown
        self.max_depth = max_depth
        self._done: dict[tuple[int, Hashable], S] = {}
        self._in_progress: list[tuple[int, Hashable]] = []
        #: keeps the functions of memoised summaries alive, so that their ids stay theirs
        self._functions: dict[int, FunctionNode] = {}
        #: how many summaries were computed (not served from the memo): for tests and measurements
        self.computed = 0

    def get(self, function: FunctionNode, signature: Hashable) -> S:
        """The summary of `function` called with `signature`, computed once."""
        key = (id(function), signature)
        found = self._done.get(key)
        if found is not None:
            return found
        if key in self._done:
            return self._done[key]
        if any(active[0] == key[0] for active in self._in_progress) or len(self._in_progress) >= self.max_depth:
            return self.unknown
        self._in_progress.append(key)
        try:
            summary = self._compute(function, signature)
        finally:
            self._in_progress.pop()
        self.computed += 1
        self._functions[id(function)] = function
        self._done[key] = summary
        return summary

    def __contains__(self, key: tuple[FunctionNode, Hashable]) -> bool:
        function, signature = key
        return (id(function), signature) in self._done


class SettledSummaries(Generic[S]):
    """Summaries of a set of functions to a fixed point (see the module docstring)."""

    def __init__(self, analyse: Callable[[FunctionNode], S], initial: S,
                 same: Callable[[S, S], bool] = operator.eq, max_runs: int = 4) -> None:
        self._analyse = analyse
        self.initial = initial
        self._same = same
        self.max_runs = max_runs
        self._summaries: dict[int, S] = {}
        #: id(function) -> ids of the functions whose analysis read its summary
        self._readers: dict[int, set[int]] = {}
        #: the functions being analysed, innermost last (an analysis may start another)
        self._analysing: list[int] = []
        #: how many analyses were run: for tests and measurements
        self.runs = 0

    def solve(self, functions: Iterable[FunctionNode]) -> None:
        """Analyses the functions, and again those that read a summary that changed, until none does."""
        order = list(functions)
        by_id = {id(f): f for f in order}
        runs: dict[int, int] = {}
        pending = deque(order)
        queued = set(by_id)
        while pending:
            function = pending.popleft()
            key = id(function)
            queued.discard(key)
            if runs.get(key, 0) >= self.max_runs:
                continue
            runs[key] = runs.get(key, 0) + 1
            self.runs += 1
            self._analysing.append(key)
            try:
                summary = self._analyse(function)
            finally:
                self._analysing.pop()
            old = self._summaries.get(key, self.initial)
            self._summaries[key] = summary
            if self._same(old, summary):
                continue
            for reader in self._readers.get(key, ()):
                if reader not in queued and reader in by_id:
                    queued.add(reader)
                    pending.append(by_id[reader])

    def read(self, function: FunctionNode) -> S:
        """The summary of `function` so far, read by the analysis under way (which is run again
        if it changes)."""
        key = id(function)
        if self._analysing:
            self._readers.setdefault(key, set()).add(self._analysing[-1])
        return self._summaries.get(key, self.initial)

    def get(self, function: FunctionNode) -> S:
        """The settled summary of `function` (`initial` for a function never analysed)."""
        return self._summaries.get(id(function), self.initial)
