"""JAX201: Python control flow (`if`, `while`, `assert`, `and`/`or`/`not`, `x if c else y`) on a traced value."""
from __future__ import annotations

import libcst as cst

from ..facts.values import Kind
from ..rule import Rule

#: Nodes whose `test` Python converts to bool.
TEST_OWNERS = (cst.If, cst.While, cst.Assert, cst.IfExp)


class TracedPythonControlFlow(Rule):
    code = "JAX201"

    def visit_If(self, node: cst.If) -> None:
        self._test(node.test, "`if`" if not self._is_elif(node) else "`elif`")

    def visit_While(self, node: cst.While) -> None:
        self._test(node.test, "`while`")

    def visit_Assert(self, node: cst.Assert) -> None:
        self._test(node.test, "`assert`")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._test(node.test, "a conditional expression (`a if c else b`)")

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if not self._in_test(node):
            operator = "and" if isinstance(node.operator, cst.And) else "or"
            self._test(node.left, f"`{operator}`")

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not) and not self._in_test(node):
            self._test(node.expression, "`not`")

    def _is_elif(self, node: cst.If) -> bool:
        parent = self.ctx.parent
        return isinstance(parent, cst.If) and parent.orelse is node

    def _in_test(self, node: cst.CSTNode) -> bool:
        """Whether this boolean expression is (part of) the test of an if/while/assert: reported there."""
        chain = self.ctx.ancestors
        child = node
        for parent in reversed(chain[:-1]):
            if isinstance(parent, TEST_OWNERS):
                return parent.test is child
            if not isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)):
                return False
            child = parent
        return False

    def _test(self, test: cst.BaseExpression, construct: str) -> None:
        info = self.ctx.trace_info()
        if info is None or not info.abstract:
            return
        kind = self.ctx.kind(test)
        if kind not in (Kind.ARRAY, Kind.BOOL, Kind.PARAM):
            return
        hint = "use `jnp.where(c, a, b)` or `jax.lax.cond`"
        if construct == "`while`":
            hint = "use `jax.lax.while_loop`"
        elif construct == "`assert`":
            hint = "check with `jax.experimental.checkify`, or test the value outside the traced function"
        if kind == Kind.PARAM:
            hint += ", or mark the argument static (`static_argnames=`) if it is configuration"
        self.report(test, (
            f"{construct} on a traced value inside a function traced by `{info.label}`: Python needs a concrete "
            f"bool, but the value is only known when the compiled code runs (TracerBoolConversionError); {hint}"))
