"""JAX205: a long Python `for` loop over a constant `range` inside a traced function is unrolled."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.external import ConfiguredInteger
from ..rulebase.rule import Rule


class PythonLoopUnrolled(Rule):
    code = "JAX205"
    explains_trace = True

    def visit_For(self, node: cst.For) -> None:
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.abstract:
            return
        counted = self._trip_count(node.iter)
        threshold = self.analysis.settings.loop_unroll_threshold
        if counted is None or counted[0] < threshold:
            return
        if not self.analysis.traced.computes_in(node.body, self.walk.function(), self.walk.scope):
            return  # unrolling a body that traces nothing adds nothing to the program
        trips, configured = counted
        self.report(node.iter, (
            f"Python `for` loop of {trips} iterations{self._sources(configured)} inside a function traced by "
            f"`{info.label}`: JAX unrolls it while tracing, so the program and its compile time grow with every "
            f"iteration; use `jax.lax.fori_loop(0, {trips}, body, init)` or `jax.lax.scan`, which compile the "
            f"body once"))

    def _trip_count(self, expr: cst.BaseExpression) -> tuple[int, list[ConfiguredInteger]] | None:
        """The number of iterations of `range(...)` with constant bounds, and the configuration
        values among them (a field's default, a command-line option's)."""
        if not isinstance(expr, cst.Call) or self.walk.qualified_name(expr.func) != "builtins.range":
            return None
        if not 1 <= len(expr.args) <= 3 or any(a.keyword is not None or a.star for a in expr.args):
            return None
        literals, configured, scope = self.analysis.literals, self.analysis.configured, self.walk.scope
        bounds: list[int] = []
        sources: list[ConfiguredInteger] = []
        for arg in expr.args:
            bound = literals.integer(arg.value, scope)
            if bound is None:
                found = configured.integer(arg.value, scope)
                if found is None:
                    return None
                bound = found.value
                sources.append(found)
            bounds.append(bound)
        if len(bounds) == 3 and bounds[2] == 0:
            return None
        return len(range(*bounds)), sources

    def _sources(self, configured: list[ConfiguredInteger]) -> str:
        """` (128 is the default of `--num-steps` at line 30, which the command line can change)`."""
        if not configured:
            return ""
        said = []
        for found in configured:
            where = f"{found.path}:{found.line}" if found.path is not None else self.analysis.line_label(found.line)
            change = ", which the command line can change" if found.command_line else ""
            said.append(f"{found.value} is {found.what} at {where}{change}")
        return f" ({'; '.join(said)})"
