"""The kinds of subscript index expressions (`x[mask]`, `LAYERS[i]`) in a traced function.

The shared value flow (`values.ValueFlow`) evaluates the parts of a slice (`x[a:b]`) but not a plain
index (`x[i]`): the expressions inside `cst.Index` get no kind. It also gives `~mask` and
`mask & other` the kind of an arithmetic result, not of a boolean mask; here they stay masks. Rules about masks and traced indices
ask here instead. When the shared flow has recorded the index's kind it is used as is; otherwise the
function is interpreted once more with index expressions evaluated too (same initial state as the
shared flow), and the result is kept for the file.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .traced import FunctionNode, _params
from .values import Kind, ValueFlow

if TYPE_CHECKING:
    from ..context import FileContext


class _IndexFlow(ValueFlow):
    """A value flow that also evaluates the expressions inside `x[...]` indices."""

    def _kind(self, node: cst.BaseExpression) -> Kind:
        # `~mask` and `mask & other` of traced booleans are traced booleans (masks) again.
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
            operand = self.kind(node.expression)
            return Kind.BOOL if operand == Kind.BOOL else super()._kind(node)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            left, right = self.kind(node.left), self.kind(node.right)
            if left == Kind.BOOL and right == Kind.BOOL:
                return Kind.BOOL
            return super()._kind(node)
        if not isinstance(node, cst.Subscript):
            return super()._kind(node)
        value = self.kind(node.value)
        index = Kind.NONE
        for element in node.slice:
            part = element.slice
            if isinstance(part, cst.Index):
                index = max(index, self.kind(part.value))
            elif isinstance(part, cst.Slice):
                for bound in (part.lower, part.upper, part.step):
                    if bound is not None:
                        index = max(index, self.kind(bound))
        if value == Kind.JAX_ARRAY:
            return Kind.ARRAY if index.traced else Kind.JAX_ARRAY
        if value.traced or value == Kind.CONTAINER:
            return Kind.ARRAY
        return Kind.NONE


class IndexKinds:
    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx
        self._flows: dict[int, _IndexFlow] = {}

    @classmethod
    def of(cls, ctx: "FileContext") -> "IndexKinds":
        found = getattr(ctx, "_jaxlint_index_kinds", None)
        if found is None:
            found = cls(ctx)
            ctx._jaxlint_index_kinds = found
        return found

    def kind(self, expr: cst.BaseExpression) -> Kind:
        """The kind of an expression inside an index of the current (traced) function."""
        function = self.ctx.function()
        traced = self.ctx.traced
        shared = traced.flow(function).kinds
        if id(expr) in shared:
            return shared[id(expr)]
        flow = self._flow(function)
        return flow.kinds.get(id(expr), Kind.NONE) if flow is not None else Kind.NONE

    def _flow(self, function: FunctionNode | None) -> _IndexFlow | None:
        traced = self.ctx.traced
        info = traced.info(function)
        if info is None or function is None:
            return None
        if id(function) not in self._flows:
            initial: dict[str, Kind] = {}
            for flow in list(traced.flows.values()):
                if id(function) in flow.closures:
                    initial.update(flow.closures[id(function)])
            for param in _params(function):
                initial[param] = Kind.PARAM if param in info.traced_params else Kind.NONE
            scope = traced.scopes.get(id(function), self.ctx.module_scope)
            names = self.ctx.names
            flow = _IndexFlow(traced, function, initial, info.abstract, lambda e: names.qualified_name(e, scope))
            flow.run(function.body)
            self._flows[id(function)] = flow
        return self._flows[id(function)]
