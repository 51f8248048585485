"""JAX305: `jax.debug.print` given text that Python already formatted (an f-string, `str.format`, `%`)
with a traced value in it."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.values import MUST
from ..rulebase.node_fix import NodeFix, Replace
from ..rulebase.rule import Rule
from ..syntax.format_strings import FormatField, format_pieces

#: `jax.debug.print`'s own keywords: a field named like one cannot be passed by that name, and these
#: are kept as they are by the fix.
OWN_KEYWORDS = frozenset({"fmt", "ordered", "partitioned", "skip_format_check", "_use_logging"})


class DebugPrintPreformatted(Rule):
    code = "JAX305"
    explains_trace = True
    fixable = True

    def visit_Call(self, node: cst.Call) -> None:
        if self.walk.qualified_name(node.func) != "jax.debug.print" or not node.args:
            return
        first = node.args[0]
        if first.star or first.keyword is not None and first.keyword.value != "fmt":
            return
        text = first.value
        shown, how = self._interpolated(text)
        traced = [value for value in shown if self._traced(value)]
        if not traced:
            return
        info = self.analysis.trace_info(at=self.walk)
        tracer = f"`{info.label}`" if info is not None else "JAX"
        named = self.analysis.module.code_for_node(traced[0])
        spec_error = ""
        if isinstance(text, cst.FormattedString) and any(
                isinstance(p, cst.FormattedStringExpression) and p.format_spec and p.expression in traced
                for p in text.parts):
            spec_error = "; a format spec on a tracer (`:.3f`) even raises TypeError while tracing"
        self.report(node, (
            f"`jax.debug.print` is given text that {how} formats while {tracer} traces the function: `{named}` "
            f"is a tracer there, so the text shows a description of the tracer (`JitTracer(float32[3])`) on "
            f"every call, not its value{spec_error}; pass the format string and the values, which "
            f"`jax.debug.print` formats when the compiled code runs: `jax.debug.print(\"... {{}}\", {named})`"),
            self._fix(node, text, shown))

    def _interpolated(self, text: cst.BaseExpression) -> tuple[list[cst.BaseExpression], str]:
        """The expressions Python formats into the text, and how it does."""
        if isinstance(text, cst.FormattedString):
            return [p.expression for p in text.parts if isinstance(p, cst.FormattedStringExpression)], "an f-string"
        if isinstance(text, cst.Call) and isinstance(text.func, cst.Attribute) and text.func.attr.value == "format" \
                and isinstance(text.func.value, (cst.SimpleString, cst.ConcatenatedString)):
            return [a.value for a in text.args if not a.star], "`str.format`"
        if isinstance(text, cst.BinaryOperation) and isinstance(text.operator, cst.Modulo) \
                and isinstance(text.left, (cst.SimpleString, cst.ConcatenatedString)):
            right = text.right
            if isinstance(right, cst.Tuple):
                return [e.value for e in right.elements if not isinstance(e, cst.StarredElement)], "`%`"
            return [right], "`%`"
        return [], ""

    def _traced(self, value: cst.BaseExpression) -> bool:
        """A tracer on every path (not a pytree of unknown structure, which may be static data), and
        not text of a static description (`x.shape`, `len(x)`)."""
        found = self.analysis.value(value, at=self.walk)
        return found.tracer \
            and not self.analysis.shows_static(value, at=self.walk)

    def _fix(self, node: cst.Call, text: cst.BaseExpression, shown: list[cst.BaseExpression]) -> NodeFix | None:
        """The format string and the values, where the output is the same text: every value formatted is
        a traced array (whose value `jax.debug.print` formats as Python would have formatted the
        array outside a trace), and the call passes nothing but the text and its own keywords."""
        if node.args[0].keyword is not None or any(
                a.keyword is None or a.star or a.keyword.value not in OWN_KEYWORDS for a in node.args[1:]):
            return None
        if not all(self._traced_array(value) for value in shown):
            return None
        code = self.analysis.module.code_for_node
        if isinstance(text, cst.FormattedString):
            built = self._from_fstring(text)
            if built is None:
                return None
            template, arguments = built
        elif isinstance(text, cst.Call) and isinstance(text.func.value, cst.SimpleString) \
                and isinstance(text.func.value.evaluated_value, str):
            if any(a.star or a.keyword is not None and a.keyword.value in OWN_KEYWORDS for a in text.args):
                return None
            template, arguments = code(text.func.value), [_argument(a, code) for a in text.args]
        else:
            return None
        own = [_argument(a, code) for a in node.args[1:]]
        rewritten = ", ".join([template, *arguments, *own])
        return NodeFix("Pass the values to jax.debug.print", [Replace(node, f"{code(node.func)}({rewritten})")])

    def _traced_array(self, value: cst.BaseExpression) -> bool:
        found = self.analysis.value(value, at=self.walk)
        return found.traced is MUST and found.array is MUST and not self.analysis.shows_static(value, at=self.walk)

    def _from_fstring(self, text: cst.FormattedString) -> tuple[str, list[str]] | None:
        """`f"loss {loss:.3f} at {state.step}"` as the literal `"loss {loss:.3f} at {step}"` and `loss=loss,
        step=state.step`: each field a name or an attribute, named by its last name; None where two
        different fields would get the same name, or one a name of `jax.debug.print`'s own."""
        pieces = format_pieces(text)
        if pieces is None:
            return None
        code = self.analysis.module.code_for_node
        keywords: dict[str, str] = {}
        template = []
        for piece in pieces:
            if not isinstance(piece, FormatField):
                template.append(piece)
                continue
            keyword = _keyword(piece.expression)
            written = code(piece.expression)
            if keyword is None or keyword in OWN_KEYWORDS or keywords.setdefault(keyword, written) != written:
                return None
            template.append("{" + keyword + piece.spec + "}")
        # the same quotes and prefix, less the `f`: the text between them is the f-string's own
        literal = text.start.replace("f", "").replace("F", "") + "".join(template) + text.end
        return literal, [f"{keyword}={written}" for keyword, written in keywords.items()]


def _keyword(expression: cst.BaseExpression) -> str | None:
    """`loss` for `loss`, `step` for `state.step`; None for any other expression."""
    if type(expression) is cst.Name:
        return expression.value
    if type(expression) is cst.Attribute and type(expression.value) in (cst.Name, cst.Attribute):
        return _keyword(expression.value) and expression.attr.value
    return None


def _argument(arg: cst.Arg, code) -> str:
    value = code(arg.value)
    return f"{arg.keyword.value}={value}" if arg.keyword is not None else value
