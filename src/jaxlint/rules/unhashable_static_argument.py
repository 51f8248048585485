"""JAX505: a list, dict, set or array passed at a static position of a jitted function."""
from __future__ import annotations

import libcst as cst

from ..rulebase.node_fix import NodeFix, Replace
from ..rulebase.rule import Rule

_INSTEAD = {
    "a list": "a tuple",
    "a set": "a `frozenset`",
    "a dict": "a tuple of its items (`tuple(sorted(d.items()))`) or a hashable mapping",
    "a NumPy array": "a tuple of Python numbers (`tuple(a.tolist())`), or a traced argument",
    "a JAX array": "a tuple of Python numbers, or a traced argument (leave it out of the static ones)",
}


class UnhashableStaticArgument(Rule):
    code = "JAX505"
    fixable = True

    def visit_Call(self, node: cst.Call) -> None:
        signatures = self.analysis.jit_signatures
        for argument in signatures.static_arguments(node):
            what = signatures.unhashable(argument.value, self.walk.scope)
            if what is None:
                continue
            name = f"the jitted `{argument.function.name.value}`" if type(argument.function) is cst.FunctionDef \
                else "a jitted lambda"
            shown = self.analysis.module.code_for_node(argument.value)
            shown = shown if len(shown) <= 40 and "\n" not in shown else what.split(" ", 1)[1]
            self.report(argument.value, (
                f"`{shown}` is {what}, passed as `{argument.param}`, a static argument of {name}: "
                f"JAX hashes static arguments to find the compiled code, and {what} has no hash "
                f"(`ValueError: Non-hashable static arguments are not supported` at this call); pass "
                f"{_INSTEAD.get(what, 'a tuple, a frozenset or another hashable value')}"), _fix(argument.value))


def _fix(value: cst.BaseExpression) -> NodeFix | None:
    """A list display becomes a tuple display, a list comprehension `tuple(...)` of the same
    generator, a set display `frozenset({...})`: the call raised before the function ran, so no
    working code changes."""
    if getattr(value, "lpar", None):
        return None
    if type(value) is cst.List:
        elements = list(value.elements)
        if len(elements) == 1 and elements[0].comma is cst.MaybeSentinel.DEFAULT:
            elements[0] = elements[0].with_changes(comma=cst.Comma())
        replacement = cst.Tuple(elements, lpar=[cst.LeftParen(whitespace_after=value.lbracket.whitespace_after)],
                                rpar=[cst.RightParen(whitespace_before=value.rbracket.whitespace_before)])
        return NodeFix("Pass a tuple", [Replace(value, _code(replacement))])
    if type(value) is cst.ListComp:
        generator = cst.GeneratorExp(value.elt, value.for_in, lpar=[], rpar=[])
        return NodeFix("Pass a tuple", [Replace(value, _code(cst.Call(cst.Name("tuple"), [cst.Arg(generator)])))])
    if type(value) is cst.Set:
        return NodeFix("Pass a frozenset", [Replace(value, _code(cst.Call(cst.Name("frozenset"), [cst.Arg(value)])))])
    return None


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
