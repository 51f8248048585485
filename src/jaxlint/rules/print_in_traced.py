"""JAX301: `print()` in a function whose body runs once per trace."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.static_display import is_literal
from ..jaxmodel.values import MUST
from ..rulebase.node_fix import NodeFix, Replace
from ..rulebase.rule import Rule
from ..syntax.format_strings import FormatField, format_escaped, format_pieces


class PrintInTraced(Rule):
    code = "JAX301"
    explains_trace = True
    fixable = True

    def visit_Call(self, node: cst.Call) -> None:
        if self.walk.qualified_name(node.func) != "builtins.print":
            return
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.runs_once:
            return
        if node.args and all(self.analysis.shows_static(arg.value, at=self.walk) for arg in node.args) \
                and not all(is_literal(arg.value) for arg in node.args):
            # shapes, dtypes, static arguments: the values every call would show, printed once per
            # compilation, which is how one watches shapes and recompiles: nothing to tell its author
            return
        if not any(self._shows_traced(arg.value) for arg in node.args):
            self.report(node, (
                f"`print` inside a function traced by `{info.label}` runs only while JAX traces it (once per "
                f"compilation), not on every call; use `jax.debug.print(...)` to print on every call, or add "
                f"`# noqa: JAX301` if logging compilations is the point"))
            return
        self.report(node, (
            f"`print` inside a function traced by `{info.label}` runs once, while JAX traces it, and shows "
            f"tracers instead of values; use `jax.debug.print(\"{{}}\", x)`, which prints the values on every call"),
            self._fix(node))

    def _shows_traced(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.FormattedString):
            return any(isinstance(p, cst.FormattedStringExpression) and self._shows_traced(p.expression)
                       for p in value.parts)
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
            return False
        found = self.analysis.value(value, at=self.walk)
        # what the message and the fix assume: tracers are shown unless the value is known to be
        # something else (a concrete array, a constant)
        return found.holds is MUST or found.array is not MUST and not _is_constant(value)

    def _fix(self, node: cst.Call) -> NodeFix | None:
        if self.analysis.names.name("jax", self.walk.scope) != "jax":
            return None
        template, values = [], []
        for arg in node.args:
            if arg.keyword is not None or arg.star:
                return None  # sep=, end=, file=, *args: no exact jax.debug.print equivalent
            piece = self._piece(arg.value, values)
            if piece is None:
                return None
            template.append(piece)
        args = "".join(f", {self._argument(v)}" for v in values)
        return NodeFix("Use jax.debug.print", [Replace(node, f"jax.debug.print({' '.join(template)!r}{args})")])

    def _argument(self, value: cst.BaseExpression) -> str:
        text = self.analysis.module.code_for_node(value)
        # `print(v for v in xs)`: the call's parentheses are the generator's; after the template
        # string it needs its own
        return f"({text})" if isinstance(value, cst.GeneratorExp) and not value.lpar else text

    def _piece(self, value: cst.BaseExpression, values: list) -> str | None:
        if isinstance(value, cst.SimpleString):
            text = value.evaluated_value
            return format_escaped(text) if isinstance(text, str) else None
        if isinstance(value, cst.FormattedString):
            pieces = format_pieces(value)
            if pieces is None:
                return None
            parts = []
            for piece in pieces:
                if isinstance(piece, FormatField):
                    values.append(piece.expression)
                    piece = "{" + piece.spec + "}"
                parts.append(piece)
            return "".join(parts)
        values.append(value)
        return "{}"


def _is_constant(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float, cst.Name)) and not (
        isinstance(value, cst.Name) and value.value not in ("None", "True", "False"))
