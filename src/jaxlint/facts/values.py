"""What kind of value an expression holds: a traced array, a traced pytree, a JAX array, or nothing known.

A small abstract interpreter runs over one scope's statements in source order: assignments bind
kinds to names, `if`/`else` branches merge, loop bodies run twice so values carried round the loop
are seen. Every Name it reads is recorded with its kind at that point, so rules can later ask for
the kind of any expression in that scope without re-running anything.
"""
from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Callable

import libcst as cst

from .module_state import ModuleState
from .scopes import COMPREHENSIONS

if TYPE_CHECKING:
    from .traced import TracedFunctions


class Kind(IntEnum):
    """Ordered so that merging two paths keeps the larger (the less certain to be harmless)."""

    NONE = 0
    #: a concrete JAX array outside any trace (`x = jnp.zeros(3)` at module level)
    JAX_ARRAY = 1
    #: a container (tuple, list, dict) holding traced leaves; its truthiness is plain Python
    CONTAINER = 2
    #: a traced parameter whose structure is unknown (an array or a pytree of arrays)
    PARAM = 3
    #: a traced array
    ARRAY = 4
    #: a traced boolean array (a comparison), usable as a mask
    BOOL = 5

    @property
    def traced(self) -> bool:
        return self >= Kind.PARAM

    @property
    def jax_array(self) -> bool:
        return self in (Kind.JAX_ARRAY, Kind.PARAM, Kind.ARRAY, Kind.BOOL)


#: Attributes that are static even on a tracer.
STATIC_ATTRIBUTES = frozenset({
    "shape", "ndim", "dtype", "size", "sharding", "aval", "weak_type", "itemsize", "nbytes", "named_shape",
})
#: Attributes of an array that are arrays again.
ARRAY_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "at"})
#: Calls whose result is static whatever they are given.
STATIC_CALLS = frozenset({
    "builtins.len", "builtins.isinstance", "builtins.issubclass", "builtins.callable", "builtins.type",
    "builtins.id", "builtins.hasattr", "builtins.repr", "builtins.str",
    "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.result_type", "jax.numpy.dtype",
    "jax.numpy.issubdtype", "jax.numpy.iinfo", "jax.numpy.finfo", "jax.numpy.isscalar",
    "numpy.shape", "numpy.ndim", "numpy.size", "numpy.result_type", "numpy.dtype", "numpy.issubdtype",
    "jax.tree.structure", "jax.tree_util.tree_structure", "jax.eval_shape", "jax.typeof",
    "jax.core.get_aval", "jax.dtypes.issubdtype", "jax.dtypes.result_type", "jax.numpy.iscomplexobj",
    "jax.lax.axis_size", "jax.lax.broadcast_shapes", "jax.numpy.broadcast_shapes", "jax.numpy.promote_types",
    "jax.numpy.can_cast", "jax.numpy.isdtype", "jax.device_count", "jax.local_device_count",
    "jax.process_count", "jax.process_index", "jax.devices", "jax.local_devices",
})
#: Conversions: their result is a concrete Python value (when they do not fail; JAX203 reports them).
CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool", "builtins.complex"})
#: Modules whose functions return JAX arrays.
ARRAY_MODULES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.", "jax.image.")
#: Functions of those modules that return booleans.
BOOL_FUNCTIONS = frozenset({
    "jax.numpy.isnan", "jax.numpy.isinf", "jax.numpy.isfinite", "jax.numpy.logical_and",
    "jax.numpy.logical_or", "jax.numpy.logical_not", "jax.numpy.logical_xor", "jax.numpy.greater",
    "jax.numpy.less", "jax.numpy.equal", "jax.numpy.not_equal", "jax.numpy.greater_equal",
    "jax.numpy.less_equal", "jax.numpy.isclose", "jax.numpy.isin", "jax.numpy.signbit",
})
#: Methods on a traced array whose result is a concrete Python value (JAX203 reports them).
CONCRETIZING_METHODS = frozenset({"item", "tolist", "__index__", "__bool__", "__float__", "__int__"})
TREE_FUNCTIONS = ("jax.tree.", "jax.tree_util.")
#: Constructors of mutable references, which do support in-place assignment.
REFERENCE_CALLS = frozenset({"jax.new_ref", "jax.ref.new_ref", "jax.experimental.mutable_array"})

#: Bitwise operators, which keep boolean arrays boolean (`mask & other`, `~mask`).
BITWISE = (cst.BitAnd, cst.BitOr, cst.BitXor)

State = dict[str, Kind]


class ValueFlow:
    """The kinds of the names read in one scope (a function body or the module's top level)."""

    def __init__(self, traced: "TracedFunctions", scope_node: cst.CSTNode, initial: State,
                 abstract: bool, qualified_name: Callable[[cst.BaseExpression], str | None]) -> None:
        self.traced = traced
        self.scope_node = scope_node
        self.abstract = abstract
        self.qualified_name = qualified_name
        self.state: State = dict(initial)
        #: id(Name node) -> kind of the name where it is read
        self.loads: dict[int, Kind] = {}
        #: nested function -> the state when it was defined (its closure)
        self.closures: dict[int, State] = {}
        #: calls to functions of this module: (callee, {parameter: kind of the argument})
        self.calls: list[tuple[cst.FunctionDef, dict[str, Kind]]] = []
        #: names bound to lists, dicts and sets built here (Python containers)
        self.python_sequences: set[str] = set()
        self._kinds: dict[int, Kind] = {}

    # -- statements -----------------------------------------------------------------------------
    def run(self, body) -> None:
        if isinstance(body, cst.BaseSuite):
            body = body.body
        if isinstance(body, cst.BaseExpression):  # a lambda's body
            self.kind(body)
            return
        for statement in body:
            self.statement(statement)

    def statement(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small_statement(small)
        elif isinstance(node, cst.If):
            self.kind(node.test)
            before = dict(self.state)
            self.run(node.body)
            after_body = self.state
            self.state = before
            if node.orelse is not None:
                if isinstance(node.orelse, cst.If):
                    self.statement(node.orelse)
                else:
                    self.run(node.orelse.body)
            self.state = _merge(after_body, self.state)
        elif isinstance(node, (cst.For, cst.While)):
            if isinstance(node, cst.For):
                iterated = self.kind(node.iter)
                self._bind_iteration(node.target, node.iter, iterated)
            before = dict(self.state)
            for _ in range(2):
                if isinstance(node, cst.While):
                    self.kind(node.test)
                self.run(node.body)
                self.state = _merge(before, self.state)
            if node.orelse is not None:
                self.run(node.orelse.body)
        elif isinstance(node, cst.With):
            for item in node.items:
                self.kind(item.item)
                if item.asname is not None:
                    self.bind(item.asname.name, Kind.NONE)
            self.run(node.body)
        elif isinstance(node, cst.Try) or isinstance(node, getattr(cst, "TryStar", cst.Try)):
            before = dict(self.state)
            self.run(node.body)
            merged = _merge(before, self.state)
            for handler in node.handlers:
                self.state = dict(merged)
                self.run(handler.body)
                merged = _merge(merged, self.state)
            self.state = merged
            if node.orelse is not None:
                self.run(node.orelse.body)
            if node.finalbody is not None:
                self.run(node.finalbody.body)
        elif isinstance(node, cst.FunctionDef):
            for decorator in node.decorators:
                self.kind(decorator.decorator)
            self.closures[id(node)] = dict(self.state)
            self.state[node.name.value] = Kind.NONE
        elif isinstance(node, cst.ClassDef):
            self.state[node.name.value] = Kind.NONE
        elif isinstance(node, cst.Match):
            self.kind(node.subject)
            before, merged = dict(self.state), dict(self.state)
            for case in node.cases:
                self.state = dict(before)
                self.run(case.body)
                merged = _merge(merged, self.state)
            self.state = merged

    def small_statement(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Assign):
            value = self.kind(node.value)
            for target in node.targets:
                self.bind(target.target, value, node.value)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.bind(node.target, self.kind(node.value), node.value)
        elif isinstance(node, cst.AugAssign):
            value = self.kind(node.value)
            if isinstance(node.target, cst.Name):
                current = self.kind(node.target)
                self.state[node.target.value] = max(current, _arith(value))
            else:
                self.kind(node.target)
        elif isinstance(node, (cst.Expr, cst.Return, cst.Assert, cst.Raise, cst.Del)):
            for child in node.children:
                if isinstance(child, cst.BaseExpression):
                    self.kind(child)
            if isinstance(node, cst.Assert) and node.msg is not None:
                self.kind(node.msg)
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            names = node.names if not isinstance(node.names, cst.ImportStar) else []
            for alias in names:
                local = alias.asname.name if alias.asname else alias.name
                if isinstance(local, cst.Name):
                    self.state[local.value] = Kind.NONE

    def bind(self, target: cst.BaseExpression, kind: Kind, value: cst.BaseExpression | None = None) -> None:
        if isinstance(target, cst.Name):
            self.state[target.value] = kind
            if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
                self.python_sequences.add(target.value)
            else:
                self.python_sequences.discard(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            element_kind = _element(kind)
            values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
            for index, element in enumerate(target.elements):
                if values is not None and len(values) == len(target.elements) and not isinstance(element, cst.StarredElement):
                    self.bind(element.value, self.kinds.get(id(values[index].value), Kind.NONE), values[index].value)
                else:
                    self.bind(element.value, element_kind)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, Kind.CONTAINER if kind.traced else Kind.NONE)
        else:  # attribute or subscript targets: evaluate their parts
            self.kind(target)

    def _bind_iteration(self, target: cst.BaseExpression, iterable: cst.BaseExpression, kind: Kind) -> None:
        """`for x in xs`, including `enumerate(xs)`, `zip(xs, ys)` and `d.items()`."""
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and not iterable.args:
            # the keys of a dict are Python values (a pytree's keys are static), only its values are traced
            method = iterable.func.attr.value
            if method == "keys":
                self.bind(target, Kind.NONE)
                return
            if method == "items" and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                self.bind(target.elements[0].value, Kind.NONE)
                self.bind(target.elements[1].value, _element(kind))
                return
        if isinstance(iterable, cst.Call) and isinstance(target, cst.Tuple):
            callee = self.qualified_name(iterable.func)
            args = [self.kinds.get(id(a.value), Kind.NONE) for a in iterable.args]
            if callee == "builtins.enumerate" and len(target.elements) == 2 and args:
                self.bind(target.elements[0].value, Kind.NONE)
                self.bind(target.elements[1].value, _element(args[0]))
                return
            if callee == "builtins.zip" and len(target.elements) == len(args):
                for element, arg in zip(target.elements, args):
                    self.bind(element.value, _element(arg))
                return
        self.bind(target, _element(kind))

    # -- expressions ----------------------------------------------------------------------------
    @property
    def kinds(self) -> dict[int, Kind]:
        """id(expression) -> its kind where it is evaluated."""
        return self._kinds

    def kind(self, node: cst.BaseExpression) -> Kind:
        """The kind of an expression here; records it, and the kinds of the names it reads."""
        result = self._kind(node)
        self._kinds[id(node)] = result
        return result

    def _kind(self, node: cst.BaseExpression) -> Kind:
        if isinstance(node, cst.Name):
            kind = self.state.get(node.value, Kind.NONE)
            self.loads[id(node)] = kind
            return kind
        if isinstance(node, cst.Attribute):
            value = self.kind(node.value)
            if node.attr.value in STATIC_ATTRIBUTES:
                return Kind.NONE
            if value in (Kind.ARRAY, Kind.BOOL, Kind.JAX_ARRAY):
                return Kind.JAX_ARRAY if value == Kind.JAX_ARRAY else Kind.ARRAY
            if value == Kind.PARAM and node.attr.value in ARRAY_ATTRIBUTES:
                return Kind.ARRAY
            return Kind.NONE
        if isinstance(node, cst.Subscript):
            value = self.kind(node.value)
            index = Kind.NONE
            for element in node.slice:
                part = element.slice
                if isinstance(part, cst.Index):
                    index = max(index, self.kind(part.value))
                elif isinstance(part, cst.Slice):
                    for bound in (part.lower, part.upper, part.step):
                        if bound is not None:
                            index = max(index, self.kind(bound))
            if value == Kind.JAX_ARRAY:
                return Kind.ARRAY if index.traced else Kind.JAX_ARRAY
            if value.traced or value == Kind.CONTAINER:
                return Kind.ARRAY
            return Kind.NONE
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, cst.BinaryOperation):
            left, right = self.kind(node.left), self.kind(node.right)
            if left == right == Kind.BOOL and isinstance(node.operator, BITWISE):
                return Kind.BOOL  # `(a > 0) & (b > 0)`: still a boolean array
            return _arith(max(left, right))
        if isinstance(node, cst.UnaryOperation):
            operand = self.kind(node.expression)
            if isinstance(node.operator, cst.Not):
                return Kind.BOOL if operand.traced else Kind.NONE
            if operand == Kind.BOOL and isinstance(node.operator, cst.BitInvert):
                return Kind.BOOL
            return _arith(operand)
        if isinstance(node, cst.Comparison):
            left = self.kind(node.left)
            result = left
            previous = node.left
            for target in node.comparisons:
                right = self.kind(target.comparator)
                if isinstance(target.operator, (cst.Is, cst.IsNot)):
                    return Kind.NONE
                if isinstance(target.operator, (cst.In, cst.NotIn)):
                    result = max(result, right) if right in (Kind.ARRAY, Kind.BOOL) else Kind.NONE
                    continue
                if isinstance(target.operator, (cst.Equal, cst.NotEqual)) and (
                        self._not_an_array(previous) or self._not_an_array(target.comparator)):
                    # `x == None`, `x == "auto"`, `x == _SENTINEL`: an array returns NotImplemented,
                    # so Python falls back to identity and the result is a plain bool
                    if len(node.comparisons) == 1:
                        return Kind.NONE
                    previous = target.comparator
                    continue
                result = max(result, right)
                previous = target.comparator
            return Kind.BOOL if result.traced else (Kind.JAX_ARRAY if result == Kind.JAX_ARRAY else Kind.NONE)
        if isinstance(node, cst.BooleanOperation):
            return max(self.kind(node.left), self.kind(node.right))
        if isinstance(node, cst.IfExp):
            self.kind(node.test)
            return max(self.kind(node.body), self.kind(node.orelse))
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            inner = max((self.kind(e.value) for e in node.elements), default=Kind.NONE)
            return Kind.CONTAINER if inner.traced or inner == Kind.CONTAINER else Kind.NONE
        if isinstance(node, cst.Dict):
            inner = Kind.NONE
            for element in node.elements:
                if isinstance(element, cst.DictElement):
                    self.kind(element.key)
                inner = max(inner, self.kind(element.value))
            return Kind.CONTAINER if inner.traced or inner == Kind.CONTAINER else Kind.NONE
        if isinstance(node, COMPREHENSIONS):
            return self._comprehension(node)
        if isinstance(node, cst.NamedExpr):
            value = self.kind(node.value)
            self.bind(node.target, value)
            return value
        if isinstance(node, cst.Lambda):
            self.closures[id(node)] = dict(self.state)
            return Kind.NONE
        if isinstance(node, (cst.FormattedString, cst.ConcatenatedString)):
            for child in _expressions_in(node):
                self.kind(child)
            return Kind.NONE
        if isinstance(node, (cst.StarredElement, cst.Await)):
            return self.kind(node.value if isinstance(node, cst.StarredElement) else node.expression)
        return Kind.NONE

    def _not_an_array(self, node: cst.BaseExpression) -> bool:
        """None, a string, or a sentinel object: values a JAX array does not compare with elementwise."""
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return True
        if isinstance(node, cst.Attribute):
            return "sentinel" in node.attr.value.lower()
        if not isinstance(node, cst.Name):
            return False
        if node.value == "None":
            return True
        if self.state.get(node.value, Kind.NONE) != Kind.NONE:
            return False
        if "sentinel" in node.value.lower():
            return True
        values = ModuleState.of(self.traced.ctx).module_values(node.value)
        return bool(values) and all(
            isinstance(v, cst.Call) and not v.args and self.qualified_name(v.func) == "builtins.object"
            for v in values)

    def _comprehension(self, node) -> Kind:
        saved = dict(self.state)
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            iterated = self.kind(comp.iter)
            self._bind_iteration(comp.target, comp.iter, iterated)
            for condition in comp.ifs:
                self.kind(condition.test)
            comp = comp.inner_for_in
        if isinstance(node, cst.DictComp):
            inner = max(self.kind(node.key), self.kind(node.value))
        else:
            inner = self.kind(node.elt)
        self.state = saved
        return Kind.CONTAINER if inner.traced or inner == Kind.CONTAINER else Kind.NONE

    def _call(self, node: cst.Call) -> Kind:
        func = node.func
        callee = self.qualified_name(func)
        receiver = self.kind(func.value) if isinstance(func, cst.Attribute) else Kind.NONE
        if not isinstance(func, cst.Attribute):
            self.kind(func)
        args = [self.kind(arg.value) for arg in node.args]
        strongest = max(args, default=Kind.NONE)
        if callee in STATIC_CALLS or callee in CONVERSIONS:
            return Kind.NONE
        if callee is not None and callee.startswith(ARRAY_MODULES):
            if callee in BOOL_FUNCTIONS:
                return Kind.BOOL if strongest.traced or self.abstract else Kind.JAX_ARRAY
            if strongest.traced or self.abstract:
                return Kind.ARRAY
            return Kind.JAX_ARRAY
        if callee is not None and callee.startswith(TREE_FUNCTIONS):
            return Kind.CONTAINER if strongest.traced or strongest == Kind.CONTAINER else Kind.NONE
        if isinstance(func, cst.Attribute) and receiver in (Kind.ARRAY, Kind.BOOL, Kind.PARAM, Kind.JAX_ARRAY):
            method = func.attr.value
            if method in CONCRETIZING_METHODS:
                return Kind.NONE
            if method in ("keys", "values", "items"):
                return Kind.CONTAINER if receiver.traced else Kind.NONE
            if receiver == Kind.JAX_ARRAY:
                return Kind.ARRAY if strongest.traced else Kind.JAX_ARRAY
            if receiver == Kind.PARAM and method in ("get", "pop", "copy", "replace", "_replace"):
                return Kind.PARAM
            return Kind.ARRAY
        target = self.traced.function_called(func, node, self)
        if target is not None:
            self.calls.append((target, self.traced.argument_kinds(target, node, self)))
        return Kind.NONE


def _merge(a: State, b: State) -> State:
    merged = dict(a)
    for name, kind in b.items():
        merged[name] = max(kind, merged.get(name, Kind.NONE))
    return merged


def _arith(kind: Kind) -> Kind:
    """Arithmetic on a traced value gives a traced array; on a JAX array, a JAX array."""
    if kind.traced:
        return Kind.ARRAY
    return Kind.JAX_ARRAY if kind == Kind.JAX_ARRAY else Kind.NONE


def _element(kind: Kind) -> Kind:
    """An element of an iterated or unpacked value."""
    if kind.traced or kind == Kind.CONTAINER:
        return Kind.ARRAY
    return Kind.JAX_ARRAY if kind == Kind.JAX_ARRAY else Kind.NONE


def _expressions_in(node: cst.CSTNode):
    for child in node.children:
        if isinstance(child, cst.FormattedStringExpression):
            yield child.expression
        elif isinstance(child, (cst.FormattedString, cst.ConcatenatedString)):
            yield from _expressions_in(child)
