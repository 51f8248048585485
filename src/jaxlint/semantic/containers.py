"""Which names a scope binds only to mutable Python containers (lists, dicts, sets, deques …).

A name counts only when every binding it has in its scope is `name = <container>`: a list, dict or
set display or comprehension, or a call of `list`, `dict`, `set`, `collections.defaultdict`,
`collections.OrderedDict`, `collections.deque` or `collections.Counter`. A parameter, or any other
binding, makes the name unknown: `.update(...)` on an unknown object may be a pure method
(`optimizer.update(grads, state)`), so rules stay silent about it.

Computed per scope on first use and kept for the file (`Containers.of(ctx)`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .scopes import COMPREHENSIONS, Scope
from ..syntax.walk import EXPRESSION_TYPES, node_types, walk

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
_NESTED = node_types(cst.FunctionDef, cst.ClassDef, cst.Lambda, *COMPREHENSIONS)


class Containers:
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
        node = scope.node
        if isinstance(node, cst.Module):
            bodies = list(node.body)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            bodies = [node.body]
        else:
            return set()
        assigned: dict[str, int] = {}

        def enter(child: cst.CSTNode, field: str) -> bool:
            if type(child) in _NESTED:
                return False
            if type(child) in (cst.Assign, cst.AnnAssign) and child.value is not None:
                targets = child.targets if isinstance(child, cst.Assign) else [child]
                if self._is_container(child.value, scope):
                    for target in targets:
                        if isinstance(target.target, cst.Name):
                            assigned[target.target.value] = assigned.get(target.target.value, 0) + 1
            return type(child) not in EXPRESSION_TYPES

        for body in bodies:
            walk(body, enter, None)
        bindings = scope.bindings
        return {name for name, count in assigned.items()
                if name in bindings and len(bindings[name].nodes) == count}

    def _is_container(self, value: cst.BaseExpression, scope: Scope) -> bool:
        if isinstance(value, CONTAINER_DISPLAYS):
            return True
        if isinstance(value, cst.Call):
            return self.ctx.names.qualified_name(value.func, scope) in CONTAINER_CALLS
        return False
