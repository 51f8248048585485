"""JAX303: a traced function changes state that lives outside it.

Reported inside any traced function: an assignment to a `global`/`nonlocal` name, a mutating call
(`.append`, `.update`, …) or item assignment/deletion on a container bound outside the function, and
an attribute assignment on an outside object (not `self`/`cls`). Under the jit family and `lax`
bodies every such change is reported (it runs once per trace); under `grad`/`vmap`/… alone, which
run the Python body on every call, only storing a value computed from traced arguments is.
"""
from __future__ import annotations

import libcst as cst

from ..semantic.containers import MUTATING_METHODS
from ..jaxmodel.keys.policy import in_test_function, is_test_file
from ..semantic.scopes import Scope
from ..jaxmodel.values import MUST
from ..rulebase.rule import Rule

#: Receivers whose attributes a method legitimately sets (flax.nnx modules under nnx.jit, …).
_OWN_OBJECTS = frozenset({"self", "cls"})


class StateMutationInTraced(Rule):
    code = "JAX303"
    explains_trace = True

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported: set[int] = set()
        self._declarations = "global" in self.analysis.source or "nonlocal" in self.analysis.source

    # -- statements ---------------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._target(target.target, node, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target, node, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target, node, node.value)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target, node, None, deleting=True)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (type(func) is cst.Attribute and type(func.value) is cst.Name):
            return
        if func.attr.value not in MUTATING_METHODS or self.walk.scope.kind == "module":
            return
        name = func.value.value
        owner = self._outside(name)
        if owner is None or not self.analysis.containers.is_container(name, owner):
            return
        info = self.analysis.trace_info(at=self.walk)
        if info is None:
            return
        traced = any(self.analysis.value(arg.value, at=self.walk).holds is MUST for arg in node.args)
        args = "(...)" if node.args else "()"
        self._report(node, info, traced, f"`{name}.{func.attr.value}{args}` mutates `{name}`, a container defined outside it")

    # -- targets ------------------------------------------------------------------------------
    def _target(self, target: cst.BaseExpression, statement: cst.CSTNode, value: cst.BaseExpression | None,
                deleting: bool = False) -> None:
        if self.walk.scope.kind in ("module", "class"):
            return  # not in a function body
        if type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self._target(element.value, statement, value, deleting)
            return
        if type(target) is cst.StarredElement:
            self._target(target.value, statement, value, deleting)
            return
        if type(target) is cst.Name:
            declared = self._declared(target.value)
            if declared:
                verb = "deleting" if deleting else "assigning"
                self._check(statement, value, f"{verb} `{target.value}` (declared `{declared}`) rebinds a variable outside it")
            return
        if type(target) is cst.Subscript and type(target.value) is cst.Name:
            name = target.value.value
            owner = self._outside(name)
            if owner is not None and self.analysis.containers.is_container(name, owner):
                verb = "deleting" if deleting else "assigning"
                text = self.analysis.module.code_for_node(target)
                self._check(statement, value, f"{verb} `{text}` mutates `{name}`, a container defined outside it")
            return
        if isinstance(target, cst.Attribute):
            root = target.value
            while type(root) is cst.Attribute:
                root = root.value
            if not isinstance(root, cst.Name) or root.value in _OWN_OBJECTS or self._outside(root.value) is None:
                return
            text = self.analysis.module.code_for_node(target)
            verb = "deleting" if deleting else "setting"
            self._check(statement, value, f"{verb} `{text}` mutates `{root.value}`, an object defined outside it",
                        attribute=True)

    def _check(self, statement: cst.CSTNode, value: cst.BaseExpression | None, what: str,
               attribute: bool = False) -> None:
        info = self.analysis.trace_info(at=self.walk)
        if info is None:
            return
        if attribute and any(t.startswith("flax.nnx.") for t in info.transforms):
            return  # nnx transforms propagate attribute updates of the modules they are given
        traced = value is not None and self.analysis.value(value, at=self.walk).holds is MUST
        self._report(statement, info, traced, what)

    # -- facts --------------------------------------------------------------------------------
    def _declared(self, name: str) -> str | None:
        """'global' or 'nonlocal' when the current function declares `name` so."""
        if not self._declarations:
            return None
        scope = self.walk.scope
        if scope.node is not self.walk.function():
            return None
        if name in scope.globals:
            return "global"
        if name in scope.nonlocals:
            return "nonlocal"
        return None

    def _outside(self, name: str) -> Scope | None:
        """The scope that binds `name`, when that is outside the traced function (and not its own trace)."""
        walk, analysis = self.walk, self.analysis
        found = walk.scope.lookup(name)
        if found is None:
            return None
        owner = found[0]
        function = walk.function()
        scope: Scope | None = walk.scope
        while scope is not None:
            if scope is owner:
                return None
            if scope.node is function:
                break
            scope = scope.parent
        if isinstance(owner.node, (cst.FunctionDef, cst.Lambda)) and analysis.traced.info(owner.node) is not None \
                and id(function) not in analysis.traced.applications:
            # A helper called from the traced function that owns the variable: one trace, no leak.
            return None
        return owner

    def _report(self, node: cst.CSTNode, info, traced: bool, what: str) -> None:
        """`traced`: the value stored holds tracers on every path."""
        if id(node) in self._reported:
            return  # `a, b = …` with two outside targets: one finding for the statement
        if traced or info.runs_once:
            self._reported.add(id(node))
        if traced:
            self.report(node, (
                f"in a function traced by `{info.label}`, {what}: the traced value stored there becomes a leaked "
                f"tracer once the trace ends, and using it raises UnexpectedTracerError; return the value instead "
                f"(in a `lax` body, carry it in the loop state)"))
        elif info.runs_once and not (is_test_file(self.analysis.path) or in_test_function(self.walk.scope)):
            # tests count traces on purpose (`traces.append(None)`, `calls += 1`) to check caching
            self.report(node, (
                f"in a function traced by `{info.label}`, {what}: this runs once, while JAX traces the "
                f"function, not on every call of the compiled code; pass the state in and return the new "
                f"value, or use `jax.debug.callback` for a host-side effect on every call"))

