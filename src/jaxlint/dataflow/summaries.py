"""Per-function summaries, in two forms.

`Summaries`: computed on demand and memoised by (function, abstract argument signature). A summary
is whatever the caller's `compute` makes of one function run with one signature (for the value
domain: what it returns given the values of its arguments). Each (function, signature) is computed
once. A function reached again while its own summary is being computed (recursion, direct or
mutual) gets `unknown` — the analysis prefers knowing less to guessing — and so does a chain of
calls deeper than `max_depth`.

`SettledSummaries`: one summary per function, to a fixed point (for the key domain: which
parameters a function consumes), settled on demand. An analysis reads the summaries of other
functions through `read`, which also demands them; a function is analysed again only when a summary
it read has changed since — at most `max_runs` times, which bounds recursive cycles. A function
whose summary is never asked for, directly or through another's analysis, is never analysed.
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
        #: how many times a summary was cut (recursion, depth) and `unknown` given instead: a run
        #: during which this did not change depends on no cut
        self.cuts = 0

    def get(self, function: FunctionNode, signature: Hashable) -> S:
        """The summary of `function` called with `signature`, computed once."""
        key = (id(function), signature)
        found = self._done.get(key)
        if found is not None:
            return found
        if key in self._done:
            return self._done[key]
        if any(active[0] == key[0] for active in self._in_progress) or len(self._in_progress) >= self.max_depth:
            self.cuts += 1
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
    """Summaries of the functions of a set to a fixed point (see the module docstring), settled on
    demand: the first time a summary is asked for, it is computed with every summary its analysis
    reads, transitively; a function whose summary nobody asks for is never analysed."""

    def __init__(self, analyse: Callable[[FunctionNode], S], initial: S,
                 same: Callable[[S, S], bool] = operator.eq, max_runs: int = 4,
                 summarised: Callable[[FunctionNode], bool] | None = None) -> None:
        self._analyse = analyse
        self.initial = initial
        self._same = same
        self.max_runs = max_runs
        #: whether a function has a summary to compute (others keep `initial`)
        self._summarised = summarised or (lambda function: True)
        self._summaries: dict[int, S] = {}
        #: id(function) -> the functions whose analysis read its summary
        self._readers: dict[int, dict[int, FunctionNode]] = {}
        #: the functions being analysed, innermost last
        self._analysing: list[FunctionNode] = []
        self._pending: deque[FunctionNode] = deque()
        self._queued: set[int] = set()
        #: ids of the functions analysed (or queued) at least once
        self._started: set[int] = set()
        self._runs: dict[int, int] = {}
        #: ids of the functions due another analysis that `max_runs` cut off
        self._cut: set[int] = set()
        #: how many analyses were run: for tests and measurements
        self.runs = 0

    def solve(self, functions: Iterable[FunctionNode]) -> None:
        """Settles the summaries of these functions (in this order) now."""
        for function in functions:
            self._demand(function)
        self._settle()

    def read(self, function: FunctionNode) -> S:
        """The summary of `function`. Read by an analysis under way: the summary so far (the
        analysis is run again if it changes); read from outside: the settled summary."""
        if not self._analysing:
            return self.get(function)
        key = id(function)
        reader = self._analysing[-1]
        self._readers.setdefault(key, {})[id(reader)] = reader
        self._demand(function)
        return self._summaries.get(key, self.initial)

    def get(self, function: FunctionNode) -> S:
        """The settled summary of `function`."""
        if id(function) not in self._started and not self._analysing:
            self._demand(function)
            self._settle()
        return self._summaries.get(id(function), self.initial)

    def settled(self, function: FunctionNode) -> bool:
        """Whether the last analysis of `function` read only settled summaries (then it needs no
        other run: a later analysis from the same start would do the same)."""
        key = id(function)
        return key in self._runs and key not in self._queued and key not in self._cut and not self._analysing

    def _demand(self, function: FunctionNode) -> None:
        key = id(function)
        if key not in self._started and self._summarised(function):
            self._started.add(key)
            self._queued.add(key)
            self._pending.append(function)

    def _settle(self) -> None:
        pending, queued, runs = self._pending, self._queued, self._runs
        while pending:
            function = pending.popleft()
            key = id(function)
            queued.discard(key)
            if runs.get(key, 0) >= self.max_runs:
                self._cut.add(key)
                continue
            runs[key] = runs.get(key, 0) + 1
            self.runs += 1
            self._analysing.append(function)
            try:
                summary = self._analyse(function)
            finally:
                self._analysing.pop()
            old = self._summaries.get(key, self.initial)
            self._summaries[key] = summary
            if self._same(old, summary):
                continue
            for reader_key, reader in self._readers.get(key, {}).items():
                if reader_key not in queued:
                    queued.add(reader_key)
                    pending.append(reader)
