"""Which functions of the module run when a function runs: the module's call graph, as the shared
call resolution (`TracedFunctions.callees`) resolves calls — plain names, methods through `self`,
partials, transforms' wrappers. Building an object (`Model()`) is not an edge: what `__init__`
does once is not what the caller repeats."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from .signatures import function_scope
from .traced import TracedFunctions

if TYPE_CHECKING:
    from ..semantic.scopes import Scope
    from ..semantic.source_file import SourceFile

FunctionNode = cst.FunctionDef | cst.Lambda


class CallGraph:
    def __init__(self, ctx: "SourceFile") -> None:
        self.traced = ctx.fact(TracedFunctions)
        #: id(function) -> the functions of the module its body calls
        self._calls_from: dict[int, list[cst.FunctionDef]] | None = None

    @classmethod
    def of(cls, ctx: "SourceFile") -> "CallGraph":
        return ctx.fact(cls)

    def called(self, call: cst.Call, scope: "Scope") -> list[cst.FunctionDef]:
        """The functions of the module a call runs: every `def` a plain name is bound to (a name
        bound only to functions, one of which runs), else the one the call resolution reaches."""
        if type(call.func) is cst.Name:
            found = scope.lookup(call.func.value)
            if found is not None and found[1].nodes and all(isinstance(n, cst.FunctionDef) for n in found[1].nodes):
                return list(found[1].nodes)
        traced = self.traced
        callee = traced.callees.get(id(call)) or traced.callee_through_wrappers(call.func, scope, call)
        if callee is None or callee.constructs or not isinstance(callee.function, cst.FunctionDef):
            return []
        return [callee.function]

    def reached_from(self, entry: FunctionNode) -> Iterator[FunctionNode]:
        """The entry, then every function of the module it calls, directly or in turn (each once)."""
        calls_from = self._edges()
        seen, pending = {id(entry)}, [entry]
        while pending:
            function = pending.pop()
            yield function
            for callee in calls_from.get(id(function), ()):
                if id(callee) not in seen:
                    seen.add(id(callee))
                    pending.append(callee)

    def _edges(self) -> dict[int, list[cst.FunctionDef]]:
        if self._calls_from is None:
            traced = self.traced
            self._calls_from = {}
            for call_id, callee in traced.callees.items():
                scope = function_scope(traced.call_scopes.get(call_id))
                if scope is not None and not callee.constructs and isinstance(callee.function, cst.FunctionDef):
                    self._calls_from.setdefault(id(scope.node), []).append(callee.function)
        return self._calls_from
