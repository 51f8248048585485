"""Names bound only to literal values: integer constants and Python list/tuple displays.

A name counts only when every binding it has in the scope that owns it is `name = <literal>` (one
target, no unpacking). A parameter, a loop variable, an augmented assignment or any computed value
makes the name unknown, and rules then stay silent.

Used by rules that need to know that `SIZES[i]` indexes a Python list (not an array), or that
`range(NUM_STEPS)` has a constant trip count. Read from the bindings the semantic model's walk
records: no walk of its own.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .bindings import BindingKind
from .scopes import Scope

if TYPE_CHECKING:
    from .source_file import SourceFile

#: Displays that build a Python list or tuple.
SEQUENCE_DISPLAYS = (cst.List, cst.Tuple, cst.ListComp)


class Literals:
    """Per file: the values names are bound to by plain `name = value` assignments, as the scopes'
    recorded bindings have them."""

    @classmethod
    def of(cls, ctx: "SourceFile") -> "Literals":
        return ctx.fact(cls, cls)

    def values_of(self, name: str, scope: Scope) -> list[cst.BaseExpression] | None:
        """Every value the name is bound to in its owning scope, or None if some binding is not `name = value`."""
        found = scope.lookup(name)
        if found is None:
            return None
        values = []
        for binding in found[1].recorded:
            if binding.value is None:
                return None
            values.append(binding.value)
        return values or None

    def is_python_sequence(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """A list/tuple display, or a name bound only to list/tuple displays."""
        if isinstance(expr, SEQUENCE_DISPLAYS):
            return True
        if isinstance(expr, cst.Name):
            values = self.values_of(expr.value, scope)
            return values is not None and all(isinstance(v, SEQUENCE_DISPLAYS) for v in values)
        return False

    def loop_over_written_out(self, loop: cst.CSTNode, scope: Scope) -> bool:
        """A `for` loop or a comprehension over entries written out in the code (`written_out`)."""
        if type(loop) is cst.For:
            iterable = loop.iter
        elif isinstance(loop, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            iterable = loop.for_in.iter
        else:
            return False
        return self.written_out(iterable, scope)

    def written_out(self, iterable: cst.BaseExpression, scope: Scope, depth: int = 2) -> bool:
        """Whether a loop goes over entries written out in the code, each its own case (configurations
        to compare, inputs to evaluate): a list, tuple, set or dict display or a comprehension over one,
        a name bound only to those, their `.items()`/`.values()`/`.keys()`, and `zip`/`enumerate`/
        `itertools.product` of them. Never a `range` (steps, epochs) nor what a call returns (a data
        loader)."""
        if type(iterable) in (cst.List, cst.Tuple, cst.Set, cst.Dict):
            return True
        if type(iterable) in (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp):
            return depth > 0 and self.written_out(iterable.for_in.iter, scope, depth - 1)
        if type(iterable) is cst.Name:
            values = self.values_of(iterable.value, scope)
            return depth > 0 and values is not None and all(self.written_out(v, scope, depth - 1) for v in values)
        if isinstance(iterable, cst.Call) and not any(arg.star or arg.keyword for arg in iterable.args):
            func = iterable.func
            if type(func) is cst.Attribute and func.attr.value in ("items", "values", "keys") and not iterable.args:
                return self.written_out(func.value, scope, depth)
            name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
            if name in ("zip", "enumerate", "product", "reversed", "sorted") and iterable.args:
                return all(self.written_out(arg.value, scope, depth) for arg in iterable.args
                           if not (name == "enumerate" and arg is not iterable.args[0]))
        return False

    def integer(self, expr: cst.BaseExpression, scope: Scope) -> int | None:
        """The value of an integer constant expression: literals, `-n`, `+ - * //` of constants, and
        names bound exactly once, at module level, to such an expression."""
        if isinstance(expr, cst.Integer):
            return int(expr.evaluated_value)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
            inner = self.integer(expr.expression, scope)
            if inner is None:
                return None
            return -inner if isinstance(expr.operator, cst.Minus) else inner
        if isinstance(expr, cst.BinaryOperation):
            left, right = self.integer(expr.left, scope), self.integer(expr.right, scope)
            if left is None or right is None:
                return None
            op = expr.operator
            if isinstance(op, cst.Add):
                return left + right
            if isinstance(op, cst.Subtract):
                return left - right
            if isinstance(op, cst.Multiply):
                return left * right
            if isinstance(op, cst.FloorDivide) and right != 0:
                return left // right
            return None
        if isinstance(expr, cst.Name):
            found = scope.lookup(expr.value)
            if found is None or found[0].kind != "module":
                return None
            values = self.values_of(expr.value, scope)
            if values is None or len(values) != 1:
                return None
            return self.integer(values[0], found[0])
        return None

    def assignment_value(self, target: cst.CSTNode, scope: Scope) -> cst.BaseExpression | None:
        """The value of the `=` statement in the body of the function `scope` stands for (its own
        statements, not those of functions or classes nested in it) that has `target` among its
        targets (`a = b = value` too); None when none has, and always outside a `def`."""
        node = scope.node
        if type(node) is not cst.FunctionDef or type(target) is not cst.Name:
            return None
        binding = scope.bindings.get(target.value)
        for recorded in binding.recorded if binding is not None else ():
            if recorded.node is target:
                whole = recorded.kind is BindingKind.ASSIGNMENT and not recorded.unpack_path
                return recorded.statement.value if whole else None
        return None
