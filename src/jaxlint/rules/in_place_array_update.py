"""JAX401: item assignment, augmented item assignment or `del` on a JAX array."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.values import MUST
from ..model.finding import Applicability
from ..rulebase.node_fix import NodeFix, Replace
from ..rulebase.rule import Rule
from ..syntax.walk import target_parts

#: Augmented operators with an `.at[...]` method of the same meaning.
AT_METHOD_FOR = {
    cst.AddAssign: "add",
    cst.MultiplyAssign: "multiply",
    cst.DivideAssign: "divide",
    cst.PowerAssign: "power",
}
#: Augmented operators rewritten as `.at[i].set(x[i] <op> v)`, which is what NumPy computes.
BINARY_FOR = {
    cst.FloorDivideAssign: "//",
    cst.ModuloAssign: "%",
    cst.BitAndAssign: "&",
    cst.BitOrAssign: "|",
    cst.BitXorAssign: "^",
    cst.LeftShiftAssign: "<<",
    cst.RightShiftAssign: ">>",
}
#: Expressions that can be written twice (index of `x.at[i].set(x[i] // v)`) without changing meaning.
_PURE = (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.Ellipsis)


class InPlaceArrayUpdate(Rule):
    code = "JAX401"
    explains_trace = True
    fixable = True

    # -- statements -----------------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        single = len(node.targets) == 1
        for assign_target in node.targets:
            for subscript in _subscripts_in(assign_target.target):
                if not self._is_jax_array(subscript):
                    continue
                fix = None
                if single and assign_target.target is subscript:
                    fix = self._fix(node, subscript, f"set({self._argument(node.value)})")
                self.report(subscript, self._message(subscript, "item assignment", "set(v)"), fix)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        subscript = node.target
        if not isinstance(subscript, cst.Subscript) or not self._is_jax_array(subscript):
            return
        operator = type(node.operator)
        fix = None
        if operator in AT_METHOD_FOR:
            method = AT_METHOD_FOR[operator]
            fix = self._fix(node, subscript, f"{method}({self._argument(node.value)})")
            hint = f"{method}(v)"
        elif operator is cst.SubtractAssign:
            if not isinstance(node.value, (cst.List, cst.Tuple, cst.ListComp)):
                fix = self._fix(node, subscript, f"add({_negated(node.value, self._code(node.value))})")
            hint = "add(-v)"
        elif operator in BINARY_FOR and _pure_index(subscript):
            symbol = BINARY_FOR[operator]
            current = self._code(subscript)
            fix = self._fix(node, subscript, f"set({current} {symbol} {_grouped(node.value, self._code(node.value))})")
            hint = f"set(x[i] {symbol} v)"
        else:
            hint = "set(...)"
        self.report(subscript, self._message(subscript, "augmented item assignment", hint), fix)

    def visit_Del(self, node: cst.Del) -> None:
        for subscript in _subscripts_in(node.target):
            if self._is_jax_array(subscript):
                name = self._code(subscript.value)
                self.report(subscript, (
                    f"`del {self._code(subscript)}` on a JAX array: JAX arrays are immutable and have no "
                    f"`__delitem__` (AttributeError); build a new array without the element, e.g. "
                    f"`{name} = jnp.delete({name}, i)`"))

    # -- facts ----------------------------------------------------------------------------------
    def _is_jax_array(self, subscript: cst.Subscript) -> bool:
        """Whether the subscripted value is a JAX array where the statement runs, whatever path led there."""
        walk, analysis = self.walk, self.analysis
        subject = subscript.value
        if type(subject) is cst.Attribute and subject.attr.value == "at":
            return False  # `x.at[i] = v`: a different mistake
        origins = self.analysis.name_origins
        if origins.certain_array(subject, walk.scope):
            return True
        # A traced parameter indexed the way only arrays are (`x[..., 0]`, `x[:, 1]`); a `jax.Ref`
        # is indexed that way too (`r[...] = v`), so not in files that use references.
        if not isinstance(subject, cst.Name) or origins.references_in_file or not _array_only_index(subscript):
            return False
        found = origins.reaching(subject, walk.scope)
        return (found is not None and analysis.value(subject, at=walk).traced is MUST
                and all(o.kind in ("param", "augmented", "annotation") for o in found[1]))

    # -- fixes ----------------------------------------------------------------------------------
    def _fix(self, statement: cst.CSTNode, subscript: cst.Subscript, call: str) -> NodeFix | None:
        """`x = x.at[i].<call>`, when `x` is a plain local name and rebinding it keeps the meaning."""
        subject = subscript.value
        if not isinstance(subject, cst.Name):
            return None  # `self.x[i] = v`, `a[0][1] = v`: rebinding would not update the owner
        walk = self.walk
        found = walk.scope.lookup(subject.value)
        if found is None or found[0] is not walk.scope and walk.scope.kind != "module":
            return None  # a closed-over or global name: assigning it would make it local
        name = subject.value
        index = "".join(self._code(element) for element in subscript.slice).rstrip()
        text = f"{name} = {name}.at[{index}].{call}"
        applicability = Applicability.SAFE
        origins = self.analysis.name_origins.origins(name, walk.scope)
        if origins is None or not self._fresh(origins[1]) or not self._scalar_index(subscript, call):
            applicability = Applicability.UNSAFE
        return NodeFix(f"Use `{name}.at[...]`", [Replace(statement, text)], applicability)

    def _fresh(self, origins) -> bool:
        """Every binding makes a new array (not a view or alias of another one, which NumPy would update too)."""
        for origin in origins:
            if origin.kind in ("param", "augmented", "annotation"):
                continue
            if origin.kind != "value" or not isinstance(origin.value, (cst.Call, cst.BinaryOperation, cst.UnaryOperation)):
                return False
        return True

    def _scalar_index(self, subscript: cst.Subscript, call: str) -> bool:
        """For `add`/`multiply`/…: NumPy applies a repeated index once, `.at[]` once per occurrence.

        Exact when no index can be an integer array: slices, integer literals, and names that are
        not arrays (a loop counter, a Python int).
        """
        if call.startswith("set("):
            return True
        for element in subscript.slice:
            if isinstance(element.slice, cst.Index) and not self._scalar(element.slice.value):
                return False
        return True

    def _scalar(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.Integer, cst.Ellipsis)):
            return True
        if isinstance(expr, cst.Name):
            value = self.analysis.value(expr, at=self.walk)
            return value.traced is not MUST and value.array is not MUST and not self.analysis.name_origins.python_sequence(expr, self.walk.scope)
        if isinstance(expr, cst.UnaryOperation):
            return self._scalar(expr.expression)
        if isinstance(expr, cst.BinaryOperation):
            return self._scalar(expr.left) and self._scalar(expr.right)
        return False

    def _message(self, subscript: cst.Subscript, what: str, method: str) -> str:
        name = self._code(subscript.value)
        return (f"{what} `{self._code(subscript)}` on a JAX array: JAX arrays are immutable (TypeError, also "
                f"under `jax.jit`); write `{name} = {name}.at[i].{method}` for a new array with the update")

    def _code(self, node: cst.CSTNode) -> str:
        return self.analysis.module.code_for_node(node)

    def _argument(self, value: cst.BaseExpression) -> str:
        """The right-hand side as the one argument of `.set(...)`/`.add(...)`: a bare tuple
        (`x[i] += a, b`) or `yield` (`x[i] = yield`) is wrapped in parentheses of its own, which
        the statement did not need (without them the tuple would be several arguments, and a bare
        `yield` is no argument at all)."""
        text = self._code(value)
        return f"({text})" if isinstance(value, (cst.Tuple, cst.Yield)) and not value.lpar else text


def _array_only_index(subscript: cst.Subscript) -> bool:
    """`x[...]`, `x[:, 0]`, `x[None]`: indexing that lists, tuples and dicts reject."""
    elements = subscript.slice
    for element in elements:
        inner = element.slice
        if isinstance(inner, cst.Index) and isinstance(inner.value, cst.Ellipsis):
            return True
        if isinstance(inner, cst.Index) and isinstance(inner.value, cst.Name) and inner.value.value == "None":
            return True
        if len(elements) > 1 and isinstance(inner, cst.Slice):
            return True
    return False


def _pure_index(subscript: cst.Subscript) -> bool:
    for element in subscript.slice:
        inner = element.slice
        parts = [inner.value] if isinstance(inner, cst.Index) else [
            p for p in (inner.lower, inner.upper, inner.step) if p is not None]
        if not all(_pure(p) for p in parts):
            return False
    return True


def _pure(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, _PURE):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _pure(expr.expression)
    if isinstance(expr, cst.BinaryOperation):
        return _pure(expr.left) and _pure(expr.right)
    if isinstance(expr, cst.Attribute):
        return _pure(expr.value)
    return False


def _atomic(expr: cst.BaseExpression) -> bool:
    return bool(getattr(expr, "lpar", None)) or isinstance(
        expr, (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Attribute, cst.Call,
               cst.Subscript, cst.List, cst.Tuple, cst.Dict, cst.Set)) and not (
        isinstance(expr, cst.Tuple) and not expr.lpar)


def _grouped(expr: cst.BaseExpression, text: str) -> str:
    return text if _atomic(expr) else f"({text})"


def _negated(expr: cst.BaseExpression, text: str) -> str:
    return f"-{text}" if _atomic(expr) else f"-({text})"


def _subscripts_in(target: cst.BaseExpression):
    return (part for part in target_parts(target) if type(part) is cst.Subscript)
