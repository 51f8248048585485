"""Per-function summaries, computed on demand and memoised by (function, abstract argument signature).

A summary is whatever the caller's `compute` makes of one function run with one signature (for the
value domain: what it returns given the values of its arguments). Each (function, signature) is
computed once. A function reached again while its own summary is being computed (recursion,
direct or mutual) gets `unknown` — the analysis prefers knowing less to guessing — and so does a
chain of calls deeper than `max_depth`.
"""
from __future__ import annotations

from typing import Callable, Generic, Hashable, TypeVar

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
