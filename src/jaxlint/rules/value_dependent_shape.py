"""JAX204: an array whose shape would depend on traced values (boolean masks, `nonzero`, traced slices)."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.values import MUST
from ..rulebase.rule import Rule

#: jax.numpy functions whose output size depends on the values unless `size=` is given.
SIZED = frozenset({
    "jax.numpy.nonzero", "jax.numpy.argwhere", "jax.numpy.flatnonzero", "jax.numpy.unique",
    "jax.numpy.unique_values", "jax.numpy.unique_counts", "jax.numpy.unique_inverse", "jax.numpy.unique_all",
    "jax.numpy.setdiff1d", "jax.numpy.union1d", "jax.numpy.intersect1d",
})


class ValueDependentShape(Rule):
    code = "JAX204"
    explains_trace = True

    def visit_Subscript(self, node: cst.Subscript) -> None:
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.abstract:
            return
        if not self._indexable(node.value) or _is_store_target(node, self.walk.parent):
            return  # `x[mask] = v` fails as an in-place update first (JAX401)
        where = f"inside a function traced by `{info.label}`"
        for element in node.slice:
            part = element.slice
            if isinstance(part, cst.Index) and self._mask(part.value):
                self.report(node, (
                    f"boolean-mask indexing with a traced mask {where}: the result's length depends on how many "
                    f"entries are True, which is only known at run time (NonConcreteBooleanIndexError); keep "
                    f"the shape with `jnp.where(mask, x, 0)`, or select a fixed number with "
                    f"`jnp.nonzero(mask, size=k)`"))
                return
            if isinstance(part, cst.Slice) and any(
                    bound is not None and self.analysis.value(bound, at=self.walk).traced is MUST for bound in (part.lower, part.upper, part.step)):
                self.report(node, (
                    f"slice bounds taken from a traced value {where}: the slice's length must be known when JAX "
                    f"traces the function (IndexError: slice entries must be static); use "
                    f"`jax.lax.dynamic_slice_in_dim(x, start, size)` with a static size, or mask with `jnp.where`"))
                return

    def visit_Call(self, node: cst.Call) -> None:
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.abstract:
            return
        if any(a.keyword is not None and a.keyword.value == "size" for a in node.args):
            return
        if any(a.star for a in node.args):
            return
        func = node.func
        callee = self.walk.qualified_name(func)
        positional = [a.value for a in node.args if a.keyword is None]
        if callee in SIZED:
            shown = callee.replace("jax.numpy.", "jnp.")
            inputs = positional
        elif callee == "jax.numpy.where" and len(positional) == 1 and len(node.args) == 1:
            shown = "jnp.where(condition)"
            inputs = positional
        elif (type(func) is cst.Attribute and func.attr.value == "nonzero" and not node.args
              and self._traced_array(func.value)):
            shown = ".nonzero()"
            inputs = [func.value]
        else:
            return
        if not any(self.analysis.value(value, at=self.walk).traced is MUST for value in inputs):
            return
        self.report(node, (
            f"`{shown}` of a traced value without `size=` inside a function traced by `{info.label}`: the number "
            f"of results depends on the values, which are only known at run time (ConcretizationTypeError); "
            f"pass a static `size=` (and `fill_value=`), or keep the shape with `jnp.where(mask, x, 0)`"))

    def _indexable(self, expr: cst.BaseExpression) -> bool:
        """A JAX array (traced or not) or a traced pytree: indexed by JAX's rules. A JAX array the
        function closes over (a table made at the module's top level) is one too."""
        value = self.analysis.value(expr, at=self.walk)
        return (value.traced is MUST or value.array is MUST
                or self.analysis.name_origins.certain_array(expr, self.walk.scope))

    def _traced_array(self, expr: cst.BaseExpression) -> bool:
        value = self.analysis.value(expr, at=self.walk)
        return value.traced is MUST and value.array is MUST

    def _mask(self, index: cst.BaseExpression) -> bool:
        """A traced boolean array: a comparison, `jnp.isnan(x)`, `~mask`, `mask & other`."""
        value = self.analysis.value(index, at=self.walk)
        return value.mask is MUST and value.traced is MUST


def _is_store_target(node: cst.Subscript, parent: cst.CSTNode | None) -> bool:
    if isinstance(parent, (cst.AssignTarget, cst.Del)):
        return parent.target is node
    if isinstance(parent, (cst.AugAssign, cst.AnnAssign)):
        return parent.target is node
    return False
