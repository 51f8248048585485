"""What JAX asks of the arguments of a jitted function when its wrapper is called, read from the
transforms `traced.TracedFunctions` found applied and the calls it resolved:

* static arguments are hashed, to look the compiled code up: `static_arguments(call)` gives, for a
  call of a jitted function, the expressions it passes at static positions;
* every other argument must be a pytree of arrays: `receivers()` gives the methods jitted with their
  `self` among the traced arguments (`@jax.jit` on a method, `jax.jit(Class.method)`), and those
  whose `self` is static, with the class.

`unhashable(expr, scope)` says what an expression certainly is that no hash takes: a list, dict or
set (a display, a comprehension, a constructor call, or a name every binding reaching it binds to
one), or a NumPy or JAX array.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ..semantic.containers import CONTAINER_CALLS
from ..semantic.scopes import Scope
from ..syntax.arguments import Passing
from .calls import Application, ClassInfo, FunctionNode
from .name_origins import NameOrigins
from .signatures import positional_params
from .traced import TracedFunctions

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

#: transforms that hash their static arguments on every call of the wrapper
STATIC_HASHING = frozenset({"jax.jit", "jax.experimental.pjit.pjit", "jax.pmap", "flax.nnx.jit"})
#: transforms that make every argument not static an abstract array: an object JAX does not know
#: as a pytree raises `TypeError`
EVERY_ARGUMENT_TRACED = frozenset({"jax.jit", "jax.experimental.pjit.pjit", "jax.pmap"})
_DISPLAYS = {cst.List: "a list", cst.ListComp: "a list", cst.Dict: "a dict", cst.DictComp: "a dict",
             cst.Set: "a set", cst.SetComp: "a set"}
_CONTAINERS = {"list": "a list", "set": "a set", "deque": "a deque"}
_MAX_DEPTH = 8


@dataclass(frozen=True)
class StaticArgument:
    """An expression a call passes at a static position of a jitted function."""

    param: str
    value: cst.BaseExpression
    function: FunctionNode
    transform: str


@dataclass(frozen=True)
class JittedMethod:
    """A method given to a transform that traces every argument, without its `self` bound."""

    function: cst.FunctionDef
    cls: ClassInfo
    #: where the transform is applied: the decorator, or the call (`jax.jit(Agent.step)`)
    applied_by: cst.Decorator | cst.Call
    transform: str
    #: `self` is among the static arguments (`static_argnums=0`)
    static_self: bool


class JitSignatures:
    """Per file (`JitSignatures.of(ctx)`), built on first use from `TracedFunctions`."""

    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        self.traced = ctx.fact(TracedFunctions)
        self._static_by_call: dict[int, list[StaticArgument]] | None = None
        self._receivers: dict[int, JittedMethod] | None = None

    @classmethod
    def of(cls, ctx: "SourceFile") -> "JitSignatures":
        return ctx.fact(cls)

    def static_arguments(self, call: cst.Call) -> list[StaticArgument]:
        """The expressions `call` passes at static positions of a jitted function of the module (by
        position or by keyword: JAX maps `static_argnums` to names and back). A parameter that keeps
        its default is not hashed, and is not among them."""
        if self._static_by_call is None:
            self._static_by_call = self._collect_static()
        return self._static_by_call.get(id(call), [])

    def receivers(self) -> dict[int, JittedMethod]:
        """id(decorator or call) -> the method it jits with `self` unbound."""
        if self._receivers is None:
            self._receivers = self._collect_receivers()
        return self._receivers

    def unhashable(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> str | None:
        """What the expression certainly is that has no hash ("a list", "a JAX array", …); None when
        it may hash."""
        shown = _DISPLAYS.get(type(expr))
        if shown is not None:
            return shown
        if depth > _MAX_DEPTH:
            return None
        if type(expr) is cst.Call:
            callee = self.ctx.names.qualified_name(expr.func, scope)
            if callee in CONTAINER_CALLS:
                return _CONTAINERS.get(callee.rpartition(".")[2], "a dict")
        origins = NameOrigins.of(self.ctx)
        if type(expr) is cst.Name:
            found = origins.reaching(expr, scope)
            values = [o for o in found[1] if o.kind != "annotation"] if found is not None else []
            if not values or any(o.kind != "value" or o.value is None for o in values):
                return None
            kinds = {self.unhashable(o.value, found[0], depth + 1) for o in values}
            return kinds.pop() if len(kinds) == 1 else None if None in kinds else "a list, dict, set or array"
        if type(expr) is cst.Call:
            if origins.certain_numpy_array(expr, scope):
                return "a NumPy array"
            if origins.certain_array(expr, scope):
                return "a JAX array"
        return None

    def _not_on_an_instance(self, function: cst.FunctionDef, cls: ClassInfo) -> bool:
        """A method whose first parameter is not an instance: `@classmethod`, `@staticmethod`."""
        names = {self.ctx.names.qualified_name(d.decorator, cls.scope) for d in function.decorators}
        return bool(names & {"builtins.classmethod", "builtins.staticmethod"})

    # -- collection -----------------------------------------------------------------------------
    def _collect_static(self) -> dict[int, list[StaticArgument]]:
        traced = self.traced
        found: dict[int, list[StaticArgument]] = {}
        by_id = {id(function): function for function in traced.functions}
        for key, uses in traced.applications.items():
            function = by_id.get(key)
            if function is None or key in traced.external:
                continue
            for use in uses:
                if use.transform not in STATIC_HASHING:
                    continue
                static = traced.static_params(function, use)
                if not static:
                    continue
                sites = use.sites if use.sites is not None else traced.call_sites.get(key, ())
                for site in sites:
                    bound = site.bind()
                    for param in sorted(static):
                        passed = bound.get(param)
                        if passed is not None and passed.how is Passing.ARGUMENT:
                            found.setdefault(id(site.call), []).append(
                                StaticArgument(param, passed.values[0], function, use.transform))
        return found

    def _collect_receivers(self) -> dict[int, JittedMethod]:
        traced = self.traced
        found: dict[int, JittedMethod] = {}
        for function in traced.functions:
            cls = traced.method_class.get(id(function))
            if cls is None or type(function) is not cst.FunctionDef or id(function) not in traced.methods \
                    or self._not_on_an_instance(function, cls):
                continue
            receiver = positional_params(function)[:1]
            if not receiver:
                continue
            for use in traced.applications.get(id(function), ()):
                applied_by = traced.applied_by.get(id(use))
                if use.transform not in EVERY_ARGUMENT_TRACED or applied_by is None or _self_bound(use):
                    continue
                static = traced.static_params(function, use)
                if static is None:
                    continue
                found[id(applied_by)] = JittedMethod(function, cls, applied_by, use.transform, receiver[0] in static)
        return found


def _self_bound(use: Application) -> bool:
    """`jax.jit(self.step)`, `jax.jit(partial(Agent.step, agent))`: the bound method closes over `self`."""
    return use.bound_positional > 0 or use.skip > 0


