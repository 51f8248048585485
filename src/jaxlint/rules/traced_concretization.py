"""JAX203: a traced value converted to a concrete Python or NumPy value.

Every name in the tables below was checked against JAX (`tests/test_concretization_tables.py`
calls each one on a tracer): NumPy functions that convert their arguments with `numpy.asarray`
raise `TracerArrayConversionError`; those that dispatch to the array's own method (`np.sum`,
`np.mean`, `np.reshape` …) work on tracers and are deliberately absent.
"""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.values import MUST
from ..rulebase.rule import Rule

#: NumPy ufuncs (called as `numpy.<name>`) that convert a tracer argument.
NUMPY_UFUNCS = frozenset({
    "abs", "absolute", "fabs", "negative", "positive", "sign", "sqrt", "cbrt", "square", "reciprocal",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos",
    "arctan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "asinh",
    "acosh", "atanh", "deg2rad", "rad2deg", "degrees", "radians", "floor", "ceil", "trunc", "rint",
    "isnan", "isinf", "isfinite", "signbit", "logical_not", "invert", "bitwise_not", "conj", "conjugate",
    "modf", "frexp", "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "power",
    "pow", "float_power", "mod", "remainder", "fmod", "divmod", "maximum", "minimum", "fmax", "fmin",
    "arctan2", "atan2", "hypot", "logaddexp", "logaddexp2", "copysign", "nextafter", "ldexp", "heaviside",
    "greater", "greater_equal", "less", "less_equal", "equal", "not_equal", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd", "lcm",
    "matmul",
})
#: Other NumPy functions (`numpy.<name>`, `numpy.linalg.<name>`, `numpy.fft.<name>`) that convert a tracer.
NUMPY_CONVERTING = frozenset({
    "asarray", "array", "asanyarray", "ascontiguousarray", "copy", "where", "clip", "dot", "vdot", "inner",
    "outer", "einsum", "tensordot", "kron", "cross", "concatenate", "stack", "hstack", "vstack", "dstack",
    "column_stack", "append", "insert", "delete", "pad", "tile", "broadcast_to", "expand_dims",
    "atleast_1d", "atleast_2d", "atleast_3d", "ravel", "sort", "unique", "argwhere", "nonzero",
    "flatnonzero", "count_nonzero", "diff", "trace", "diag", "triu", "tril", "zeros_like", "ones_like",
    "full_like", "empty_like", "median", "percentile", "quantile", "average", "nanmean", "nansum", "nanmax",
    "nanmin", "nanstd", "nanvar", "allclose", "isclose", "histogram", "interp", "polyval", "nan_to_num",
    "cov", "corrcoef", "ptp", "convolve", "correlate", "roll", "isin", "digitize", "meshgrid",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32", "bool_",
    "complex64", "complex128",
    "linalg.norm", "linalg.inv", "linalg.det", "linalg.solve", "linalg.eig", "linalg.eigh", "linalg.eigvals",
    "linalg.eigvalsh", "linalg.svd", "linalg.qr", "linalg.cholesky", "linalg.pinv", "linalg.matrix_rank",
    "linalg.slogdet", "linalg.lstsq", "linalg.matrix_power", "linalg.cond",
    "fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.fft2", "fft.fftn",
})
#: NumPy functions that work on a tracer (they call its method) but convert a list or tuple of tracers.
NUMPY_DISPATCHING = frozenset({"sum", "mean", "max", "min", "prod", "std", "var", "any", "all", "amax", "amin"})
#: `math` functions that convert their arguments to Python floats.
MATH_FUNCTIONS = frozenset({
    "sqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan",
    "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil", "isnan", "isinf",
    "isfinite", "fabs", "pow", "isclose", "copysign", "fsum", "hypot", "erf", "erfc", "gamma", "lgamma",
    "degrees", "radians", "fmod", "modf", "frexp", "ldexp",
})
#: Functions with shape or size arguments: qualified name -> (positional indices, keyword names).
SHAPE_ARGUMENTS = {
    **{f"jax.numpy.{n}": ((0,), ("shape",)) for n in ("zeros", "ones", "empty", "full")},
    **{f"numpy.{n}": ((0,), ("shape",)) for n in ("zeros", "ones", "empty", "full")},
    "jax.numpy.eye": ((0, 1), ("N", "M")),
    "jax.numpy.identity": ((0,), ("n",)),
    "jax.numpy.tri": ((0, 1), ("N", "M")),
    "jax.numpy.arange": ((0, 1, 2), ("start", "stop", "step")),
    "jax.numpy.linspace": ((2,), ("num",)),
    "jax.numpy.logspace": ((2,), ("num",)),
    "jax.numpy.geomspace": ((2,), ("num",)),
    "jax.numpy.reshape": ((1,), ("shape", "newshape")),
    "jax.numpy.broadcast_to": ((1,), ("shape",)),
    "jax.numpy.tile": ((1,), ("reps",)),
    **{f"jax.numpy.{n}": ((), ("shape",)) for n in ("zeros_like", "ones_like", "empty_like", "full_like")},
    **{f"jax.random.{n}": ((1,), ("shape",)) for n in (
        "normal", "uniform", "randint", "gumbel", "exponential", "laplace", "cauchy", "logistic",
        "rademacher", "bits")},
    "jax.random.bernoulli": ((2,), ("shape",)),
    "jax.random.truncated_normal": ((3,), ("shape",)),
    "jax.random.categorical": ((3,), ("shape",)),
    "jax.random.split": ((1,), ("num",)),
    # lax's constructors and shape-changing operations take their sizes as Python ints
    "jax.lax.full": ((0,), ("shape",)),
    "jax.lax.full_like": ((3,), ("shape",)),
    "jax.lax.broadcast": ((1,), ("sizes",)),
    "jax.lax.broadcast_in_dim": ((1,), ("shape",)),
    "jax.lax.iota": ((1,), ("size",)),
    "jax.lax.broadcasted_iota": ((1,), ("shape",)),
    "jax.lax.reshape": ((1,), ("new_sizes",)),
    "jax.lax.dynamic_slice": ((2,), ("slice_sizes",)),
    "jax.lax.dynamic_slice_in_dim": ((2,), ("slice_size",)),
    "jax.lax.slice": ((1, 2, 3), ("start_indices", "limit_indices", "strides")),
    "jax.lax.slice_in_dim": ((1, 2, 3), ("start_index", "limit_index", "stride")),
    "jax.lax.pad": ((2,), ("padding_config",)),
    "jax.lax.top_k": ((1,), ("k",)),
}
#: What to do instead, where the general advice does not say it: a traced start needs a dynamic slice.
SHAPE_HINTS = {
    "jax.lax.slice": "for a traced start with a fixed size, use `lax.dynamic_slice`",
    "jax.lax.slice_in_dim": "for a traced start with a fixed size, use `lax.dynamic_slice_in_dim`",
    "jax.lax.dynamic_slice": "only the start indices may be traced",
    "jax.lax.dynamic_slice_in_dim": "only the start index may be traced",
}


class TracedConcretization(Rule):
    code = "JAX203"
    explains_trace = True

    def visit_Call(self, node: cst.Call) -> None:
        info = self.analysis.trace_info(at=self.walk)
        if info is None:
            return
        # Under `jax.grad` alone values are concrete JVP tracers: int()/bool()/.item(), `max`, list
        # indexing and shapes work there, while float(), NumPy and `math` conversions still fail.
        abstract = info.abstract
        func = node.func
        callee = self.walk.qualified_name(func)
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        values = [a.value for a in node.args if not a.star]
        where = f"inside a function traced by `{info.label}`"
        if callee in ("builtins.float", "builtins.complex", "builtins.int", "builtins.bool"):
            short = callee.split(".")[1]
            if len(positional) != 1 or not self._traced(positional[0]):
                return
            if short in ("int", "bool") and not abstract:
                return
            error = "TracerBoolConversionError" if short == "bool" else "ConcretizationTypeError"
            self.report(node, (
                f"`{short}()` of a traced value {where}: a tracer has no concrete value to convert "
                f"({error}); keep it an array (`x.astype(...)`, `jnp.where`), or convert outside the "
                f"transformed function, or print it with `jax.debug.print`"))
            return
        if callee in ("builtins.max", "builtins.min"):
            if abstract and self._python_compares(node, positional):
                short = callee.split(".")[1]
                self.report(node, (
                    f"builtin `{short}()` compares traced values {where}: Python needs a concrete bool for "
                    f"each comparison (TracerBoolConversionError); use `jnp.{short}imum(a, b)` for two "
                    f"values or `jnp.{short}(x)` for an array"))
            return
        if callee is not None and callee.startswith("numpy."):
            name = callee[len("numpy."):]
            if name in NUMPY_UFUNCS or name in NUMPY_CONVERTING:
                if any(self._traced(v) or self._sequence_of_traced(v) for v in values):
                    self._numpy(node, callee, where)
            elif name in NUMPY_DISPATCHING:
                if positional and self._sequence_of_traced(positional[0]):
                    self._numpy(node, callee, where)
            elif callee in SHAPE_ARGUMENTS:
                self._shape(node, callee, where, abstract)
            return
        if callee is not None and callee.startswith("math."):
            if callee[len("math."):] in MATH_FUNCTIONS and any(
                    self._traced(v) or self._sequence_of_traced(v) for v in values):
                self.report(node, (
                    f"`{callee}()` of a traced value {where}: `math` converts its argument to a Python "
                    f"float, which a tracer cannot give (ConcretizationTypeError); use the `jax.numpy` "
                    f"function (`jnp.{callee[len('math.'):]}` or its equivalent)"))
            return
        if callee in SHAPE_ARGUMENTS:
            self._shape(node, callee, where, abstract)
            return
        if type(func) is cst.Attribute:
            self._method(node, func, positional, where, abstract)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """`LAYERS[i]` / `sizes[:n]`: a Python list or tuple indexed with a traced value; `table[i]`:
        a NumPy array indexed with one."""
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.abstract:
            return
        scope = self.walk.scope
        if self.analysis.literals.is_python_sequence(node.value, scope):
            if any(self._traced(part) for part in _index_parts(node)):
                self.report(node, (
                    f"a Python list or tuple indexed with a traced value inside a function traced by `{info.label}`: "
                    f"Python needs a concrete integer index (TracerIntegerConversionError); stack the items into an "
                    f"array (`jnp.asarray(...)`, `jnp.stack(...)`) and index that, or use `jax.lax.switch` to pick "
                    f"between functions"))
            return
        traced_index = any(self._traced(part) for part in _index_values(node))
        if not traced_index and not any(self._traced(bound) for bound in _slice_bounds(node)):
            return
        if not self.analysis.name_origins.certain_numpy_array(node.value, scope):
            return
        # NumPy converts an index array with `__array__` and a slice bound with `__index__`: a tracer has neither
        error = "TracerArrayConversionError" if traced_index else "TracerIntegerConversionError"
        self.report(node, (
            f"a NumPy array indexed with a traced value inside a function traced by `{info.label}`: NumPy needs "
            f"concrete indices ({error}); make the table a JAX array once, outside the function "
            f"(`jnp.asarray(...)`), which takes traced indices"))

    # -- helpers ---------------------------------------------------------------------------------
    def _traced(self, expr: cst.BaseExpression) -> bool:
        return self.analysis.value(expr, at=self.walk).traced is MUST

    def _sequence_of_traced(self, expr: cst.BaseExpression) -> bool:
        """A list or tuple display with a traced element (`[loss_a, loss_b]`)."""
        return isinstance(expr, (cst.List, cst.Tuple)) and any(
            self._traced(e.value) or self._sequence_of_traced(e.value) for e in expr.elements)

    def _python_compares(self, node: cst.Call, positional: list[cst.BaseExpression]) -> bool:
        if any(a.keyword is not None and a.keyword.value == "key" for a in node.args):
            return False
        if any(a.star for a in node.args):
            return False
        if len(positional) >= 2:
            return any(self._traced(p) for p in positional)
        if len(positional) == 1:
            only = positional[0]
            if isinstance(only, (cst.List, cst.Tuple)):
                return len(only.elements) >= 2 and any(self._traced(e.value) for e in only.elements)
            value = self.analysis.value(only, at=self.walk)
            return value.traced is MUST and value.array is MUST
        return False

    def _numpy(self, node: cst.Call, callee: str, where: str) -> None:
        self.report(node, (
            f"`{callee}()` on a traced value {where}: NumPy converts its arguments to concrete arrays, "
            f"which a tracer cannot give (TracerArrayConversionError); use the `jax.numpy` equivalent "
            f"(`jnp.{callee[len('numpy.'):]}`)"))

    def _shape(self, node: cst.Call, callee: str, where: str, abstract: bool) -> None:
        if not abstract:
            return
        indices, keywords = SHAPE_ARGUMENTS[callee]
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        shapes = [positional[i] for i in indices if i < len(positional)]
        shapes += [a.value for a in node.args if a.keyword is not None and a.keyword.value in keywords]
        if any(self._shape_traced(s) for s in shapes):
            shown = callee.replace("jax.numpy.", "jnp.", 1).replace("jax.lax.", "lax.", 1)
            shown = shown.replace("numpy.", "np.", 1) if shown.startswith("numpy.") else shown
            self._report_shape(node, shown, where, SHAPE_HINTS.get(callee))

    def _shape_traced(self, expr: cst.BaseExpression) -> bool:
        return self.analysis.value(expr, at=self.walk).holds is MUST  # a traced value, or a container of them

    def _report_shape(self, node: cst.Call, shown: str, where: str, hint: str | None = None) -> None:
        self.report(node, (
            f"`{shown}` gets a shape or size from a traced value {where}: array shapes must be known when "
            f"JAX traces the function (TypeError / ConcretizationTypeError); "
            + (f"{hint}; " if hint else "")
            + "take sizes from static shapes (`x.shape[0]`), pass them as static arguments "
            "(`static_argnames=`), or keep a fixed maximum size and mask with `jnp.where`"),
            headline=f"`{shown}` gets a shape or size from a traced value")

    def _method(self, node: cst.Call, func: cst.Attribute, positional: list, where: str, abstract: bool) -> None:
        method = func.attr.value
        receiver = self.analysis.value(func.value, at=self.walk)
        if receiver.traced is not MUST and not (method == "reshape" and receiver.array is MUST):
            return
        if method in ("item", "tolist") and not node.args:
            if method == "item" and not abstract:
                return
            self.report(node, (
                f"`.{method}()` of a traced value {where}: a tracer has no concrete value to return "
                f"(ConcretizationTypeError); keep it an array, or read it outside the transformed "
                f"function (`jax.debug.print` to inspect it)"))
        elif method == "reshape" and abstract:
            shapes = positional + [a.value for a in node.args if a.keyword is not None and a.keyword.value == "shape"]
            if any(self._shape_traced(s) for s in shapes):
                self._report_shape(node, ".reshape", where)


def _index_parts(node: cst.Subscript):
    yield from _index_values(node)
    yield from _slice_bounds(node)


def _index_values(node: cst.Subscript):
    """The indices of a subscript that are not slices (`i` and `j` in `x[i, 1:n, j]`)."""
    for element in node.slice:
        if type(element.slice) is cst.Index:
            yield element.slice.value


def _slice_bounds(node: cst.Subscript):
    """The bounds and steps written in a subscript's slices (`1` and `n` in `x[i, 1:n]`)."""
    for element in node.slice:
        part = element.slice
        if type(part) is cst.Slice:
            for bound in (part.lower, part.upper, part.step):
                if bound is not None:
                    yield bound
