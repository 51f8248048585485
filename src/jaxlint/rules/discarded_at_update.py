"""JAX404: an `x.at[i].set(v)` (or `add`, `multiply`, ...) whose result is thrown away."""
from __future__ import annotations

import libcst as cst

from ..rulebase.node_fix import NodeFix, Replace
from ..rulebase.rule import Rule


class DiscardedAtUpdate(Rule):
    code = "JAX404"
    fixable = True

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        subject = _updated(call)
        if subject is None or self.analysis.displayed(node):
            return
        if not self.analysis.value(call, at=self.walk).at_update:
            return
        code = self.analysis.module.code_for_node
        shown = code(subject)
        self.report(node, (
            f"the result of `{shown}.at[...].{call.func.attr.value}(...)` is thrown away: JAX arrays are "
            f"immutable, so `{shown}` is unchanged; `.at[...]` returns the updated array, assign it "
            f"(`{shown} = {shown}.at[...]...`)"), self._fix(node, subject, code(call)))

    def _fix(self, statement: cst.Expr, subject: cst.BaseExpression, update: str) -> NodeFix | None:
        """`x = x.at[i].set(v)`, when `x` is a name of this scope: assigning a closed-over or global
        name would make it local, and `self.x` or `a[0]` would update only their owner's copy."""
        if type(subject) is not cst.Name:
            return None
        found = self.walk.scope.lookup(subject.value)
        if found is None or found[0] is not self.walk.scope:
            return None
        return NodeFix(f"Assign the update to `{subject.value}`", [Replace(statement, f"{subject.value} = {update}")])


def _updated(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` of the statement `x.at[i].set(v)`; None for any other expression (a helper that returns
    an updated copy is a call like any other: what it updates is not written there)."""
    if type(expr) is not cst.Call or type(expr.func) is not cst.Attribute:
        return None
    indexed = expr.func.value
    if type(indexed) is not cst.Subscript or type(indexed.value) is not cst.Attribute \
            or indexed.value.attr.value != "at":
        return None
    return indexed.value.value
