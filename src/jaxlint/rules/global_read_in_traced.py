"""JAX302: a function whose body runs once per trace reads a module variable that is reassigned elsewhere."""
from __future__ import annotations

import libcst as cst

from ..rulebase.rule import Rule
from ..semantic.names import BUILTIN_NAMES
from ..syntax.references import is_binding, is_reference


class GlobalReadInTraced(Rule):
    code = "JAX302"
    explains_trace = True

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reassigned: dict[str, str] | None = None

    def names_wanted(self) -> dict[str, str]:
        if self._reassigned is None:
            self._reassigned = self.analysis.module_state.reassigned
        return self._reassigned

    def visit_Name(self, node: cst.Name) -> None:
        walk, analysis = self.walk, self.analysis
        name = node.value
        if self._reassigned is None:
            self._reassigned = self.analysis.module_state.reassigned
        reason = self._reassigned.get(name)
        if reason is None:
            return
        info = analysis.trace_info(at=walk)
        if info is None or not info.runs_once:
            return
        parent = walk.parent
        if not is_reference(node, parent) or is_binding(node, parent):
            return
        state = self.analysis.module_state
        found = walk.scope.lookup(name)
        if found is None:
            if name in BUILTIN_NAMES:
                return
        elif found[0].kind != "module":
            return  # a local, a parameter or a closed-over variable of the same name
        if self._assigns_global_here(name):
            return  # the function rebinds it itself: JAX303 reports the assignment
        if self._traced_afresh(info.node):
            return  # a new function object every time: traced again with the value current then
        top = walk.ancestors[1] if len(walk.ancestors) > 1 else None
        if top is not None and not state.may_change_after(name, top):
            return  # defined after the last rebinding: the function only ever sees the final value
        runs = self.analysis.top_level_runs
        if top is not None and runs.traced_before_change(name, top, walk.function()):
            return  # a script's step function, run (and traced) before the variable changes
        if isinstance(top, cst.If) and runs.defined_after_script_bindings(name, top, self._outermost_function()):
            return  # defined in the `__main__` block after the last assignment: sees the final value
        self.report(node, (
            f"`{name}` is a global variable {reason}, read inside a function traced by `{info.label}`: "
            f"its value at trace time is baked into the compiled code and later changes are ignored "
            f"until JAX retraces; pass `{name}` as an argument (or a `static_argnames` argument if it is "
            f"configuration)"))

    def _outermost_function(self) -> cst.FunctionDef | cst.Lambda | None:
        """The function around the read that a top-level block (`if __name__ == "__main__":`) holds."""
        return next((a for a in self.walk.ancestors[2:] if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)

    def _traced_afresh(self, function: cst.CSTNode) -> bool:
        """Whether the traced function is a new object each time it is traced, so that no compiled
        version outlives the value it read: a lambda jitted and called in one expression
        (`jax.jit(lambda: model.init(key, x), backend="cpu")()`, also through `jax.hessian`/`grad`/
        `partial` wrappers), or a lambda or `def` made in a loop body (made and traced again every
        iteration)."""
        ancestors = self.walk.ancestors
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

    def _assigns_global_here(self, name: str) -> bool:
        for scope in self.walk.scope.enclosing_for_lookup():
            if scope.kind == "function":
                return name in scope.globals and name in scope.bindings
        return False
