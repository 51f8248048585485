"""Whether an expression shown as text under a trace (printed, interpolated into a string) shows only
static values: literals, shapes and dtypes, static arguments, and text, arithmetic and containers made
of them. Such text is the same on every call, so showing it while JAX traces shows the right thing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .values import STATIC_ATTRIBUTES

if TYPE_CHECKING:
    from ..semantic.names import NameResolver
    from ..semantic.scopes import Scope
    from .traced import TraceInfo

#: Calls whose result is a static description of their arguments (a length, a shape, an abstract
#: type), never the values of a tracer.
DESCRIBING_CALLS = frozenset({
    "builtins.len", "builtins.type", "builtins.isinstance", "builtins.callable", "builtins.hasattr",
    "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "numpy.shape", "numpy.ndim", "numpy.size",
    "jax.typeof", "jax.core.get_aval", "jax.eval_shape", "jax.tree.structure", "jax.tree_util.tree_structure",
    "jax.device_count", "jax.local_device_count", "jax.process_count", "jax.process_index",
    "jax.devices", "jax.local_devices", "jax.default_backend", "jax.sharding.get_abstract_mesh",
})
#: Calls that turn what they are given into text or a container: static when what they are given is.
FORMATTING_CALLS = frozenset({
    "builtins.str", "builtins.repr", "builtins.tuple", "builtins.list", "builtins.dict", "builtins.format",
    "builtins.int", "builtins.float", "builtins.bool", "builtins.sum", "builtins.max", "builtins.min",
})
#: Tree maps whose function, given a static description of each leaf, returns a static tree.
TREE_MAPS = frozenset({"jax.tree.map", "jax.tree_util.tree_map", "jax.tree_map"})
#: How many local names deep a static value is followed (`n = x.shape[0]`, `shape = (n, 2)`).
MAX_NAME_DEPTH = 3


def is_literal(value: cst.BaseExpression) -> bool:
    """A string, a number, None, True or False written in place."""
    return isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)) or (
        isinstance(value, cst.Name) and value.value in ("None", "True", "False"))


class StaticDisplay:
    """Whether expressions of one traced function show only static values (see the module docstring);
    asked per expression, from the names' bindings in `scope` and how the function is traced."""

    def __init__(self, names: "NameResolver", scope: "Scope", info: "TraceInfo") -> None:
        self.names = names
        self.scope = scope
        self.info = info

    def static(self, value: cst.BaseExpression, depth: int = MAX_NAME_DEPTH) -> bool:
        """Whether `value` is known to hold a static value under the trace: a literal, a shape or
        dtype (`x.shape`, `len(x)`, `jax.typeof(x)`), a static argument of the traced function, a
        local name bound only to such values, or text, arithmetic and containers made of them."""
        if is_literal(value):
            return True
        if isinstance(value, cst.FormattedString):
            return all(self.static(p.expression, depth) for p in value.parts
                       if isinstance(p, cst.FormattedStringExpression))
        if isinstance(value, cst.Attribute):
            return value.attr.value in STATIC_ATTRIBUTES
        if isinstance(value, cst.Subscript):
            return self.static(value.value, depth)
        if isinstance(value, cst.BinaryOperation):
            return self.static(value.left, depth) and self.static(value.right, depth)
        if isinstance(value, cst.UnaryOperation):
            return self.static(value.expression, depth)
        if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.static(value.elt, depth)  # `[x[a].shape[-1] for a in agents]`
        if isinstance(value, cst.Comparison):
            # `m.left is m.right`: identity is a Python bool, whatever the operands hold
            return all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in value.comparisons)
        if isinstance(value, (cst.Tuple, cst.List)):
            return all(not e.star if isinstance(e, cst.StarredElement) else self.static(e.value, depth)
                       for e in value.elements)
        if isinstance(value, cst.Call):
            return self._static_call(value, depth)
        if isinstance(value, cst.Name):
            return self._static_name(value, depth)
        return False

    def _static_call(self, call: cst.Call, depth: int) -> bool:
        callee = self.names.qualified_name(call.func, self.scope)
        if callee in DESCRIBING_CALLS:
            return True
        if callee in FORMATTING_CALLS or (isinstance(call.func, cst.Attribute) and call.func.attr.value == "format"
                                          and isinstance(call.func.value, cst.SimpleString)):
            return all(not arg.star and self.static(arg.value, depth) for arg in call.args)
        if callee in TREE_MAPS and call.args and isinstance(call.args[0].value, cst.Lambda):
            # `jax.tree.map(lambda a: a.shape, params)`: a tree of shapes
            return self.static(call.args[0].value.body, depth)
        return False

    def _static_name(self, name: cst.Name, depth: int) -> bool:
        """A parameter of the traced function that no transform traces (`static_argnums`), or a local
        name every binding of which assigns a static value."""
        info = self.info
        found = self.scope.lookup(name.value)
        if found is None or found[0].node is not info.node:
            return False
        binding = found[1]
        if not binding.nodes:
            return False
        for node, statement in zip(binding.nodes, binding.statements):
            if isinstance(statement, cst.ExceptHandler):
                continue  # `except TracerBoolConversionError as e`: an exception, not a tracer
            if isinstance(statement, cst.Param):
                # no traced parameter at all: the static ones are not known (`static_argnums=NAMES`)
                if statement.name.value in info.param_kinds or not info.param_kinds or statement.star \
                        or info.depth > 0:
                    return False
                continue
            if depth <= 0 or not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
                                  and statement.targets[0].target is node):
                return False
            if not self.static(statement.value, depth - 1):
                return False
        return True
