"""JAX503: `jax.jit` applied inside a function that JAX already traces."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.jax_names import DEVICE_MAPS
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
        transform, function = application
        if transform not in DEVICE_MAPS:
            self._report(node, short_name(transform), info)
        elif _identity(function):
            # A device map still partitions its work inside a trace (it lowers to a `shard_map`), so
            # only one that computes nothing is pointless there.
            self.report(node, (
                f"`{short_name(transform)}` of the identity inside a function already traced by `{info.label}` "
                f"computes nothing: in the outer computation it only lays the value out over the devices, and "
                f"the operations that use the value lay it out as they need; pass the value on directly (to "
                f"place data, `jax.device_put` it with a sharding before the traced call)"))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not node.decorators or self.walk.function() is None:
            return
        for decorator in node.decorators:
            transform = self.analysis.jax.jit_transform(decorator.decorator, self.walk)
            if transform is None or transform in DEVICE_MAPS:
                continue  # a device map still spreads its work over the devices inside a trace
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
        on its own (JAX logs a separate compilation), so it is not redundant there. A device map (`pmap`)
        inside any of them is not inlined either: it still partitions its work over the devices.
        """
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.runs_once:
            return None
        # "Redundant" must hold on every path: a function also called outside any trace (a script, a
        # test, another module) needs its inner jit there.
        if not self.analysis.traced_on_every_path(at=self.walk):
            return None
        return info

    def _report(self, node: cst.CSTNode, jit: str, info) -> None:
        self.report(node, (
            f"`{jit}` inside a function already traced by `{info.label}` is redundant: it does not compile "
            f"separately, the call is inlined into the outer computation; call the function directly (keep a "
            f"jitted helper defined once outside only to reuse its trace when it is called many times)"))


def _identity(function: cst.BaseExpression) -> bool:
    """`lambda x: x`."""
    if not isinstance(function, cst.Lambda) or function.params.star_arg is not cst.MaybeSentinel.DEFAULT:
        return False
    params = function.params.params
    return (len(params) == 1 and not function.params.kwonly_params and not function.params.posonly_params
            and isinstance(function.body, cst.Name) and function.body.value == params[0].name.value)


def _has_placement(call: cst.Call) -> bool:
    return any(arg.keyword is not None and arg.keyword.value in PLACEMENT_OPTIONS for arg in call.args)
