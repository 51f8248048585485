"""JAX302: a function whose body runs once per trace reads a module variable that is reassigned elsewhere."""
from __future__ import annotations

import builtins

import libcst as cst

from ..context import is_reference
from ..facts.module_state import ModuleState
from ..rule import Rule

_BUILTINS = frozenset(dir(builtins))
#: Parents whose Name child is always a binding or a declaration, not a read.
_STORES = (cst.AssignTarget, cst.AsName, cst.Del, cst.NameItem, cst.ImportAlias)
#: Parents whose `target` child is a binding (their other children are reads).
_TARGET_OWNERS = (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)


class GlobalReadInTraced(Rule):
    code = "JAX302"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reassigned: dict[str, str] | None = None

    def visit_Name(self, node: cst.Name) -> None:
        ctx = self.ctx
        name = node.value
        if self._reassigned is None:
            self._reassigned = ModuleState.of(ctx).reassigned
        reason = self._reassigned.get(name)
        if reason is None:
            return
        info = ctx.trace_info()
        if info is None or not info.runs_once:
            return
        parent = ctx.parent
        if not is_reference(node, parent) or isinstance(parent, _STORES):
            return
        if isinstance(parent, _TARGET_OWNERS) and parent.target is node:
            return
        state = ModuleState.of(ctx)
        found = ctx.scope.lookup(name)
        if found is None:
            if name in _BUILTINS:
                return
        elif found[0].kind != "module":
            return  # a local, a parameter or a closed-over variable of the same name
        if self._assigns_global_here(name):
            return  # the function rebinds it itself: JAX303 reports the assignment
        top = ctx.ancestors[1] if len(ctx.ancestors) > 1 else None
        if top is not None and not state.may_change_after(name, top):
            return  # defined after the last rebinding: the function only ever sees the final value
        self.report(node, (
            f"`{name}` is a global variable {reason}, read inside a function traced by `{info.label}`: "
            f"its value at trace time is baked into the compiled code and later changes are ignored "
            f"until JAX retraces; pass `{name}` as an argument (or a `static_argnames` argument if it is "
            f"configuration)"))

    def _assigns_global_here(self, name: str) -> bool:
        for scope in self.ctx.scope.enclosing_for_lookup():
            if scope.kind == "function":
                scope.bindings  # noqa: B018 - collecting the bindings fills in `globals`
                return name in scope.globals and name in scope.bindings
        return False
