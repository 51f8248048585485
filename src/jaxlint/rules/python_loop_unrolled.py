"""JAX205: a long Python `for` loop over a constant `range` inside a traced function is unrolled."""
from __future__ import annotations

import libcst as cst

from ..rulebase.rule import Rule


class PythonLoopUnrolled(Rule):
    code = "JAX205"
    explains_trace = True

    def visit_For(self, node: cst.For) -> None:
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.abstract:
            return
        trips = self._trip_count(node.iter)
        threshold = self.analysis.settings.loop_unroll_threshold
        if trips is None or trips < threshold:
            return
        if not self.analysis.traced.computes_in(node.body, self.walk.function(), self.walk.scope):
            return  # unrolling a body that traces nothing adds nothing to the program
        self.report(node.iter, (
            f"Python `for` loop of {trips} iterations inside a function traced by `{info.label}`: JAX unrolls it "
            f"while tracing, so the program and its compile time grow with every iteration; use "
            f"`jax.lax.fori_loop(0, {trips}, body, init)` or `jax.lax.scan`, which compile the body once"))

    def _trip_count(self, expr: cst.BaseExpression) -> int | None:
        if not isinstance(expr, cst.Call) or self.walk.qualified_name(expr.func) != "builtins.range":
            return None
        if not 1 <= len(expr.args) <= 3 or any(a.keyword is not None or a.star for a in expr.args):
            return None
        literals = self.analysis.literals
        bounds = [literals.integer(a.value, self.walk.scope) for a in expr.args]
        if any(b is None for b in bounds) or (len(bounds) == 3 and bounds[2] == 0):
            return None
        return len(range(*bounds))
