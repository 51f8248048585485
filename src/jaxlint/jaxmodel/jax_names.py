"""Which qualified names are JAX transforms, and how a wrapper expression names one."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ..catalogue.frameworks import load_frameworks
from ..model.settings import Settings

if TYPE_CHECKING:
    from ..semantic.walk_state import WalkState

#: Transforms whose body runs once per trace and is then cached.
JIT_FAMILY = load_frameworks().names(mode="jit")
#: Transforms that map a function over devices, and still do inside another jit (not inlined there).
DEVICE_MAPS = load_frameworks().names(mode="jit", partitions=True)
#: Transforms that wrap a function in a new function object on every application.
FUNCTION_WRAPPERS = frozenset(t.name for t in load_frameworks().transforms.values() if t.new_function)
PARTIAL = frozenset({"functools.partial"})
#: Decorators that keep a function's result per distinct argument: the body runs once for each, and
#: later calls get the kept result.
MEMOISING = frozenset({"functools.cache", "functools.lru_cache"})


class JaxNames:
    def __init__(self, settings: Settings) -> None:
        self.jit_family = JIT_FAMILY | frozenset(
            name for name, (mode, _) in settings.declared_transforms().items() if mode == "jit")
        #: id(call) -> (the scope it was asked in, `jit_application`'s answer): several rules ask
        #: about each call of a file, at the same node
        self._applications: dict[int, tuple[object, tuple[str, cst.BaseExpression] | None]] = {}

    def jit_transform(self, expr: cst.BaseExpression, ctx: "WalkState") -> str | None:
        """The jit-like transform an expression applies when called on a function, or None.

        Recognises `jax.jit`, `partial(jax.jit, static_argnums=…)` and `jax.jit(static_argnames=…)`.
        """
        qname = ctx.qualified_name(expr)
        if qname in self.jit_family:
            return qname
        if isinstance(expr, cst.Call):
            callee = ctx.qualified_name(expr.func)
            if callee in PARTIAL and expr.args and expr.args[0].keyword is None:
                inner = ctx.qualified_name(expr.args[0].value)
                return inner if inner in self.jit_family else None
            if callee in self.jit_family and not any(a.keyword is None for a in expr.args):
                return callee
        return None

    def jit_application(self, call: cst.Call, ctx: "WalkState") -> tuple[str, cst.BaseExpression] | None:
        """For `jax.jit(f, …)` or `partial(jax.jit, …)(f)`: the transform and the function given to it."""
        known = self._applications.get(id(call))
        if known is not None and known[0] is ctx.scope:
            return known[1]
        answer = self._jit_application(call, ctx)
        self._applications[id(call)] = (ctx.scope, answer)
        return answer

    def _jit_application(self, call: cst.Call, ctx: "WalkState") -> tuple[str, cst.BaseExpression] | None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if not positional:
            return None
        callee = ctx.qualified_name(call.func)
        if callee in self.jit_family:
            return callee, positional[0].value
        transform = self.jit_transform(call.func, ctx) if type(call.func) is cst.Call else None
        if transform is not None:
            return transform, positional[0].value
        return None

    def is_function_wrapper_call(self, expr: cst.BaseExpression, ctx: "WalkState") -> str | None:
        """`jax.grad(f)`, `partial(f, …)`, `jax.vmap(f)`: calls that return a new function object."""
        if not isinstance(expr, cst.Call):
            return None
        callee = ctx.qualified_name(expr.func)
        if callee in FUNCTION_WRAPPERS or callee in PARTIAL:
            return callee
        return None
