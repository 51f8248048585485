"""JAX501: a jit-like transform applied inside a loop body."""
from __future__ import annotations

import libcst as cst

from ..rule import Rule


class JitInLoop(Rule):
    code = "JAX501"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        #: functions defined inside a loop body: a new object every iteration
        self.defined_in_loop: dict[int, set[str]] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        loop = self.ctx.innermost_loop()
        if loop is None:
            return
        self.defined_in_loop.setdefault(id(loop), set()).add(node.name.value)
        if self.ctx.jax.inside_jitted_function(self.ctx):
            return
        for decorator in node.decorators:
            transform = self.ctx.jax.jit_transform(decorator.decorator, self.ctx)
            if transform:
                self.report(decorator.decorator, (
                    f"`@{_short(transform)}` on a function defined inside a loop: the function is a new object "
                    f"every iteration, so it is traced and compiled again each time; define and jit it once, "
                    f"before the loop"))

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        application = ctx.jax.jit_application(node, ctx)
        if application is None:
            return
        loop = ctx.innermost_loop()
        if loop is None or ctx.jax.inside_jitted_function(ctx):
            return
        transform, function = application
        jit = _short(transform)
        fresh = self._fresh_function(function, loop)
        if fresh:
            self.report(node, (
                f"`{jit}` of {fresh} inside a loop: a new function object every iteration, so every iteration "
                f"traces and compiles again; build the jitted function once, before the loop"))
        else:
            self.report(node, (
                f"`{jit}` applied inside a loop: JAX reuses the compiled code, but each iteration builds a new "
                f"wrapper and repeats the cache lookup; hoist `{jit}(...)` out of the loop and call the result"))

    def _fresh_function(self, function: cst.BaseExpression, loop: cst.CSTNode) -> str | None:
        if isinstance(function, cst.Lambda):
            return "a lambda"
        wrapper = self.ctx.jax.is_function_wrapper_call(function, self.ctx)
        if wrapper:
            return f"a `{_short(wrapper)}(...)` wrapper"
        if isinstance(function, cst.Name) and function.value in self.defined_in_loop.get(id(loop), ()):
            return f"`{function.value}`, defined in the loop body,"
        return None


def _short(qualified: str) -> str:
    """`jax.jit` stays, `functools.partial` becomes `partial`, `equinox.filter_jit` becomes `eqx.filter_jit`."""
    if qualified.startswith("functools."):
        return qualified.split(".", 1)[1]
    if qualified.startswith("equinox."):
        return "eqx." + qualified.split(".", 1)[1]
    return qualified
