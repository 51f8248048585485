"""JAX503: `jax.jit` applied inside a function that JAX already traces."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.transforms import short_name
from ..rulebase.rule import Rule

#: Options with which an inner jit does more than the outer trace would (placement, sharding).
PLACEMENT_OPTIONS = frozenset({"in_shardings", "out_shardings", "device", "backend"})


class NestedJit(Rule):
    code = "JAX503"
    explains_trace = True

    def visit_Call(self, node: cst.Call) -> None:
        walk, analysis = self.walk, self.analysis
        application = analysis.jax.jit_application(node, walk)
        if application is None:
            return
        info = self._outer()
        if info is None or _has_placement(node) or isinstance(node.func, cst.Call) and _has_placement(node.func):
            return
        self._report(node, short_name(application[0]), info)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not node.decorators or self.walk.function() is None:
            return
        for decorator in node.decorators:
            transform = self.analysis.jax.jit_transform(decorator.decorator, self.walk)
            if transform is None:
                continue
            expr = decorator.decorator
            if isinstance(expr, cst.Call) and _has_placement(expr):
                continue
            info = self._outer()
            if info is None:
                return
            self._report(expr, short_name(transform), info)

    def _outer(self):
        """The trace around the current node, when it inlines a nested jit: the jit family and lax bodies.

        Under `vmap`, `checkpoint` or `grad` alone the inner jit still compiles the transformed function
        on its own (JAX logs a separate compilation), so it is not redundant there.
        """
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.runs_once:
            return None
        return info

    def _report(self, node: cst.CSTNode, jit: str, info) -> None:
        self.report(node, (
            f"`{jit}` inside a function already traced by `{info.label}` is redundant: it does not compile "
            f"separately, the call is inlined into the outer computation; call the function directly (keep a "
            f"jitted helper defined once outside only to reuse its trace when it is called many times)"))


def _has_placement(call: cst.Call) -> bool:
    return any(arg.keyword is not None and arg.keyword.value in PLACEMENT_OPTIONS for arg in call.args)
