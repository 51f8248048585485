"""JAX507: a method jitted with `self` among its traced arguments, of a class that is not a pytree;
or with `self` static, of a class whose instances have no hash."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.transforms import short_name
from ..rulebase.rule import Rule


class JitMethodSelf(Rule):
    code = "JAX507"

    def visit_Decorator(self, node: cst.Decorator) -> None:
        self._check(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    def _check(self, node: cst.Decorator | cst.Call) -> None:
        method = self.analysis.jit_signatures.receivers().get(id(node))
        if method is None:
            return
        traced = self.analysis.traced
        cls = method.cls.node.name.value
        name = method.function.name.value
        receiver = method.function.params.params[0].name.value if method.function.params.params \
            else method.function.params.posonly_params[0].name.value
        jit = short_name(method.transform)
        applied = f"`@{jit}` on" if type(node) is cst.Decorator else f"`{jit}` applied to"
        if method.static_self:
            unhashable = traced.unhashable_class(method.cls)
            if unhashable is not None:
                self.report(node, (
                    f"{applied} `{cls}.{name}` makes `{receiver}` static, and JAX hashes static arguments "
                    f"to find the compiled code, but instances of `{cls}` have no hash ({unhashable}): "
                    f"`ValueError: Non-hashable static arguments are not supported` at the first call. Jit a "
                    f"function of the arrays it needs instead (`jax.jit(self.{name})` made once: the bound "
                    f"method closes over `{receiver}`), or give `{cls}` a `__hash__` (`@dataclass(frozen=True)`), "
                    f"and then never change what it hashes: the compiled code keeps the attributes it first saw"))
            return
        if not traced.plain_class(method.cls):
            return
        bound = (f"Jit the bound method once (`self._{name} = jax.jit(self.{name})` in `__init__`: it closes "
                 f"over `{receiver}`)") if type(node) is cst.Decorator else \
            f"Jit the bound method (`jax.jit(instance.{name})`: it closes over the instance)"
        # a method written without `self`: its first parameter receives the instance all the same
        unnamed = " (its first parameter, which receives the instance: the method has no `self`)" \
            if receiver not in ("self", "cls") else ""
        self.report(node, (
            f"{applied} `{cls}.{name}` traces `{receiver}`{unnamed} like any argument, and `{cls}` is not a pytree"
            f"{' (a flax.linen Module is a dataclass, not a pytree)' if traced.linen_module(method.cls) else ''}: JAX cannot make an abstract array of it (`TypeError: Error "
            f"interpreting argument ... as an abstract array` at the first call). {bound}, make `{cls}` a "
            f"pytree (`flax.struct.dataclass`, `equinox.Module`, `jax.tree_util.register_pytree_node_class`), "
            f"or make `{receiver}` static (`static_argnums=0`): then `{cls}` must be hashable and never "
            f"mutated, or the compiled function keeps the attributes it first saw"))
