"""JAX302: a function whose body runs once per trace reads a module variable that is reassigned elsewhere."""
from __future__ import annotations

import libcst as cst

from ..rulebase.context import is_reference
from ..syntax.walk import children, target_names, walk
from ..semantic.module_state import ModuleState
from ..semantic.names import BUILTIN_NAMES
from ..jaxmodel.transforms import LAX_BODIES, MODES
from ..rulebase.rule import Rule

#: Parents whose Name child is always a binding or a declaration, not a read.
_STORES = (cst.AssignTarget, cst.AsName, cst.Del, cst.NameItem, cst.ImportAlias)
#: Parents whose `target` child is a binding (their other children are reads).
_TARGET_OWNERS = (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)


class GlobalReadInTraced(Rule):
    code = "JAX302"
    explains_trace = True

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
        if self._traced_afresh(info.node):
            return  # a new function object every time: traced again with the value current then
        top = ctx.ancestors[1] if len(ctx.ancestors) > 1 else None
        if top is not None and not state.may_change_after(name, top):
            return  # defined after the last rebinding: the function only ever sees the final value
        if top is not None and self._traced_before_change(name, top, state):
            return  # a script's step function, run (and traced) before the variable changes
        if isinstance(top, cst.If) and self._defined_after_script_bindings(name, top, state):
            return  # defined in the `__main__` block after the last assignment: sees the final value
        self.report(node, (
            f"`{name}` is a global variable {reason}, read inside a function traced by `{info.label}`: "
            f"its value at trace time is baked into the compiled code and later changes are ignored "
            f"until JAX retraces; pass `{name}` as an argument (or a `static_argnames` argument if it is "
            f"configuration)"))

    def _defined_after_script_bindings(self, name: str, guard: cst.If, state: ModuleState) -> bool:
        """A script written in its `if __name__ == "__main__":` block: a function defined there, after
        every assignment of `name` (and none comes later, there or elsewhere), only sees its final value."""
        if not _is_main_guard(guard) or state.last_binding.get(name) is None:
            return False
        index = state.statement_index.get(id(guard))
        if index is None or any(i > index for i in state.binding_statements.get(name, ())):
            return False
        definition = next((a for a in self.ctx.ancestors[2:] if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
        if not isinstance(definition, cst.FunctionDef) or not any(s is definition for s in guard.body.body):
            return False
        seen_definition = False
        rebound = False

        def enter(node: cst.CSTNode, _field: str) -> bool:
            nonlocal seen_definition, rebound
            if node is definition:
                seen_definition = True
                return False
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) or rebound:
                return False
            if seen_definition:
                targets = ([t.target for t in node.targets] if isinstance(node, cst.Assign) else
                           [node.target] if isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr))
                           else [node.asname.name] if isinstance(node, cst.WithItem) and node.asname else [])
                rebound = any(name in target_names(t) for t in targets)
            return True

        walk(guard.body, enter, lambda node: None)
        return not rebound

    def _traced_afresh(self, function: cst.CSTNode) -> bool:
        """Whether the traced function is a new object each time it is traced, so that no compiled
        version outlives the value it read: a lambda jitted and called in one expression
        (`jax.jit(lambda: model.init(key, x), backend="cpu")()`, also through `jax.hessian`/`grad`/
        `partial` wrappers), or a lambda or `def` made in a loop body (made and traced again every
        iteration)."""
        ancestors = self.ctx.ancestors
        index = next((i for i in range(len(ancestors) - 1, -1, -1) if ancestors[i] is function), None)
        if index is None:
            return False
        for i in range(index - 1, 0, -1):
            node = ancestors[i]
            if isinstance(node, (cst.For, cst.While)):
                return ancestors[i + 1] is node.body
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                break
        if not isinstance(function, cst.Lambda):
            return False
        i = index - 1
        while i >= 1 and isinstance(ancestors[i], cst.Arg) and isinstance(ancestors[i - 1], cst.Call):
            call = ancestors[i - 1]
            outer = ancestors[i - 2] if i >= 2 else None
            if isinstance(outer, cst.Call) and outer.func is call:
                return True  # `jax.jit(...)(...)`: traced now, never called again
            i -= 2
        return False

    def _traced_before_change(self, name: str, top: cst.CSTNode, state: ModuleState) -> bool:
        """Whether `name` keeps one value while the top-level function around the read is in use.

        Scripts and notebooks set their parameters, define a step function, run it
        (`lax.fori_loop(0, n, step, s)`, or call the jitted function in a loop), then set new parameters
        and define the next step function: each function is traced with the values current while it
        runs. Every use of the function's name must be a call or a `lax` body argument in a top-level
        statement, and `name` must not be rebound from its first use to its last.
        """
        wrapper = self._wrapped_lambda(top)
        if not isinstance(top, cst.FunctionDef) and wrapper is None:
            return False
        if state.last_binding.get(name, -1) is None:
            return isinstance(top, cst.FunctionDef) and self._set_up_before_use(name, top, state)
        start = state.statement_index.get(id(top))
        if start is None:
            return False
        later = [i for i in state.binding_statements.get(name, ()) if i > start]
        if not later:
            return False
        if wrapper is not None:
            if self._occurrences is None:
                self._occurrences = _function_name_occurrences(self.ctx.module)
            uses = _top_level_uses(self.ctx, wrapper, start, self._occurrences)
            if not uses or isinstance(uses, _DeferredUses):
                return False
        else:
            uses = self._uses.get(id(top))
            if uses is None:
                uses = self._uses_of(top, set())
        if uses is False:
            return False
        # traced at its first use and cached from then on: a change between two uses is missed
        return not uses or not any(uses[0] <= i <= uses[-1] for i in later)

    def _wrapped_lambda(self, top: cst.CSTNode) -> str | None:
        """`apply_repl = jax.pmap(lambda params, x: model.apply(params, x))` as a top-level statement,
        the read being in that lambda: the name the traced lambda is run through."""
        assignment = _transform_assignment(top)
        if assignment is None:
            return None
        wrapper, call = assignment
        function = self.ctx.function()
        if not isinstance(function, cst.Lambda) or not any(arg.value is function for arg in call.args) \
                or self.ctx.qualified_name(call.func) not in MODES:
            return None
        return wrapper

    def _set_up_before_use(self, name: str, top: cst.FunctionDef, state: ModuleState) -> bool:
        """A notebook or script global assigned through `global` by setup functions only: when every
        setup call runs before the traced function's first use, and no module-level binding comes
        between its first and last use, it sees one value (`setup(); step(x)`)."""
        uses = self._uses_of(top, set())
        if not uses:
            return False  # run from elsewhere, in an order this file does not show
        for setter in state.global_setters.get(name, ()):
            if not isinstance(setter, cst.FunctionDef) or id(setter) not in state.statement_index:
                return False
            runs = self._uses_of(setter, set())
            if not runs or any(i >= uses[0] for i in runs):
                return False
        return not any(uses[0] <= i <= uses[-1] for i in state.binding_statements.get(name, ()))

    def _uses_of(self, function: cst.FunctionDef, visiting: set[int]) -> list[int] | bool:
        """The top-level statements that run `function`: calls at top level, and the statements that
        run another top-level function calling it (a notebook's `equilibrate()` calling `make_step`)."""
        found = self._uses.get(id(function))
        if found is not None:
            return found
        if id(function) in visiting:
            return False
        visiting.add(id(function))
        if self._occurrences is None:
            self._occurrences = _function_name_occurrences(self.ctx.module)
        state = ModuleState.of(self.ctx)
        start = state.statement_index.get(id(function))
        uses: list[int] | bool = False
        if start is not None:
            direct = _top_level_uses(self.ctx, function.name.value, start, self._occurrences)
            uses = direct
            if isinstance(direct, _DeferredUses):
                uses = list(direct.indices)
                for caller in direct.callers:
                    through = self._uses_of(caller, visiting)
                    if not through:  # that caller runs from elsewhere, at any time
                        uses = False
                        break
                    uses.extend(through)
                if uses is not False:
                    uses.sort()
        self._uses[id(function)] = uses
        return uses

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
    """Every reference to the name of a top-level function, or of a top-level name bound to a
    transform of something (`loss_grad = jax.value_and_grad(mse)`), in statement order: one walk of
    the module for all of them (a walk per function made big files quadratic)."""
    names = {s.name.value for s in module.body if isinstance(s, cst.FunctionDef)}
    for statement in module.body:
        wrapper = _transform_assignment(statement)
        if wrapper is not None:
            names.add(wrapper[0])
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


def _is_main_guard(statement: cst.If) -> bool:
    test = statement.test
    return isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == "__name__"


class _DeferredUses(list):
    """Top-level statements that run a function, plus the top-level functions that call it (which
    run it whenever they run)."""

    def __init__(self, indices: list[int], callers: list[cst.FunctionDef]) -> None:
        super().__init__(indices)
        self.indices = indices
        self.callers = callers


def _transform_assignment(statement: cst.CSTNode) -> tuple[str, cst.Call] | None:
    """`name = f(...)` as a whole top-level statement: the name and the call (whether `f` is a
    transform is for the caller to resolve)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
            and isinstance(small.value, cst.Call):
        return small.targets[0].target.value, small.value
    return None


def _top_level_uses(ctx, name: str, start: int, occurrences: dict[str, list[_Occurrence]],
                    depth: int = 0) -> list[int] | bool:
    """Indices of the top-level statements that run `function` (until its name is bound again), or
    False when its name is used otherwise: stored, passed on, or read inside a function other than a
    top-level `def` that calls it (those are returned as `_DeferredUses.callers`). Wrapped by a
    transform into a top-level name (`step = jax.jit(f)`), it runs where that name is called."""
    body = ctx.module.body
    stop = next((i for i in range(start + 1, len(body)) if name in _bound_by(body[i])), len(body))
    found: list[int] = []
    callers: list[cst.FunctionDef] = []
    for index, node, parent, grandparent, deferred in occurrences.get(name, ()):
        if index > stop:
            break
        if index == start:
            continue
        if isinstance(parent, _STORES) or (isinstance(parent, _TARGET_OWNERS) and parent.target is node):
            continue
        if deferred:
            caller = body[index]
            if isinstance(caller, cst.FunctionDef) and _runs_it(ctx, node, parent, grandparent) and index > start:
                if caller not in callers:
                    callers.append(caller)
                continue
            return False  # read when that function runs: any time
        if index < start:
            continue  # an earlier object of the same name
        if not _runs_it(ctx, node, parent, grandparent):
            wrapper = _transform_assignment(body[index])
            if depth >= 2 or wrapper is None or not isinstance(parent, cst.Arg) or wrapper[1] is not grandparent \
                    or ctx.qualified_name(grandparent.func) not in MODES:
                return False
            through = _top_level_uses(ctx, wrapper[0], index, occurrences, depth + 1)
            if not through or isinstance(through, _DeferredUses):
                return False  # the wrapped function is run from elsewhere (or kept for later)
            found.extend(through)
            continue
        found.append(index)
    found.sort()
    return _DeferredUses(found, callers) if callers else found


def _runs_it(ctx, node: cst.Name, parent: cst.CSTNode | None, grandparent: cst.CSTNode | None) -> bool:
    """`f(...)`, or `f` handed to a `lax` loop or branch, which traces it at once."""
    if isinstance(parent, cst.Call) and parent.func is node:
        return True
    if isinstance(parent, cst.Attribute) and parent.attr.value in ("lower", "trace") \
            and isinstance(grandparent, cst.Call) and grandparent.func is parent:
        return True  # `step.lower(x)`: traced there
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
