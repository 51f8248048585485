"""JAX206: a type check (`isinstance(x, np.ndarray)`, `type(x) is float`) on a value that is a tracer
on every run: decided once, while JAX traces, and always the same way."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.values import CONVERSIONS
from ..rulebase.rule import Rule

#: NumPy's classes: no tracer is an instance of one (`tests/test_type_check_jax.py` checks each
#: under jit, vmap and grad), though the same data outside a trace may be.
NUMPY_CLASSES = frozenset({
    "numpy.ndarray", "numpy.generic", "numpy.number", "numpy.floating", "numpy.integer", "numpy.inexact",
    "numpy.float16", "numpy.float32", "numpy.float64", "numpy.int8", "numpy.int16", "numpy.int32",
    "numpy.int64", "numpy.uint8", "numpy.uint32", "numpy.bool_", "numpy.complex64", "numpy.complex128",
})
#: Python's numbers: a Python scalar given to a transform is traced as an array, an instance of none.
PYTHON_NUMBERS = CONVERSIONS | {
    "numbers.Number", "numbers.Complex", "numbers.Real", "numbers.Rational", "numbers.Integral",
}
#: JAX's array classes: a tracer is an instance of them, but its type is the tracer's own class
#: (and a concrete array's is `ArrayImpl`), so `type(x) is jax.Array` is False for both.
ARRAY_CLASSES = frozenset({"jax.Array", "jax.numpy.ndarray"})
#: Comparisons of `type(x)` with a class: identity and equality, each way.
TYPE_COMPARISONS = (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)
ADVICE = ("a tracer is a `jax.Array` (`isinstance(x, jax.Array)` holds for tracers and concrete arrays alike); "
          "to tell values apart, check the dtype (`jnp.issubdtype(x.dtype, jnp.floating)`), or decide before "
          "the transform")


class TypeCheckOnTraced(Rule):
    code = "JAX206"
    explains_trace = True

    def visit_Call(self, node: cst.Call) -> None:
        if self.walk.qualified_name(node.func) != "builtins.isinstance" or len(node.args) != 2 \
                or any(a.keyword is not None or a.star for a in node.args):
            return
        classes = self._classes(node.args[1].value)
        if not classes or not all(c in NUMPY_CLASSES or c in PYTHON_NUMBERS for c in classes):
            return  # a class a tracer may be an instance of (`jax.Array`, a pytree's container) is in it
        subject = node.args[0].value
        label = self._traced_label(subject)
        if label is None:
            return
        code = self.analysis.module.code_for_node
        self.report(node, (
            f"`{code(node)}` on a traced value inside a function traced by `{label}`: `{code(subject)}` is a "
            f"tracer there, never {_described(classes)}, so the check is False on every call, decided once "
            f"while JAX traces; {ADVICE}"))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, TYPE_COMPARISONS):
            return
        right = node.comparisons[0].comparator
        for typed, other in ((node.left, right), (right, node.left)):
            subject = self._type_of(typed)
            if subject is None:
                continue
            classes = self._classes(other)
            if classes is None or len(classes) != 1 or not (
                    classes[0] in NUMPY_CLASSES or classes[0] in PYTHON_NUMBERS or classes[0] in ARRAY_CLASSES):
                return
            label = self._traced_label(subject)
            if label is None:
                return
            result = isinstance(node.comparisons[0].operator, (cst.IsNot, cst.NotEqual))
            code = self.analysis.module.code_for_node
            self.report(node, (
                f"`{code(node)}` on a traced value inside a function traced by `{label}`: the type of a tracer "
                f"is a tracer class (such as `DynamicJaxprTracer`), never `{code(other)}`, so the comparison is "
                f"{result} on every call, decided once while JAX traces; {ADVICE}"))
            return

    def _type_of(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        """`x` of `type(x)`."""
        if type(expr) is not cst.Call or len(expr.args) != 1 or expr.args[0].keyword is not None \
                or expr.args[0].star or self.walk.qualified_name(expr.func) != "builtins.type":
            return None
        return expr.args[0].value

    def _classes(self, expr: cst.BaseExpression) -> list[str] | None:
        """The qualified names of a class or a tuple of classes written in place; None if one is not known."""
        if type(expr) is cst.Tuple:
            found = []
            for element in expr.elements:
                if isinstance(element, cst.StarredElement):
                    return None
                name = self.walk.qualified_name(element.value)
                if name is None:
                    return None
                found.append(name)
            return found
        name = self.walk.qualified_name(expr) if type(expr) in (cst.Name, cst.Attribute) else None
        return [name] if name is not None else None

    def _traced_label(self, subject: cst.BaseExpression) -> str | None:
        """The transform's name when `subject` is a tracer on every run: traced on every path (not a
        pytree of unknown structure, whose fields may be static data), in a function every path
        traces with its traced parameters traced. A helper also called with NumPy data, whose check
        tells the two apart, is not such a function."""
        info = self.analysis.trace_info(at=self.walk)
        if info is None:
            return None
        value = self.analysis.value(subject, at=self.walk)
        if not value.tracer:
            return None
        if not self.analysis.parameters_traced_on_every_path(at=self.walk):
            return None
        return info.label


def _described(classes: list[str]) -> str:
    kinds = []
    if any(c in NUMPY_CLASSES for c in classes):
        kinds.append("a NumPy array or scalar")
    if any(c in PYTHON_NUMBERS for c in classes):
        kinds.append("a Python number")
    return " or ".join(kinds)
