"""JAX302: a function whose body runs once per trace reads a module variable that is reassigned elsewhere."""
from __future__ import annotations

import libcst as cst

from ..rulebase.context import is_reference
from ..syntax.walk import children
from ..semantic.module_state import ModuleState
from ..semantic.names import BUILTIN_NAMES
from ..jaxmodel.traced import LAX_BODIES
from ..rulebase.rule import Rule

#: Parents whose Name child is always a binding or a declaration, not a read.
_STORES = (cst.AssignTarget, cst.AsName, cst.Del, cst.NameItem, cst.ImportAlias)
#: Parents whose `target` child is a binding (their other children are reads).
_TARGET_OWNERS = (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)


class GlobalReadInTraced(Rule):
    code = "JAX302"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reassigned: dict[str, str] | None = None
        #: id(top-level function) -> statements that use it, or False when it may run at any time
        self._uses: dict[int, list[int] | bool] = {}
        self._occurrences: dict[str, list[_Occurrence]] | None = None

    def names_wanted(self) -> dict[str, str]:
        if self._reassigned is None:
            self._reassigned = ModuleState.of(self.ctx).reassigned
        return self._reassigned

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
            if name in BUILTIN_NAMES:
                return
        elif found[0].kind != "module":
            return  # a local, a parameter or a closed-over variable of the same name
        if self._assigns_global_here(name):
            return  # the function rebinds it itself: JAX303 reports the assignment
        top = ctx.ancestors[1] if len(ctx.ancestors) > 1 else None
        if top is not None and not state.may_change_after(name, top):
            return  # defined after the last rebinding: the function only ever sees the final value
        if top is not None and self._traced_before_change(name, top, state):
            return  # a script's step function, run (and traced) before the variable changes
        self.report(node, (
            f"`{name}` is a global variable {reason}, read inside a function traced by `{info.label}`: "
            f"its value at trace time is baked into the compiled code and later changes are ignored "
            f"until JAX retraces; pass `{name}` as an argument (or a `static_argnames` argument if it is "
            f"configuration)"))

    def _traced_before_change(self, name: str, top: cst.CSTNode, state: ModuleState) -> bool:
        """Whether `name` keeps one value while the top-level function around the read is in use.

        Scripts and notebooks set their parameters, define a step function, run it
        (`lax.fori_loop(0, n, step, s)`, or call the jitted function in a loop), then set new parameters
        and define the next step function: each function is traced with the values current while it
        runs. Every use of the function's name must be a call or a `lax` body argument in a top-level
        statement, and `name` must not be rebound from its first use to its last.
        """
        if not isinstance(top, cst.FunctionDef) or state.last_binding.get(name) is None:
            return False
        start = state.statement_index.get(id(top))
        if start is None:
            return False
        later = [i for i in state.binding_statements.get(name, ()) if i > start]
        if not later:
            return False
        uses = self._uses.get(id(top))
        if uses is None:
            if self._occurrences is None:
                self._occurrences = _function_name_occurrences(self.ctx.module)
            uses = self._uses[id(top)] = _top_level_uses(self.ctx, top, start, self._occurrences)
        if uses is False:
            return False
        # traced at its first use and cached from then on: a change between two uses is missed
        return not uses or not any(uses[0] <= i <= uses[-1] for i in later)

    def _assigns_global_here(self, name: str) -> bool:
        for scope in self.ctx.scope.enclosing_for_lookup():
            if scope.kind == "function":
                scope.bindings  # noqa: B018 - collecting the bindings fills in `globals`
                return name in scope.globals and name in scope.bindings
        return False


#: a Name of the module: (index of its top-level statement, the Name, its parent, its grandparent,
#: whether it is inside a function, lambda or class body of that statement)
_Occurrence = tuple[int, cst.Name, "cst.CSTNode | None", "cst.CSTNode | None", bool]


def _function_name_occurrences(module: cst.Module) -> dict[str, list[_Occurrence]]:
    """Every reference to the name of a top-level function, in statement order: one walk of the
    module for all of them (a walk per function made big files quadratic)."""
    names = {s.name.value for s in module.body if isinstance(s, cst.FunctionDef)}
    found: dict[str, list[_Occurrence]] = {}
    for index, statement in enumerate(module.body):
        stack: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None, bool]] = [(statement, None, None, False)]
        while stack:
            node, parent, grandparent, deferred = stack.pop()
            if type(node) is cst.Name:
                if node.value in names and is_reference(node, parent):
                    found.setdefault(node.value, []).append((index, node, parent, grandparent, deferred))
                continue
            inner = deferred or isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef))
            stack.extend((child, node, parent, inner) for _, child in children(node))
    return found


def _top_level_uses(ctx, function: cst.FunctionDef, start: int,
                    occurrences: dict[str, list[_Occurrence]]) -> list[int] | bool:
    """Indices of the top-level statements that run `function` (until its name is bound again), or
    False when its name is used otherwise: stored, passed on, or read inside another function."""
    name = function.name.value
    body = ctx.module.body
    stop = next((i for i in range(start + 1, len(body)) if name in _bound_by(body[i])), len(body))
    found: list[int] = []
    for index, node, parent, grandparent, deferred in occurrences.get(name, ()):
        if index > stop:
            break
        if index == start:
            continue
        if isinstance(parent, _STORES) or (isinstance(parent, _TARGET_OWNERS) and parent.target is node):
            continue
        if deferred:
            return False  # read when that function runs: any time
        if index < start:
            continue  # an earlier object of the same name
        if not _runs_it(ctx, node, parent, grandparent):
            return False
        found.append(index)
    return found


def _runs_it(ctx, node: cst.Name, parent: cst.CSTNode | None, grandparent: cst.CSTNode | None) -> bool:
    """`f(...)`, or `f` handed to a `lax` loop or branch, which traces it at once."""
    if isinstance(parent, cst.Call) and parent.func is node:
        return True
    return (isinstance(parent, cst.Arg) and isinstance(grandparent, cst.Call)
            and ctx.qualified_name(grandparent.func) in LAX_BODIES)


def _bound_by(statement: cst.CSTNode) -> set[str]:
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return {statement.name.value}
    names: set[str] = set()
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                [small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) else [])
            stack = list(targets)
            while stack:
                target = stack.pop()
                if isinstance(target, cst.Name):
                    names.add(target.value)
                elif isinstance(target, (cst.Tuple, cst.List)):
                    stack.extend(e.value for e in target.elements)
    return names
