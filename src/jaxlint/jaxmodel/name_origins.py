"""Where the names of a scope get their values, so rules can tell a JAX array from a Python list.

The value-kind facts (`values.Kind`) say that a name *may* hold a JAX array: arithmetic on a traced
parameter is taken to be an array even when the parameter is a list, and results of `jax.lax`
calls count as arrays even when they are the carry pytree of a loop. Rules that would call a
valid statement an error (`carry[0] = x` on a list carry) need more: that the name is *certainly*
an array. This module answers that, and the opposite question (the name certainly holds a Python
list or tuple), from the expressions the name is bound to where it is read:

* `origins(name, scope)`: every binding of the name in the scope that binds it, with the value or
  iterable it comes from; None when some binding is of a form not understood here.
* `reaching(name_node, scope)`: the bindings that can reach that read of the name (`dataflow.reaching`):
  `x = np.zeros(3)`, `x[0] = 1`, `x = jnp.asarray(x)`, `x[1] = 2` is NumPy at the first subscript
  and JAX at the second. When several reach and disagree, the answer is "not known".
* `certain_array(expr, scope)`: the expression is a JAX array whatever path led to it: made by a
  JAX function or an `.at[]` update, returned on every path by a helper of the file, an entry of a
  dict display of arrays (`params["w"]`), or an attribute every method of the class sets to arrays
  (`self.buf`, set in `__init__`).
* `python_sequence(expr, scope)`: the expression is a Python list or tuple (a display, a list
  comprehension or generator, or a name bound only to those where it is read).

Computed per scope on first use and kept for the file (`NameOrigins.of(ctx)`).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from .external import TABLE_PREFIXES
from .jax_names import JIT_FAMILY, MEMOISING, PARTIAL
from ..dataflow.reaching import Origin, ScopeFacts, literal_key, scope_facts
from ..semantic.bindings import BindingKind
from ..semantic.instance_attributes import InstanceAttributes, self_param
from ..semantic.model import SemanticModel
from ..semantic.scopes import Scope
from .traced import TracedFunctions
from .values import ARRAY_ATTRIBUTES, ARRAY_EVIDENCE_ATTRIBUTES, AT_UPDATES, ARRAY_MODULES, STATIC_CALLS
from ..syntax.walk import target_parts, walk

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

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
AT_METHODS = AT_UPDATES | {"get"}
#: Methods of an array that return an array of the same library (NumPy arrays have them too).
ARRAY_METHODS = frozenset({
    "reshape", "astype", "transpose", "ravel", "flatten", "squeeze", "sum", "mean", "max", "min", "prod",
    "clip", "round", "cumsum", "cumprod", "dot", "swapaxes", "conj", "std", "var", "argmax", "argmin",
    "copy", "block_until_ready",
})
#: NumPy functions that make one array: `jax.device_put` of their result is one JAX array.
NUMPY_CONSTRUCTORS = frozenset(f"numpy.{name}" for name in (
    "zeros", "ones", "full", "empty", "array", "asarray", "arange", "linspace", "eye", "zeros_like",
    "ones_like", "full_like", "stack", "concatenate", "random.rand", "random.randn", "random.normal",
    "random.uniform", "random.randint",
))
#: NumPy functions whose result is a NumPy array whatever they are given (never a scalar, a JAX
#: array or a subclass): the constructors above less the random draws, which give a Python scalar
#: when no size is asked.
NUMPY_ARRAY_MAKERS = frozenset(name for name in NUMPY_CONSTRUCTORS if not name.startswith("numpy.random.")) | {
    "numpy.identity", "numpy.empty_like", "numpy.logspace", "numpy.geomspace", "numpy.vstack", "numpy.hstack",
}
#: Methods of a NumPy array that return a NumPy array again: not its reductions, which give NumPy
#: scalars.
NUMPY_ARRAY_METHODS = ARRAY_METHODS - {"sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "dot",
                                       "block_until_ready"}
#: Attributes of an array that are arrays again (`x.at` is an indexer, not an array).
ARRAY_VALUED_ATTRIBUTES = ARRAY_ATTRIBUTES - {"at"}
SEQUENCE_DISPLAYS = (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)
_REFERENCES = re.compile(r"\bnew_ref\b|\bmutable_array\b|\bRef\b")
_MAX_DEPTH = 6


class NameOrigins:
    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        self._by_scope: dict[int, ScopeFacts] = {}
        self._scopes: dict[int, Scope] = {}
        self._classes: dict[int, InstanceAttributes] = {}
        self._stores: dict[str, list[Scope]] | None = None
        self._references: bool | None = None
        self._rebound: dict[str, bool] = {}
        self._bases: set[str] | None = None
        self._declarations: list[str] | None = None
        self._evidence: dict[int, set[str]] = {}
        self._visiting: set[int] = set()

    @classmethod
    def of(cls, ctx: "SourceFile") -> "NameOrigins":
        return ctx.fact(cls)

    # -- questions ------------------------------------------------------------------------------
    def origins(self, name: str, scope: Scope) -> tuple[Scope, list[Origin]] | None:
        """The scope that binds `name` as seen from `scope`, and every binding it makes; None if unknown."""
        found = scope.lookup(name)
        if found is None:
            return None
        owner, binding = found
        if owner.kind == "module" and scope.kind != "module" and self._rebound_elsewhere(name):
            return None  # a function may rebind it with `global`
        origins = self._collect(owner).get(name, [])
        if len(origins) != len(binding.nodes):
            return None
        return owner, origins

    def reaching(self, name: cst.Name, scope: Scope) -> tuple[Scope, list[Origin]] | None:
        """The scope that binds the name read here, and the bindings that can reach this read; None if unknown.

        A read in the scope that binds the name (or in a comprehension run there) sees only the
        bindings on some path to it; a read in a nested function, which may run at any time, every
        binding.
        """
        found = self.origins(name.value, scope)
        if found is None:
            return None
        owner = found[0]
        held = self.facts(owner).reaching.get(id(name))
        if held is None or self._rebound_elsewhere(name.value):
            return found  # read later than its scope's own flow, or rebound by another function
        return (owner, list(held)) if held else None

    def certain_array(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """Whether the expression holds a JAX array on every path (never a list, tuple or dict)."""
        if depth > _MAX_DEPTH:
            return False
        if type(expr) is cst.Call:
            func = expr.func
            callee = self.ctx.names.qualified_name(func, scope)
            if callee == "jax.device_put" and expr.args and expr.args[0].keyword is None:
                # one array in, one JAX array out (a pytree in gives a pytree)
                placed = expr.args[0].value
                return (isinstance(placed, cst.Call)
                        and self.ctx.names.qualified_name(placed.func, scope) in NUMPY_CONSTRUCTORS
                        or self.certain_array(placed, scope, depth + 1))
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
                if self.ctx.project is not None and callee is not None and not callee.startswith(TABLE_PREFIXES):
                    return self._project_returns_arrays(callee)
                return False
            if self.ctx.project is not None and callee is not None and not callee.startswith(TABLE_PREFIXES):
                return self._project_returns_arrays(callee)
            return self._all_arrays(self._helper_returns(expr, scope), depth)
        if type(expr) is cst.BinaryOperation:
            if self.certain_array(expr.left, scope, depth + 1) or self.certain_array(expr.right, scope, depth + 1):
                return True
            # `x - 1`, `x * 0.5` on a traced parameter: a list or dict there would raise, so it is an array
            numeric = not isinstance(expr.operator, (cst.Add, cst.Multiply)) or any(
                isinstance(side, (cst.Float, cst.Imaginary)) for side in (expr.left, expr.right))
            return numeric and (self._traced_param(expr.left, scope) or self._traced_param(expr.right, scope))
        if type(expr) is cst.UnaryOperation:
            return not isinstance(expr.operator, cst.Not) and self.certain_array(expr.expression, scope, depth + 1)
        if type(expr) is cst.Subscript:
            key = literal_key(expr)
            if key is not None:
                # `params["w"]`: an entry of a dict of arrays
                return self._all_arrays(self._entries(expr.value, (key,), scope, depth + 1), depth)
            return self.certain_array(expr.value, scope, depth + 1)
        if type(expr) is cst.Attribute:
            if expr.attr.value in ARRAY_VALUED_ATTRIBUTES:
                return self.certain_array(expr.value, scope, depth + 1)
            return self._all_arrays(self._instance_attribute(expr, scope), depth)
        if isinstance(expr, cst.Name):
            return self._name_is_array(expr, scope, depth)
        return False

    def certain_numpy_array(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """Whether the expression holds a NumPy array on every path: made by a NumPy constructor
        (`np.arange(10)`, `np.asarray(rows)`), reshaped or cast from one, or a name bound only to
        those where it is read (a table at the module's top level, read by a function). Attributes
        are never taken: a pytree's field holding a NumPy array is a tracer under a trace."""
        if depth > _MAX_DEPTH:
            return False
        if type(expr) is cst.Call:
            func = expr.func
            if type(func) is cst.Attribute and func.attr.value in NUMPY_ARRAY_METHODS:
                return self.certain_numpy_array(func.value, scope, depth + 1)
            return self.ctx.names.qualified_name(func, scope) in NUMPY_ARRAY_MAKERS
        if type(expr) is cst.Name:
            found = self.reaching(expr, scope)
            if found is None:
                return False
            owner, origins = found
            values = [o for o in origins if o.kind != "annotation"]
            return bool(values) and all(
                o.kind == "value" and self.certain_numpy_array(o.value, owner, depth + 1) for o in values)
        return False

    def _traced_param(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """A name that is only ever a traced parameter of the function that binds it."""
        if not isinstance(expr, cst.Name):
            return False
        found = self.reaching(expr, scope)
        if found is None:
            return False
        params = [o for o in found[1] if o.kind not in ("annotation",)]
        if not params or not all(o.kind == "param" for o in params):
            return False
        info = self.ctx.fact(TracedFunctions).info(params[0].function)
        return info is not None and info.abstract and expr.value in info.traced_params

    def python_sequence(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """Whether the expression is a Python list or tuple: a display, comprehension, or a name bound only to those."""
        if isinstance(expr, SEQUENCE_DISPLAYS):
            return True
        if not isinstance(expr, cst.Name):
            return False
        found = self.reaching(expr, scope)
        if found is None:
            return False
        _, origins = found
        values = [o for o in origins if o.kind != "annotation"]
        return bool(values) and all(
            o.kind == "value" and isinstance(o.value, (cst.List, cst.Tuple, cst.ListComp)) for o in values)

    def param_is_array(self, origin: Origin) -> bool:
        """A traced parameter of a traced function that is an array, not a pytree: annotated as one, or
        read through an array-only attribute. (Outside a trace the caller may pass a NumPy array.)"""
        param = origin.node
        if not isinstance(param, cst.Param):
            return False
        info = self.ctx.fact(TracedFunctions).info(origin.function)
        if info is None or param.name.value not in info.traced_params:
            return False
        if param.annotation is not None and _array_annotation(param.annotation.annotation):
            return True
        return param.name.value in self._array_evidence(origin.function)

    @property
    def references_in_file(self) -> bool:
        """The file uses mutable array references (`jax.new_ref`), which have `.shape` and allow `r[i] = v`."""
        if self._references is None:
            source = self.ctx.source
            self._references = ("new_ref" in source or "mutable_array" in source or "Ref" in source) \
                and _REFERENCES.search(source) is not None
        return self._references

    # -- where values come from -----------------------------------------------------------------
    def _name_is_array(self, name: cst.Name, scope: Scope, depth: int) -> bool:
        found = self.reaching(name, scope)
        if found is None:
            return False
        owner, origins = found
        return self._origins_are_arrays(origins, owner, depth)

    def _origins_are_arrays(self, origins: list[Origin], owner: Scope, depth: int) -> bool:
        decided = False
        for origin in origins:
            if origin.kind in ("augmented", "annotation"):
                continue
            if id(origin) in self._visiting:
                continue  # `x = x * 2` round a loop: the binding's other sources decide
            decided = True
            self._visiting.add(id(origin))
            try:
                if origin.kind == "value":
                    ok = self.certain_array(origin.value, owner, depth + 1)
                elif origin.kind in ("element", "iteration"):
                    ok = self._yields_arrays(origin.value, owner, depth + 1)
                elif origin.kind == "param":
                    ok = self.param_is_array(origin)
                else:
                    ok = False
            finally:
                self._visiting.discard(id(origin))
            if not ok:
                return False
        return decided

    def _all_arrays(self, values: list[tuple[cst.BaseExpression, Scope]] | None, depth: int) -> bool:
        """Every value is an array (a value met again while deciding, `params["w"] = params["w"] * 2`,
        is left to the others)."""
        if values is None:
            return False
        decided = False
        for value, owner in values:
            if id(value) in self._visiting:
                continue
            decided = True
            self._visiting.add(id(value))
            try:
                if not self.certain_array(value, owner, depth + 1):
                    return False
            finally:
                self._visiting.discard(id(value))
        return decided

    def _yields_arrays(self, value: cst.BaseExpression | None, scope: Scope, depth: int) -> bool:
        """Unpacking or iterating `value` gives arrays: it is an array, a tuple or list display of arrays,
        a list/tuple of arrays from JAX, or what a helper returning one of those gives."""
        if value is None or depth > _MAX_DEPTH:
            return False
        if self.certain_array(value, scope, depth):
            return True
        if isinstance(value, (cst.Tuple, cst.List)):
            return bool(value.elements) and all(
                not isinstance(e, cst.StarredElement) and self.certain_array(e.value, scope, depth + 1)
                for e in value.elements)
        if isinstance(value, cst.Call):
            returned = self._helper_returns(value, scope)
            if returned is not None:
                return all(self._yields_arrays(v, owner, depth + 1) for v, owner in returned)
            callee = self.ctx.names.qualified_name(value.func, scope)
            return callee is not None and callee.startswith("jax.numpy.") and callee in NON_ARRAY_RESULTS and callee not in (
                "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.polyfit", "jax.numpy.histogram")
        return False

    def helper_returns(self, call: cst.Call, scope: Scope) -> list[tuple[cst.BaseExpression, Scope]] | None:
        """What `helper(...)` can return, for a function of this file that returns on every path; else None."""
        return self._helper_returns(call, scope)

    def _helper_returns(self, call: cst.Call, scope: Scope) -> list[tuple[cst.BaseExpression, Scope]] | None:
        """What `helper(...)` can return, for a function of this file that returns on every path; else None."""
        func = call.func
        if not isinstance(func, cst.Name):
            return None
        found = self.reaching(func, scope)
        if found is None or len(found[1]) != 1:
            return None
        owner, (origin,) = found
        function = origin.node
        if origin.kind != "other" or not isinstance(function, cst.FunctionDef) or owner.kind == "class":
            return None
        return self._returned_by(function, owner)

    def function_returns(self, function: cst.FunctionDef) -> list[tuple[cst.BaseExpression, Scope]] | None:
        """What a function of the module's top level returns, when it returns on every path (and
        its decorators keep what it returns); else None."""
        return self._returned_by(function, self.ctx.module_scope)

    def _returned_by(self, function: cst.FunctionDef, owner: Scope) -> list[tuple[cst.BaseExpression, Scope]] | None:
        if function.asynchronous or not all(self._keeps_result(d.decorator, owner) for d in function.decorators):
            return None
        inner = self._scope(function, owner)
        facts = self.facts(inner)
        if facts.generator or facts.falls_off or not facts.returns or any(r is None for r in facts.returns):
            return None
        return [(value, inner) for value in facts.returns]  # type: ignore[misc]

    def _project_returns_arrays(self, dotted: str) -> bool:
        """A function of another module of the project that returns a JAX array on every path."""
        function = self.ctx.project.function_at(dotted)
        return function is not None and self.ctx.project.returns_array(function.ref)

    def returns_arrays(self, function: cst.FunctionDef) -> bool:
        """Whether a function of the module returns JAX arrays on every path (and nothing else)."""
        returned = self.function_returns(function)
        return returned is not None and self._all_arrays(returned, 0)

    def _keeps_result(self, decorator: cst.BaseExpression, scope: Scope) -> bool:
        """A decorator that leaves what the function returns as it is (`jax.jit`, `functools.cache`)."""
        target = decorator.func if isinstance(decorator, cst.Call) else decorator
        name = self.ctx.names.qualified_name(target, scope)
        if name in JIT_FAMILY or name in MEMOISING:
            return True
        if name in PARTIAL and isinstance(decorator, cst.Call) and decorator.args:
            return self.ctx.names.qualified_name(decorator.args[0].value, scope) in JIT_FAMILY
        return False

    def _entries(self, base: cst.BaseExpression, path: tuple[str, ...], scope: Scope,
                 depth: int) -> list[tuple[cst.BaseExpression, Scope]] | None:
        """The values `base[path[0]][path[1]]…` can be, when `base` is built from dict displays; else None."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(base, cst.Dict):
            value = _dict_value(base, path[0])
            if value is None:
                return None
            return [(value, scope)] if len(path) == 1 else self._entries(value, path[1:], scope, depth + 1)
        if isinstance(base, cst.Subscript):
            key = literal_key(base)
            return None if key is None else self._entries(base.value, (key, *path), scope, depth + 1)
        if isinstance(base, cst.Call):
            returned = self._helper_returns(base, scope)
            if returned is None:
                return None
            return self._entries_of_all(returned, path, depth)
        if not isinstance(base, cst.Name):
            return None
        found = self.reaching(base, scope)
        if found is None:
            return None
        owner, origins = found
        facts = self.facts(owner)
        if base.value in facts.updated or not origins or any(o.kind != "value" for o in origins):
            return None
        for call in facts.passed.get(base.value, ()):
            callee = self.ctx.names.qualified_name(call.func, owner) or ""
            if not callee.startswith(_READ_ONLY_CALLEES):
                return None  # a function given the dict may put other values in it
        entries = self._entries_of_all([(o.value, owner) for o in origins], path, depth)
        if entries is None:
            return None
        writes = facts.item_writes.get(base.value, {})
        if self._item_assignments(base.value, owner) > len(writes):
            return None  # a nested function (a closure, or any function for a module's dict) writes too
        for written, value in writes.values():
            if len(written) > len(path) or any(w is not None and w != p for w, p in zip(written, path)):
                continue  # another entry, or an update inside the entry (`params["w"][0] = 1`)
            if written != path or value is None:
                return None  # a computed key, an enclosing dict replaced, or the entry deleted
            entries.append((value, owner))
        return entries

    def _entries_of_all(self, values, path, depth):
        entries: list[tuple[cst.BaseExpression, Scope]] = []
        for value, owner in values:
            found = self._entries(value, path, owner, depth + 1)
            if found is None:
                return None
            entries.extend(found)
        return entries

    def _instance_attribute(self, expr: cst.Attribute, scope: Scope) -> list[tuple[cst.BaseExpression, Scope]] | None:
        """`self.buf` in a method: the values every assignment in the class gives it; None when not known."""
        receiver = expr.value
        if not isinstance(receiver, cst.Name):
            return None
        found = self.reaching(receiver, scope)
        if found is None or len(found[1]) != 1 or found[1][0].kind != "param":
            return None
        owner, (origin,) = found
        method = origin.function
        if owner.parent is None or owner.parent.kind != "class" or self_param(method) is not origin.node:
            return None
        cls = owner.parent.node
        if cls.name.value in self._subclassed():
            return None  # a subclass of the file may set the attribute to something else
        attributes = self._classes.get(id(cls))
        if attributes is None:
            attributes = self._classes[id(cls)] = InstanceAttributes(cls)
        assigned = attributes.values(expr.attr.value)
        if assigned is None:
            return None
        if any(not _within(where, cls) for where in self._attribute_stores().get(expr.attr.value, ())):
            return None  # set from outside the class too (`agent.buf = []`), or by another class
        return [(value, self._scope(function, owner.parent)) for value, function in assigned]

    def _attribute_stores(self) -> dict[str, list[Scope]]:
        """attribute -> the scope of each statement of the file that assigns an attribute so named
        (`x.buf = …`, `x.buf: T = …`, `x.buf += …`, also as one target of several)."""
        if self._stores is None:
            self._stores = {}
            model = SemanticModel.of(self.ctx)
            for node, scope, _ in model.sites_of(cst.Assign, cst.AnnAssign, cst.AugAssign):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                for target in targets:
                    for part in target_parts(target):
                        if type(part) is cst.Attribute:
                            self._stores.setdefault(part.attr.value, []).append(scope)
        return self._stores

    def _item_assignments(self, name: str, owner: Scope) -> int:
        """Lines in the code of `owner` (nested functions included) that assign or delete an item of `name`."""
        text = self.ctx.source if owner.kind == "module" else self.ctx.module.code_for_node(owner.node)
        pattern = rf"^[ \t]*(?:del[ \t]+)?{re.escape(name)}[ \t]*\[[^\n]*\][ \t]*(?:$|[-+*/%&|^@<>]*=(?!=))"
        return len(re.findall(pattern, text, re.MULTILINE))

    def _subclassed(self) -> set[str]:
        """Names of the classes that classes defined at the top of the module derive from."""
        if self._bases is None:
            self._bases = set()
            for binding in SemanticModel.of(self.ctx).bindings:
                statement = binding.statement
                if binding.kind is BindingKind.CLASS and binding.top_level is statement:
                    for base in statement.bases:  # type: ignore[attr-defined]
                        value = base.value
                        name = value.attr.value if isinstance(value, cst.Attribute) else getattr(value, "value", None)
                        if isinstance(name, str):
                            self._bases.add(name)
        return self._bases

    def _scope(self, function: cst.FunctionDef, owner: Scope) -> Scope:
        found = self._scopes.get(id(function))
        if found is None:
            found = self._scopes[id(function)] = Scope(function, owner)
        return found

    def _rebound_elsewhere(self, name: str) -> bool:
        """Some function rebinds the name through `global` or `nonlocal`: a call may change it at any time."""
        found = self._rebound.get(name)
        if found is None:
            if self._declarations is None:
                source = self.ctx.source
                self._declarations = re.findall(r"\b(?:global|nonlocal)\b[^\n]*", source) if (
                    "global" in source or "nonlocal" in source) else []
            pattern = re.compile(rf"\b{re.escape(name)}\b")
            found = self._rebound[name] = any(pattern.search(line) for line in self._declarations)
        return found

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

            walk(function.body, enter, None)
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

        walk(function.body, enter, None)
        return users

    def _collect(self, scope: Scope) -> dict[str, list[Origin]]:
        return self.facts(scope).origins

    def facts(self, scope: Scope) -> "ScopeFacts":
        """What the reaching-bindings domain finds in one run over the scope's own statements (computed once)."""
        key = id(scope.node)
        found = self._by_scope.get(key)
        if found is None:
            found = self._by_scope[key] = scope_facts(scope)
        return found


#: Functions that read a dict given to them without putting values in it.
_READ_ONLY_CALLEES = ("jax.", "builtins.", "numpy.", "optax.", "pprint.", "json.dump", "logging.")


#: Annotations of an array (`jax.Array`, `jnp.ndarray`), and jaxtyping's dtype wrappers (`Float[Array, "n"]`).
_ARRAY_TYPES = frozenset({"Array", "ndarray", "ArrayImpl"})
_JAXTYPING = re.compile(r"(Float|Int|UInt|Bool|Shaped|Real|Num|Complex|Integer|Inexact|Key|BFloat)\d*")


def _array_annotation(annotation: cst.BaseExpression) -> bool:
    """`jax.Array`, `"jnp.ndarray"`, `Float[Array, "b n"]`; not `dict[str, Array]`, `Variable[Array]`, `ArrayLike`."""
    if isinstance(annotation, cst.SimpleString):
        text = annotation.raw_value.strip()
        return re.fullmatch(r"(\w+\.)*(Array|ndarray|ArrayImpl)", text) is not None
    if isinstance(annotation, cst.Subscript):
        outer = annotation.value
        name = outer.attr.value if isinstance(outer, cst.Attribute) else getattr(outer, "value", "")
        first = annotation.slice[0].slice if annotation.slice else None
        return (isinstance(name, str) and _JAXTYPING.fullmatch(name) is not None
                and isinstance(first, cst.Index) and _array_annotation(first.value))
    if isinstance(annotation, cst.Attribute):
        return annotation.attr.value in _ARRAY_TYPES
    return isinstance(annotation, cst.Name) and annotation.value in _ARRAY_TYPES


def _dict_value(display: cst.Dict, key: str) -> cst.BaseExpression | None:
    """The value a dict display gives `key` (the last one written), or None (absent, or `**other` may)."""
    found = None
    for element in display.elements:
        if not isinstance(element, cst.DictElement):
            return None  # `**defaults` may hold the key
        if isinstance(element.key, cst.SimpleString) and element.key.raw_value == key:
            found = element.value
    return found


def _within(scope: Scope | None, node: cst.CSTNode) -> bool:
    """Whether a scope is that of `node` or nested in it."""
    while scope is not None:
        if scope.node is node:
            return True
        scope = scope.parent
    return False
