"""JAX201: Python control flow (`if`, `while`, `assert`, `and`/`or`/`not`, `x if c else y`, chained
comparisons `a < x < b`) on a traced value."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.values import MUST
from ..rulebase.rule import Rule

#: Nodes whose `test` Python converts to bool.
TEST_OWNERS = (cst.If, cst.While, cst.Assert, cst.IfExp)
#: Comparison operators that give a traced boolean array when an operand is traced.
ORDERING = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual)
EQUALITY = (cst.Equal, cst.NotEqual)


class TracedPythonControlFlow(Rule):
    code = "JAX201"
    explains_trace = True

    def __init__(self, context) -> None:
        super().__init__(context)
        #: id(`and`/`or`/`not` node) -> whether it is (part of) a test: a chain of thousands of
        #: `and` asks for each link, and each answer is its parent's
        self._in_tests: dict[int, bool] = {}

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
        if type(node.operator) is cst.Not and not self._in_test(node):
            self._test(node.expression, "`not`")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        """`a < x < b` is `(a < x) and (x < b)`: Python converts every link but the last to bool."""
        if len(node.comparisons) < 2 or self._in_test(node) or self._converted_by_parent(node):
            return  # a chain that is a test is reported with its `if`/`while`/`assert`/`and`/`not`
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.abstract:
            return
        flow = self.analysis.traced.flow(self.walk.function())
        previous = node.left
        for link in node.comparisons[:-1]:
            operator, comparator = link.operator, link.comparator
            operands = (previous, comparator)
            previous = comparator
            if isinstance(operator, EQUALITY) and any(flow.not_an_array(o) for o in operands):
                continue  # `x == None`: Python's identity fallback, a plain bool
            if isinstance(operator, ORDERING + EQUALITY) and any(self.analysis.value(o, at=self.walk).traced is MUST for o in operands):
                self.report(node, (
                    f"chained comparison on a traced value inside a function traced by `{info.label}`: Python "
                    f"evaluates `a < x < b` as `(a < x) and (x < b)`, which needs a concrete bool "
                    f"(TracerBoolConversionError); compare each side and combine them with `&` "
                    f"(`(a < x) & (x < b)`), or use `jnp.logical_and`"))
                return

    def _converted_by_parent(self, node: cst.Comparison) -> bool:
        """The left side of `and`/`or` or the operand of `not`: reported there, as a whole."""
        parent = self.walk.parent
        if isinstance(parent, cst.BooleanOperation):
            return parent.left is node
        return isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)

    def _is_elif(self, node: cst.If) -> bool:
        parent = self.walk.parent
        return type(parent) is cst.If and parent.orelse is node

    def _in_test(self, node: cst.CSTNode) -> bool:
        """Whether this boolean expression is (part of) the test of an if/while/assert: reported there."""
        parent = self.walk.parent
        if isinstance(parent, TEST_OWNERS):
            found = parent.test is node
        elif isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)):
            found = self._in_tests.get(id(parent))
            if found is None:  # a `-x` or `~x` above: its own answer was not asked for
                found = self._parent_in_test()
        else:
            found = False
        self._in_tests[id(node)] = found
        return found

    def _parent_in_test(self) -> bool:
        chain = self.walk.ancestors
        for index in range(len(chain) - 3, -1, -1):
            parent, child = chain[index], chain[index + 1]
            if isinstance(parent, TEST_OWNERS):
                return parent.test is child
            if not isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)):
                return False
        return False

    def _test(self, test: cst.BaseExpression, construct: str) -> None:
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.abstract:
            return
        value = self.analysis.value(test, at=self.walk)
        if not value.tracer:
            return  # a pytree of unknown structure may be None or a struct: Python decides its truth
        hint = "use `jnp.where(c, a, b)` or `jax.lax.cond`"
        if construct == "`while`":
            hint = "use `jax.lax.while_loop`"
        elif construct == "`assert`":
            hint = "check with `jax.experimental.checkify`, or test the value outside the traced function"
        if value.array is not MUST:  # a traced argument, which may be configuration
            hint += ", or mark the argument static (`static_argnames=`) if it is configuration"
        self.report(test, (
            f"{construct} on a traced value inside a function traced by `{info.label}`: Python needs a concrete "
            f"bool, but the value is only known when the compiled code runs (TracerBoolConversionError); {hint}"))
