"""Which names a scope binds only to mutable Python containers (lists, dicts, sets, deques …).

A name counts only when every binding it has in its scope is `name = <container>`: a list, dict or
set display or comprehension, or a call of `list`, `dict`, `set`, `collections.defaultdict`,
`collections.OrderedDict`, `collections.deque` or `collections.Counter`. A parameter, or any other
binding, makes the name unknown: `.update(...)` on an unknown object may be a pure method
(`optimizer.update(grads, state)`), so rules stay silent about it.

Read from the bindings the semantic model's walk records, per scope on first use, and kept for the
file (`Containers.of(ctx)`): no walk of its own.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .bindings import BindingKind
from .scopes import Scope

if TYPE_CHECKING:
    from .source_file import SourceFile

CONTAINER_CALLS = frozenset({
    "builtins.list", "builtins.dict", "builtins.set", "collections.defaultdict", "collections.OrderedDict",
    "collections.deque", "collections.Counter",
})
CONTAINER_DISPLAYS = (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)
#: Methods of list, dict, set and deque that change the container in place.
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "pop", "update", "setdefault", "clear", "add", "remove", "discard",
    "appendleft", "extendleft", "popleft", "popitem", "sort", "reverse",
})
#: the bindings that assign a value as a whole (`a = b = []`, `a: list = []`)
_ASSIGNING = (BindingKind.ASSIGNMENT, BindingKind.ANNOTATED)


class Containers:
    """Per file: the names each scope binds only to Python containers (see the module docstring)."""

    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        self._by_scope: dict[int, set[str]] = {}

    @classmethod
    def of(cls, ctx: "SourceFile") -> "Containers":
        return ctx.fact(cls)

    def names(self, scope: Scope) -> set[str]:
        """Names that `scope` binds only to Python containers."""
        key = id(scope.node)
        if key not in self._by_scope:
            self._by_scope[key] = self._collect(scope)
        return self._by_scope[key]

    def is_container(self, name: str, scope: Scope) -> bool:
        return name in self.names(scope)

    def _collect(self, scope: Scope) -> set[str]:
        if scope.kind not in ("module", "function", "class") or type(scope.node) is cst.Lambda:
            return set()
        found = set()
        for name, binding in scope.bindings.items():
            if all(recorded.kind in _ASSIGNING and not recorded.unpack_path and recorded.statement.value is not None
                   and self._is_container(recorded.statement.value, scope) for recorded in binding.recorded):
                found.add(name)
        return found

    def _is_container(self, value: cst.BaseExpression, scope: Scope) -> bool:
        if isinstance(value, CONTAINER_DISPLAYS):
            return True
        if isinstance(value, cst.Call):
            return self.ctx.names.qualified_name(value.func, scope) in CONTAINER_CALLS
        return False
