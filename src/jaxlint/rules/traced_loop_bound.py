"""JAX202: a Python iteration count (`range(n)`, `itertools.repeat(v, n)`) taken from a traced value."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.values import MUST
from ..rulebase.rule import Rule

#: callee -> (positional indices, keyword names) of its count arguments
COUNTED = {
    "builtins.range": ((0, 1, 2), ()),
    "itertools.repeat": ((1,), ("times",)),
}


class TracedLoopBound(Rule):
    code = "JAX202"
    explains_trace = True

    def visit_Call(self, node: cst.Call) -> None:
        callee = self.walk.qualified_name(node.func)
        if callee not in COUNTED:
            return
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.abstract:
            return
        indices, keywords = COUNTED[callee]
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        counts = [positional[i] for i in indices if i < len(positional)]
        counts += [a.value for a in node.args if a.keyword is not None and a.keyword.value in keywords]
        if not any(self.analysis.value(count, at=self.walk).traced is MUST for count in counts):
            return
        shown = "range()" if callee == "builtins.range" else "itertools.repeat()"
        self.report(node, (
            f"`{shown}` gets its count from a traced value inside a function traced by `{info.label}`: Python "
            f"needs a concrete integer, but the value is only known when the compiled code runs "
            f"(TracerIntegerConversionError); loop with `jax.lax.fori_loop(lower, upper, body, init)` or "
            f"`jax.lax.scan`, derive the count from a static shape (`x.shape[0]`), or pass it as a static "
            f"argument (`static_argnames=`)"))
