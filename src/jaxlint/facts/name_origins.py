"""Where the names of a scope get their values, so rules can tell a JAX array from a Python list.

The value-kind facts (`values.Kind`) say that a name *may* hold a JAX array: arithmetic on a traced
parameter is taken to be an array even when the parameter is a list, and results of `jax.lax`
calls count as arrays even when they are the carry pytree of a loop. Rules that would call a
valid statement an error (`carry[0] = x` on a list carry) need more: that the name is *certainly*
an array. This module answers that, and the opposite question (the name certainly holds a Python
list or tuple), from the expressions the name is bound to in its scope:

* `origins(name, scope)`: every binding of the name in the scope that binds it, with the value or
  iterable it comes from; None when some binding is of a form not understood here.
* `certain_array(expr, scope)`: the expression is a JAX array whatever path led to it.
* `python_sequence(expr, scope)`: the expression is a Python list or tuple (a display, a list
  comprehension or generator, or a name bound only to those).

Computed per scope on first use and kept for the file (`NameOrigins.of(ctx)`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from .scopes import COMPREHENSIONS, Scope
from .values import ARRAY_MODULES, STATIC_CALLS
from .walk import walk

if TYPE_CHECKING:
    from ..context import FileContext

#: Functions of the array modules whose result is a Python list, tuple or other pytree (or a
#: static value), not an array: item assignment on their results may be valid Python.
NON_ARRAY_RESULTS = frozenset({
    *(f"jax.numpy.{name}" for name in (
        "split", "array_split", "hsplit", "vsplit", "dsplit", "meshgrid", "broadcast_arrays", "atleast_1d",
        "atleast_2d", "atleast_3d", "unstack", "nonzero", "unravel_index", "histogram", "histogram2d",
        "histogramdd", "ix_", "indices", "tril_indices", "triu_indices", "diag_indices", "diag_indices_from",
        "tril_indices_from", "triu_indices_from", "mask_indices", "gradient", "frexp", "divmod", "modf", "unique",
        "unique_all", "unique_counts", "unique_inverse", "polyfit", "where", "shape", "ndim", "size",
        "linalg.eig", "linalg.eigh", "linalg.svd", "linalg.qr", "linalg.slogdet", "linalg.lstsq",
    )),
    *(f"jax.lax.{name}" for name in (
        "scan", "cond", "switch", "while_loop", "fori_loop", "map", "associative_scan", "optimization_barrier",
        "top_k", "approx_max_k", "approx_min_k", "sort", "sort_key_val", "stop_gradient", "psum", "pmean",
        "pmax", "pmin", "all_gather", "all_to_all", "ppermute", "pshuffle", "psum_scatter", "custom_root",
        "custom_linear_solve", "reduce", "platform_dependent",
    )),
})
#: Module prefixes whose functions commonly return tuples of arrays.
NON_ARRAY_PREFIXES = ("jax.lax.linalg.", "jax.scipy.linalg.", "jax.scipy.optimize.", "jax.scipy.sparse.")
#: Methods that only JAX arrays have after `.at[...]`.
AT_METHODS = frozenset({"set", "add", "subtract", "multiply", "mul", "divide", "power", "min", "max", "apply", "get"})
#: Methods of an array that return an array of the same library (NumPy arrays have them too).
ARRAY_METHODS = frozenset({
    "reshape", "astype", "transpose", "ravel", "flatten", "squeeze", "sum", "mean", "max", "min", "prod",
    "clip", "round", "cumsum", "cumprod", "dot", "swapaxes", "conj", "std", "var", "argmax", "argmin",
})
#: Attributes of an array that are arrays again.
ARRAY_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})
#: Attributes a list, tuple or dict does not have: reading one shows a parameter is an array.
ARRAY_EVIDENCE_ATTRIBUTES = frozenset({
    "shape", "ndim", "dtype", "at", "astype", "reshape", "T", "ravel", "flatten", "squeeze", "transpose",
    "block_until_ready",
})
SEQUENCE_DISPLAYS = (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)
_REFERENCES = re.compile(r"\bnew_ref\b|\bmutable_array\b|\bRef\b")
_MAX_DEPTH = 6


@dataclass(frozen=True)
class Origin:
    """One binding of a name.

    kind: "value" (`x = value`), "element" (`a, x = value`), "iteration" (`for x in value`),
    "augmented" (`x += value`), "annotation" (`x: T`), "param" (a parameter; `node` is the Param and
    `function` its function), or "other" (import, `with … as`, `del`, def, class, except, match).
    """

    kind: str
    value: cst.BaseExpression | None = None
    node: cst.CSTNode | None = None
    function: cst.CSTNode | None = None


class NameOrigins:
    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx
        self._by_scope: dict[int, dict[str, list[Origin]]] = {}
        self._evidence: dict[int, set[str]] = {}
        self._visiting: set[tuple[int, str]] = set()

    @classmethod
    def of(cls, ctx: "FileContext") -> "NameOrigins":
        return ctx.fact(cls)

    # -- questions ------------------------------------------------------------------------------
    def origins(self, name: str, scope: Scope) -> tuple[Scope, list[Origin]] | None:
        """The scope that binds `name` as seen from `scope`, and every binding it makes; None if unknown."""
        found = scope.lookup(name)
        if found is None:
            return None
        owner, binding = found
        if owner.kind == "module" and scope.kind != "module" and self._declared_global_somewhere(name):
            return None  # a function may rebind it with `global`
        origins = self._collect(owner).get(name, [])
        if len(origins) != len(binding.nodes):
            return None
        return owner, origins

    def certain_array(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """Whether the expression holds a JAX array on every path (never a list, tuple or dict)."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            callee = self.ctx.names.qualified_name(func, scope)
            if callee is not None and callee.startswith(ARRAY_MODULES):
                if callee in STATIC_CALLS or callee.startswith(NON_ARRAY_PREFIXES):
                    return False
                if callee in NON_ARRAY_RESULTS:
                    # the three-argument `jnp.where` is an array; the one-argument form is a tuple
                    return callee == "jax.numpy.where" and len(expr.args) == 3
                return True
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                receiver = func.value
                if (method in AT_METHODS and isinstance(receiver, cst.Subscript)
                        and isinstance(receiver.value, cst.Attribute) and receiver.value.attr.value == "at"
                        and method != "get"):
                    return True
                if method in ARRAY_METHODS:
                    return self.certain_array(receiver, scope, depth + 1)
            return False
        if isinstance(expr, cst.BinaryOperation):
            if self.certain_array(expr.left, scope, depth + 1) or self.certain_array(expr.right, scope, depth + 1):
                return True
            # `x - 1`, `x * 0.5` on a traced parameter: a list or dict there would raise, so it is an array
            numeric = not isinstance(expr.operator, (cst.Add, cst.Multiply)) or any(
                isinstance(side, (cst.Float, cst.Imaginary)) for side in (expr.left, expr.right))
            return numeric and (self._traced_param(expr.left, scope) or self._traced_param(expr.right, scope))
        if isinstance(expr, cst.UnaryOperation):
            return not isinstance(expr.operator, cst.Not) and self.certain_array(expr.expression, scope, depth + 1)
        if isinstance(expr, cst.Subscript):
            return self.certain_array(expr.value, scope, depth + 1)
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in ARRAY_ATTRIBUTES and self.certain_array(expr.value, scope, depth + 1)
        if isinstance(expr, cst.Name):
            return self._name_is_array(expr.value, scope, depth)
        return False

    def _traced_param(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """A name that is only ever a traced parameter of the function that binds it."""
        if not isinstance(expr, cst.Name):
            return False
        found = self.origins(expr.value, scope)
        if found is None:
            return False
        params = [o for o in found[1] if o.kind not in ("annotation",)]
        if not params or not all(o.kind == "param" for o in params):
            return False
        info = self.ctx.traced.info(params[0].function)
        return info is not None and info.abstract and expr.value in info.traced_params

    def python_sequence(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """Whether the expression is a Python list or tuple: a display, comprehension, or a name bound only to those."""
        if isinstance(expr, SEQUENCE_DISPLAYS):
            return True
        if not isinstance(expr, cst.Name):
            return False
        found = self.origins(expr.value, scope)
        if found is None:
            return False
        _, origins = found
        values = [o for o in origins if o.kind != "annotation"]
        return bool(values) and all(
            o.kind == "value" and isinstance(o.value, (cst.List, cst.Tuple, cst.ListComp)) for o in values)

    def param_is_array(self, origin: Origin) -> bool:
        """A parameter annotated as an array, or whose function reads an array-only attribute of it."""
        param = origin.node
        if not isinstance(param, cst.Param):
            return False
        if param.annotation is not None:
            text = self.ctx.module.code_for_node(param.annotation.annotation)
            if re.search(r"Array|ndarray", text) and not re.search(r"\bRef\b", text):
                return True
        return param.name.value in self._array_evidence(origin.function)

    @property
    def references_in_file(self) -> bool:
        """The file uses mutable array references (`jax.new_ref`), which have `.shape` and allow `r[i] = v`."""
        return _REFERENCES.search(self.ctx.source) is not None

    # -- collection -----------------------------------------------------------------------------
    def _name_is_array(self, name: str, scope: Scope, depth: int) -> bool:
        found = self.origins(name, scope)
        if found is None:
            return False
        owner, origins = found
        key = (id(owner.node), name)
        if key in self._visiting:
            return True  # `x = x * 2`: the name's other bindings decide
        self._visiting.add(key)
        try:
            return self._origins_are_arrays(origins, owner, depth)
        finally:
            self._visiting.discard(key)

    def _origins_are_arrays(self, origins: list[Origin], owner: Scope, depth: int) -> bool:
        decided = False
        for origin in origins:
            if origin.kind in ("augmented", "annotation"):
                continue
            decided = True
            if origin.kind == "value":
                if not self.certain_array(origin.value, owner, depth + 1):
                    return False
            elif origin.kind in ("element", "iteration"):
                if not self._yields_arrays(origin.value, owner, depth + 1):
                    return False
            elif origin.kind == "param":
                if not self.param_is_array(origin):
                    return False
            else:
                return False
        return decided

    def _yields_arrays(self, value: cst.BaseExpression | None, scope: Scope, depth: int) -> bool:
        """Unpacking or iterating `value` gives arrays: it is an array, or a list/tuple of arrays from JAX."""
        if value is None:
            return False
        if self.certain_array(value, scope, depth):
            return True
        if isinstance(value, cst.Call):
            callee = self.ctx.names.qualified_name(value.func, scope)
            return callee is not None and callee.startswith("jax.numpy.") and callee in NON_ARRAY_RESULTS and callee not in (
                "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.polyfit", "jax.numpy.histogram")
        return False

    def _declared_global_somewhere(self, name: str) -> bool:
        return re.search(rf"\bglobal\b[^\n]*\b{re.escape(name)}\b", self.ctx.source) is not None

    def _array_evidence(self, function: cst.CSTNode | None) -> set[str]:
        if function is None:
            return set()
        key = id(function)
        if key not in self._evidence:
            names: set[str] = set()

            def enter(node: cst.CSTNode, field: str) -> bool:
                if (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
                        and node.attr.value in ARRAY_EVIDENCE_ATTRIBUTES):
                    names.add(node.value.value)
                return True

            walk(function.body, enter, _ignore)
            if self.references_in_file:
                # a `jax.Ref` has `.shape` and `.dtype` too: only `.at` tells an array from it
                names = {n for n in names if n in self._at_users(function)}
            self._evidence[key] = names
        return self._evidence[key]

    def _at_users(self, function: cst.CSTNode) -> set[str]:
        users: set[str] = set()

        def enter(node: cst.CSTNode, field: str) -> bool:
            if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.attr.value == "at":
                users.add(node.value.value)
            return True

        walk(function.body, enter, _ignore)
        return users

    def _collect(self, scope: Scope) -> dict[str, list[Origin]]:
        key = id(scope.node)
        if key in self._by_scope:
            return self._by_scope[key]
        found: dict[str, list[Origin]] = {}

        def add(name: str, origin: Origin) -> None:
            found.setdefault(name, []).append(origin)

        def target(node: cst.BaseExpression, kind: str, value: cst.BaseExpression | None, statement) -> None:
            if isinstance(node, cst.Name):
                add(node.value, Origin(kind, value, statement))
            elif isinstance(node, (cst.Tuple, cst.List)):
                for element in node.elements:
                    if isinstance(element, cst.StarredElement):
                        target(element.value, "other", None, statement)
                    else:
                        target(element.value, "element" if kind == "value" else kind, value, statement)
            elif isinstance(node, cst.StarredElement):
                target(node.value, "other", None, statement)

        def enter(node: cst.CSTNode, field: str) -> bool:
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                add(node.name.value, Origin("other", None, node))
                return False
            if isinstance(node, cst.Lambda):
                return False
            if isinstance(node, COMPREHENSIONS):
                walk(node.for_in.iter, enter, _ignore)
                return False
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    target(t.target, "value", node.value, node)
            elif isinstance(node, cst.AnnAssign):
                target(node.target, "value" if node.value is not None else "annotation", node.value, node)
            elif isinstance(node, cst.AugAssign):
                if isinstance(node.target, cst.Name):
                    add(node.target.value, Origin("augmented", node.value, node))
            elif isinstance(node, cst.NamedExpr):
                target(node.target, "value", node.value, node)
            elif isinstance(node, cst.For):
                target(node.target, "iteration", node.iter, node)
            elif isinstance(node, cst.WithItem):
                if node.asname is not None:
                    target(node.asname.name, "other", None, node)
            elif isinstance(node, cst.Del):
                target(node.target, "other", None, node)
            elif isinstance(node, cst.ExceptHandler):
                if node.name is not None and isinstance(node.name.name, cst.Name):
                    add(node.name.name.value, Origin("other", None, node))
            elif isinstance(node, (cst.MatchAs, cst.MatchStar)):
                if node.name is not None:
                    add(node.name.value, Origin("other", None, node))
            elif isinstance(node, cst.Import):
                for alias in node.names:
                    local = alias.asname.name if alias.asname else alias.name
                    while isinstance(local, cst.Attribute):
                        local = local.value
                    if isinstance(local, cst.Name):
                        add(local.value, Origin("other", None, node))
            elif isinstance(node, cst.ImportFrom):
                if not isinstance(node.names, cst.ImportStar):
                    for alias in node.names:
                        local = alias.asname.name if alias.asname else alias.name
                        if isinstance(local, cst.Name):
                            add(local.value, Origin("other", None, node))
            return True

        node = scope.node
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            params = node.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                add(param.name.value, Origin("param", None, param, node))
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    add(star.name.value, Origin("other", None, star, node))
            if isinstance(node.body, cst.BaseExpression):
                walk(node.body, enter, _ignore)
            else:
                for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body]:
                    walk(statement, enter, _ignore)
        elif isinstance(node, cst.ClassDef):
            for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body]:
                walk(statement, enter, _ignore)
        elif isinstance(node, cst.Module):
            for statement in node.body:
                walk(statement, enter, _ignore)
        self._by_scope[key] = found
        return found


def _ignore(node: cst.CSTNode) -> None:
    return None
