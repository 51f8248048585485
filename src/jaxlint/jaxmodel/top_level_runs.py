"""Which top-level statements of a script or notebook run a function of it, and so whether a module
variable keeps one value for as long as a traced function reads it.

Scripts and notebooks set their parameters, define a step function, run it (`lax.fori_loop(0, n,
step, s)`, or the jitted function called in a loop), then set new parameters and define the next
step function: each function is traced with the values current while it runs, and a later change
of the variable is no stale read. This module finds the statements that run each top-level function:
calls at top level, `lax` bodies handed over there, `f.lower(...)`, calls through a name bound to a
transform of it (`step = jax.jit(f)`), and calls from top-level functions that themselves run at
known statements. A name used in any other way (stored, passed on, read where it runs at any time)
leaves the function running at any time.

Names are resolved in the module's scope: the statements read are the module's own.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ..semantic.loops import bound_in
from ..semantic.model import SemanticModel
from ..semantic.module_state import ModuleState
from ..syntax.references import is_binding, is_reference
from ..syntax.walk import walk
from .transforms import LAX_BODIES, MODES

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

FunctionNode = cst.FunctionDef | cst.Lambda
#: a Name of the module: (index of its top-level statement, the Name, its parent, its grandparent,
#: whether it is inside a function, lambda or class body of that statement)
Occurrence = tuple[int, cst.Name, "cst.CSTNode | None", "cst.CSTNode | None", bool]


class TopLevelRuns:
    """For one file: the top-level statements that run each top-level function, and the questions
    JAX302 asks of them. Nothing is computed until asked; the first question that needs the uses
    of a name reads every reference to the module's function names in one pass over the top-level
    statements (kept for the file), and each function's uses are kept once found."""

    def __init__(self, file: "SourceFile") -> None:
        self._model = SemanticModel.of(file)
        #: the module's statements, as the model's walk recorded them
        self._body = self._model.statements
        self._names = file.names
        self._scope = file.module_scope
        self._state = ModuleState.of(file)
        self._occurrences: dict[str, list[Occurrence]] | None = None
        #: id(top-level function) -> the statements that run it, or False when it may run at any time
        self._uses: dict[int, list[int] | bool] = {}

    @classmethod
    def of(cls, file: "SourceFile") -> "TopLevelRuns":
        return file.fact(cls)

    # -- questions -------------------------------------------------------------------------------
    def traced_before_change(self, name: str, top: cst.CSTNode, function: FunctionNode | None) -> bool:
        """Whether the module variable `name` keeps one value for as long as the top-level statement
        `top` holding a read of it is in use: `top` is a `def`, or `f = jax.pmap(lambda ...)` with
        the read in that lambda (`function`, the innermost function around the read). Every use of
        the function's name is a run at a known top-level statement, and `name` is not rebound from
        the first of those to the last (it is traced at its first run and cached from then on). For
        a variable set through `global` by setup functions, every setup call must come before the
        first run. Costs the uses of the names involved (see the class)."""
        state = self._state
        wrapper = self._wrapped_lambda(top, function)
        if not isinstance(top, cst.FunctionDef) and wrapper is None:
            return False
        if state.last_binding.get(name, -1) is None:
            return isinstance(top, cst.FunctionDef) and self._set_up_before_use(name, top)
        start = state.statement_index.get(id(top))
        if start is None:
            return False
        later = [i for i in state.binding_statements.get(name, ()) if i > start]
        if not later:
            return False
        if wrapper is not None:
            uses = self._top_level_uses(wrapper, start)
            if not uses or isinstance(uses, _DeferredUses):
                return False
        else:
            uses = self._uses_of(top, set())
        if uses is False:
            return False
        # traced at its first run and cached from then on: a change between two runs is missed
        if not uses or not any(uses[0] <= i <= uses[-1] for i in later):
            return True
        # all of it in one `if __name__ == "__main__":` block: its statements run in order, once
        return uses[0] == uses[-1] and isinstance(top, cst.FunctionDef) \
            and self._set_before_run_in_block(name, self._body[uses[0]], self._runners(top))

    def _runners(self, function: cst.FunctionDef, depth: int = 0) -> set[str]:
        """The names whose use may run `function`: its own, and those of the top-level functions
        that call it, and of theirs."""
        names = {function.name.value}
        start = self._state.statement_index.get(id(function))
        direct = self._top_level_uses(function.name.value, start) if start is not None else False
        if isinstance(direct, _DeferredUses) and depth < 3:
            for caller in direct.callers:
                names |= self._runners(caller, depth + 1)
        return names

    @staticmethod
    def _set_before_run_in_block(name: str, guard: cst.CSTNode, runners: set[str]) -> bool:
        """In the script block `guard`, every statement binding `name` comes before the first one
        that mentions a function that may run the reader (calls it, wraps it): it runs with the last
        value only."""
        if not isinstance(guard, cst.If) or not _is_main_guard(guard) or guard.orelse is not None:
            return False
        statements = guard.body.body
        bindings = [i for i, statement in enumerate(statements) if name in bound_in(statement)]
        runs = [i for i, statement in enumerate(statements) if _mentions(statement, runners)]
        return bool(bindings) and bool(runs) and max(bindings) < min(runs)

    def defined_after_script_bindings(self, name: str, guard: cst.If, definition: FunctionNode | None) -> bool:
        """Whether `definition`, a function defined directly in the top-level `if __name__ ==
        "__main__":` block `guard`, comes after every binding of the module variable `name` (no
        later one there, nor after the block): such a script's function only ever sees the final
        value. Costs one walk of the block."""
        state = self._state
        if not _is_main_guard(guard) or state.last_binding.get(name) is None:
            return False
        index = state.statement_index.get(id(guard))
        if index is None or any(i > index for i in state.binding_statements.get(name, ())):
            return False
        if not isinstance(definition, cst.FunctionDef) or not any(s is definition for s in guard.body.body):
            return False
        return name not in bound_in(guard.body, after=definition)

    # -- the uses of a function ----------------------------------------------------------------
    def _wrapped_lambda(self, top: cst.CSTNode, function: FunctionNode | None) -> str | None:
        """`apply_repl = jax.pmap(lambda params, x: model.apply(params, x))` as a top-level statement,
        the read being in that lambda: the name the traced lambda is run through."""
        assignment = _transform_assignment(top)
        if assignment is None:
            return None
        wrapper, call = assignment
        if not isinstance(function, cst.Lambda) or not any(arg.value is function for arg in call.args) \
                or self._qualified_name(call.func) not in MODES:
            return None
        return wrapper

    def _set_up_before_use(self, name: str, top: cst.FunctionDef) -> bool:
        """A notebook or script global assigned through `global` by setup functions only: when every
        setup call runs before the traced function's first use, and no module-level binding comes
        between its first and last use, it sees one value (`setup(); step(x)`)."""
        state = self._state
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
        start = self._state.statement_index.get(id(function))
        uses: list[int] | bool = False
        if start is not None:
            direct = self._top_level_uses(function.name.value, start)
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

    def _top_level_uses(self, name: str, start: int, depth: int = 0) -> list[int] | bool:
        """Indices of the top-level statements that run the function bound to `name` at statement
        `start` (until its name is bound again), or False when its name is used otherwise: stored,
        passed on, or read inside a function other than a top-level `def` that calls it (those are
        returned as `_DeferredUses.callers`). Wrapped by a transform into a top-level name (`step =
        jax.jit(f)`), it runs where that name is called."""
        body = self._body
        stop = next((i for i in range(start + 1, len(body)) if name in _bound_by(body[i])), len(body))
        found: list[int] = []
        callers: list[cst.FunctionDef] = []
        for index, node, parent, grandparent, deferred in self._name_occurrences().get(name, ()):
            if index > stop:
                break
            if index == start or is_binding(node, parent):
                continue
            if deferred:
                caller = body[index]
                if isinstance(caller, cst.FunctionDef) and self._runs_it(node, parent, grandparent) and index > start:
                    if caller not in callers:
                        callers.append(caller)
                    continue
                if index > start and type(grandparent) is cst.Lambda and self._runs_it(node, parent, grandparent) \
                        and self._traced_in_statement(grandparent, caller):
                    found.append(index)  # `lax.map(lambda z: f(z), zs)`: the lambda runs there, and only there
                    continue
                return False  # read when that function runs: any time
            if index < start:
                continue  # an earlier object of the same name
            if not self._runs_it(node, parent, grandparent):
                wrapper = _transform_assignment(body[index])
                if depth >= 2 or wrapper is None or not isinstance(parent, cst.Arg) or wrapper[1] is not grandparent \
                        or self._qualified_name(grandparent.func) not in MODES:
                    return False
                through = self._top_level_uses(wrapper[0], index, depth + 1)
                if not through or isinstance(through, _DeferredUses):
                    return False  # the wrapped function is run from elsewhere (or kept for later)
                found.extend(through)
                continue
            found.append(index)
        found.sort()
        return _DeferredUses(found, callers) if callers else found

    def _runs_it(self, node: cst.Name, parent: cst.CSTNode | None, grandparent: cst.CSTNode | None) -> bool:
        """`f(...)`, or `f` handed to a `lax` loop or branch, which traces it at once."""
        if isinstance(parent, cst.Call) and parent.func is node:
            return True
        if isinstance(parent, cst.Attribute) and parent.attr.value in ("lower", "trace") \
                and isinstance(grandparent, cst.Call) and grandparent.func is parent:
            return True  # `step.lower(x)`: traced there
        return (isinstance(parent, cst.Arg) and isinstance(grandparent, cst.Call)
                and self._qualified_name(grandparent.func) in LAX_BODIES)

    def _traced_in_statement(self, function: cst.Lambda, statement: cst.CSTNode) -> bool:
        """Whether the top-level `statement` hands the lambda `function` to a `lax` loop or branch
        (`stddev = lax.map(lambda z: simulate(z), zs)`), or calls a transform of it at once
        (`jax.jit(lambda: f(x))()`): it is traced there, while the statement runs. The lambda is a
        new object each time the statement runs, so no trace of it is reused by a later statement.
        A lambda stored or passed anywhere else may run at any time."""
        pending: list[cst.CSTNode] = [statement]
        while pending:
            node = pending.pop()
            if type(node) is cst.Call:
                if any(arg.value is function for arg in node.args):
                    name = self._qualified_name(node.func)
                    if name in LAX_BODIES:
                        return True
                    return name in MODES and self._called_at_once(node, statement)
            if type(node) in (cst.FunctionDef, cst.ClassDef) or node is function:
                continue
            pending.extend(node.children)
        return False

    @staticmethod
    def _called_at_once(wrapper: cst.Call, statement: cst.CSTNode) -> bool:
        """`jax.jit(f)(x)`: the transformed function is called in the expression that makes it."""
        pending: list[cst.CSTNode] = [statement]
        while pending:
            node = pending.pop()
            if type(node) is cst.Call and node.func is wrapper:
                return True
            pending.extend(node.children)
        return False

    def _qualified_name(self, expr: cst.BaseExpression) -> str | None:
        return self._names.qualified_name(expr, self._scope)

    def _name_occurrences(self) -> dict[str, list[Occurrence]]:
        """Every reference to the name of a top-level function, or of a top-level name bound to a
        call (`loss_grad = jax.value_and_grad(mse)`), in statement order: one pass over the model's
        record of the walk for all of them (one per function made big files quadratic)."""
        if self._occurrences is not None:
            return self._occurrences
        body = self._body
        names = {s.name.value for s in body if isinstance(s, cst.FunctionDef)}
        for statement in body:
            wrapper = _transform_assignment(statement)
            if wrapper is not None:
                names.add(wrapper[0])
        found: dict[str, list[Occurrence]] = {}
        for occurrence in self._model.names_in_statements(names):
            if is_reference(occurrence.node, occurrence.parent):
                found.setdefault(occurrence.node.value, []).append(occurrence)
        self._occurrences = found
        return found


class _DeferredUses(list):
    """Top-level statements that run a function, plus the top-level functions that call it (which
    run it whenever they run)."""

    def __init__(self, indices: list[int], callers: list[cst.FunctionDef]) -> None:
        super().__init__(indices)
        self.indices = indices
        self.callers = callers


def _is_main_guard(statement: cst.If) -> bool:
    test = statement.test
    return isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == "__name__"


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


def _bound_by(statement: cst.CSTNode) -> set[str]:
    """The names a top-level statement binds as a whole: a `def` or `class`, or the plain targets of
    its assignments."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return {statement.name.value}
    names: set[str] = set()
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                [small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) else [])
            pending = list(targets)
            while pending:
                target = pending.pop()
                if isinstance(target, cst.Name):
                    names.add(target.value)
                elif isinstance(target, (cst.Tuple, cst.List)):
                    pending.extend(e.value for e in target.elements)
    return names


def _mentions(statement: cst.CSTNode, names: set[str]) -> bool:
    """Whether one of the names is read anywhere in the statement."""
    found = [False]

    def enter(node: cst.CSTNode, _field: str) -> bool:
        if type(node) is cst.Name and node.value in names:
            found[0] = True
        return not found[0]

    walk(statement, enter, None)
    return found[0]
