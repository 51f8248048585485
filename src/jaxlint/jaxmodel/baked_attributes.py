"""Attributes of `self` that a jitted method bakes in: the method is traced with its `self` fixed
(a bound method given to `jax.jit`, or `self` among the static arguments), so every `self.x` it
reads is a constant of the compiled code, while another method of the object replaces `x` later.

A bound method closes over its object, and a static `self` is looked up in the cache by its hash
and equality, and an object changed in place still finds the entry it made): either way the function
compiled at the first call keeps the attribute's value of that call. Only a plain class counts (no
decorator, no framework module or pytree base, not given to a registration), and only a
replacement made where the compiled function runs too: by a method that calls the jitted method
(or its wrapper kept on the object), or by a method such a method calls on `self`. A method that
only loads or resets state, never seen running with the jitted function, may run before the first
call (when nothing is compiled yet): not known, not reported; nor is a replacement by a method that
jits the method again (the new wrapper traces with the values current then).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ..semantic.model import SemanticModel
from ..semantic.scopes import Scope
from .calls import Application, ClassInfo
from .signatures import positional_params
from .traced import TracedFunctions
from .transforms import LINEN_MODULE_BASES, NNX_PYTREE_BASES, PYTREE_DATACLASS_BASES

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

#: transforms whose compiled function is cached on the wrapper and keyed by the static arguments'
#: hash: what the traced body reads from a fixed `self` is never read again
CACHING_JITS = frozenset({"jax.jit", "jax.experimental.pjit.pjit"})
#: methods that build the object: what they assign is there before any call
CONSTRUCTION = frozenset({"__init__", "__post_init__", "__new__"})
_FRAMEWORK_BASES = LINEN_MODULE_BASES | NNX_PYTREE_BASES | PYTREE_DATACLASS_BASES


@dataclass(frozen=True)
class FixedReceiver:
    """A method traced with its `self` fixed at trace time."""

    method: cst.FunctionDef
    cls: ClassInfo
    #: how `self` is fixed, as a message says it
    how: str
    #: the jitted method whose trace runs this one (itself, or the method that calls it on `self`)
    root: cst.FunctionDef


@dataclass(frozen=True)
class BakedRead:
    """A read of `self.<attribute>` baked into a compiled function, and who replaces the attribute."""

    attribute: str
    receiver: FixedReceiver
    replaced_by: cst.FunctionDef


class BakedAttributes:
    """Per file (`BakedAttributes.of(ctx)`), built on first use from `TracedFunctions`."""

    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        self.traced = ctx.fact(TracedFunctions)
        self._receivers: dict[int, FixedReceiver] | None = None
        #: id(class) -> attribute -> the method that replaces it while the jitted code runs
        self._replaced: dict[int, dict[str, cst.FunctionDef]] = {}

    @classmethod
    def of(cls, ctx: "SourceFile") -> "BakedAttributes":
        return ctx.fact(cls)

    def baked_read(self, attribute: cst.Attribute, scope: Scope) -> BakedRead | None:
        """What `self.<attr>` (read where `scope` is) bakes in, when the `self` it names is the fixed
        receiver of a jitted method and a method running with that jitted method replaces the
        attribute; None otherwise."""
        base = attribute.value
        if type(base) is not cst.Name:
            return None
        found = scope.lookup(base.value)
        if found is None or found[0].kind != "function" or type(found[0].node) is not cst.FunctionDef:
            return None
        method = found[0].node
        if positional_params(method)[:1] != [base.value]:
            return None
        receiver = self.receivers().get(id(method))
        if receiver is None:
            return None
        name = attribute.attr.value
        if name in receiver.cls.replaced_by and any(m is method for m in receiver.cls.replaced_by[name]):
            return None  # the traced method assigns it itself: a side effect, not a stale read
        replacing = self._replaced_while_running(receiver.cls).get(name)
        return BakedRead(name, receiver, replacing) if replacing is not None else None

    def receivers(self) -> dict[int, FixedReceiver]:
        """id(method) -> how it is traced with `self` fixed: jitted so (a bound method given to a
        caching jit and kept, or `self` static), or called on `self` from such a method."""
        if self._receivers is None:
            self._receivers = self._collect_receivers()
        return self._receivers

    # -- collection -----------------------------------------------------------------------------
    def _collect_receivers(self) -> dict[int, FixedReceiver]:
        traced = self.traced
        found: dict[int, FixedReceiver] = {}
        for function in traced.functions:
            cls = traced.method_class.get(id(function))
            if cls is None or type(function) is not cst.FunctionDef or id(function) not in traced.methods \
                    or not positional_params(function) or not self._plain_object(cls):
                continue
            for use in traced.applications.get(id(function), ()):
                how = self._fixing(function, use)
                if how is not None:
                    found[id(function)] = FixedReceiver(function, cls, how, function)
                    break
        pending = list(found.values())
        while pending:
            caller = pending.pop()
            for helper, cls in self._called_on_self(caller):
                if id(helper) not in found:
                    found[id(helper)] = FixedReceiver(helper, cls, caller.how, caller.root)
                    pending.append(found[id(helper)])
        return found

    def _fixing(self, function: cst.FunctionDef, use: Application) -> str | None:
        """How this application fixes the method's `self` for good, or None."""
        if use.transform not in CACHING_JITS:
            return None
        applied_by = self.traced.applied_by.get(id(use))
        if applied_by is None:
            return None
        label = use.transform.replace("jax.experimental.pjit.", "jax.")
        if use.bound_positional > 0 and use.skip == 0 and type(applied_by) is cst.Call:
            if any(site.call.func is applied_by for site in use.sites or ()):
                return None  # `jax.jit(self.step)(x)`: a new wrapper, traced again every time
            return f"given to `{label}` as a bound method, which closes over `self`"
        static = self.traced.static_params(function, use)
        if use.bound_positional == 0 and static is not None and positional_params(function)[0] in static:
            return f"traced by `{label}` with `self` static, which keeps the object it first saw"
        return None

    def _called_on_self(self, caller: FixedReceiver) -> list[tuple[cst.FunctionDef, ClassInfo]]:
        """Methods the traced `caller` calls on its own `self` (`self.helper(x)`), in its body or in a
        function nested in it: they read the same fixed object."""
        traced = self.traced
        receiver = positional_params(caller.method)[0]
        found = []
        for function in traced.functions:
            cls = traced.method_class.get(id(function))
            if cls is None or type(function) is not cst.FunctionDef:
                continue
            for site in traced.call_sites.get(id(function), ()):
                func = site.call.func
                if not site.callee.receiver or type(func) is not cst.Attribute or type(func.value) is not cst.Name \
                        or func.value.value != receiver:
                    continue
                scope = traced.call_scopes.get(id(site.call))
                bound = scope.lookup(receiver) if scope is not None else None
                if bound is not None and bound[0].node is caller.method:
                    found.append((function, cls))
                    break
        return found

    def _plain_object(self, cls: ClassInfo) -> bool:
        """An object whose fields JAX never sees as leaves: no class of its chain in the module has a
        decorator (a dataclass pytree, a frozen dataclass) or a framework's module or pytree base, nor
        is given to a registration. How it hashes does not matter: JAX's cache of a static `self`
        keeps the object it first saw, and an object changed in place still finds that entry, even
        when its hash follows the attribute."""
        traced = self.traced
        if traced._library_bases(cls) & _FRAMEWORK_BASES:
            return False
        for current in traced._bases(cls, stop_outside=False):
            if current is None:
                continue
            if current.node.decorators:
                return False
            if traced._given_to_a_registration(current.node.name.value):
                return False
        return True

    def _replaced_while_running(self, cls: ClassInfo) -> dict[str, cst.FunctionDef]:
        """Attributes of the class that a method running the class's jitted methods replaces: the
        method that calls a jitted method (or reads the wrapper kept on `self`), or a method such a
        method calls on `self`."""
        key = id(cls.node)
        known = self._replaced.get(key)
        if known is not None:
            return known
        runners = self._runners(cls)
        rejitting = self._rejitting(cls)
        known = self._replaced[key] = {}
        for attribute, methods in sorted(cls.replaced_by.items()):
            for method in methods:
                if method.name.value not in CONSTRUCTION and id(method) in runners and id(method) not in rejitting:
                    known[attribute] = method
                    break
        return known

    def _rejitting(self, cls: ClassInfo) -> set[int]:
        """Methods of the class that jit one of its methods again (`self.f = jax.jit(self._f)` after
        replacing what `_f` reads): the new wrapper traces with the values current then."""
        traced = self.traced
        found: set[int] = set()
        for receiver in self.receivers().values():
            if receiver.cls is not cls or receiver.method is not receiver.root:
                continue
            for use in traced.applications.get(id(receiver.root), ()):
                if self._fixing(receiver.root, use) is None:
                    continue  # not a kept jit wrapper (`jax.value_and_grad(self.loss)`, `jax.jit(self.f)(x)`)
                applied_by = traced.applied_by.get(id(use))
                scope = traced.call_scopes.get(id(applied_by)) if type(applied_by) is cst.Call else None
                while scope is not None:
                    if scope.kind == "function" and traced.method_class.get(id(scope.node)) is cls:
                        found.add(id(scope.node))
                        break
                    scope = scope.parent
        return found

    def _runners(self, cls: ClassInfo) -> set[int]:
        """Methods of the class that run one of its jitted methods, and the methods they call on
        `self` (those run between two of its calls)."""
        traced = self.traced
        roots = {r.root for r in self.receivers().values() if r.cls is cls}
        names = {root.name.value for root in roots}
        applied = {id(traced.applied_by.get(id(use))) for root in roots for use in traced.applications.get(id(root), ())}
        names |= {attribute for attribute, values in cls.instance_values.items()
                  if any(value is not None and id(value) in applied for value in values)}
        methods = [f for f in traced.functions if type(f) is cst.FunctionDef and traced.method_class.get(id(f)) is cls]
        uses = SemanticModel.of(self.ctx).attribute_uses
        running: set[int] = set()
        for method in methods:
            receiver = positional_params(method)[:1]
            if receiver and any((receiver[0], name) in uses.get(id(method), ()) for name in names):
                running.add(id(method))
        pending = [m for m in methods if id(m) in running]
        while pending:
            caller = pending.pop()
            for helper, _ in self._called_on_self(FixedReceiver(caller, cls, "", caller)):
                if id(helper) not in running:
                    running.add(id(helper))
                    pending.append(helper)
        return running

