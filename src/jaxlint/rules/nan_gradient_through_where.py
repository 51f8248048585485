"""JAX405: `jnp.where(x > 0, jnp.sqrt(x), 0.0)` in a differentiated function: the gradient is NaN
where the condition masks `x`."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.gradients import SELECTIONS
from ..rulebase.rule import Rule


class NanGradientThroughWhere(Rule):
    code = "JAX405"

    def visit_Call(self, node: cst.Call) -> None:
        if self.walk.qualified_name(node.func) not in SELECTIONS:
            return
        function = self.walk.function()
        gradients = self.analysis.gradients
        if not gradients.differentiated(function) or not gradients.counts(node, function):
            return
        for site in gradients.masked_singularities(node, self.walk.scope):
            if not gradients.reaches(site.argument, function):
                continue
            code = self.analysis.module.code_for_node
            condition, argument = code(site.condition), code(site.argument)
            where = code(node.func) if self.walk.qualified_name(node.func) == "jax.numpy.where" else "jnp.where"
            safe = (f"{where}({condition}, {site.safe}, {argument})" if site.taken_when_false
                    else f"{where}({condition}, {argument}, {site.safe})")
            fixed = code(site.node.deep_replace(site.argument, cst.parse_expression(safe)))
            masked = "true" if site.taken_when_false else "false"
            self.report(site.node, (
                f"NaN gradient: `{code(node.func)}` hides the value of {site.shown} where `{condition}` is "
                f"{masked}, not its derivative, and {site.shown} {site.singular}: the reverse pass "
                f"multiplies the masked branch's zero cotangent by that derivative, and 0 * inf is NaN. "
                f"{_name(function)} is differentiated (by {gradients.origin[id(function)]}) with respect to "
                f"{_respect(function, argument)}, so its gradient is NaN wherever `{argument}` is masked "
                f"there. Make the input safe too (the double `where`): `{fixed}`"))
            return


def _respect(function: cst.FunctionDef | cst.Lambda, argument: str) -> str:
    """`x` when the masked value is a parameter itself, else what it is computed from."""
    params = function.params
    if argument in {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}:
        return f"`{argument}`"
    return f"a value `{argument}` is computed from"


def _name(function: cst.FunctionDef | cst.Lambda) -> str:
    return f"`{function.name.value}`" if type(function) is cst.FunctionDef else "The lambda"
