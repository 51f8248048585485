"""The JAX value domain: what an expression holds — a traced array, a traced pytree, a JAX array,
a Python container of traced leaves, or nothing known — on the generic `dataflow` interpreter.

`ValueFlow` runs over one scope (a function body or the module's top level); the interpreter owns
the control flow (branches, loops to a fixed point, try, return/break/continue, comprehensions,
closures), this module owns JAX's semantics: arithmetic on tracers, `jax.numpy` results, what the
transforms' wrappers return when called (`jax.value_and_grad(f)(x)` is a pair of traced values
under an outer trace), what a helper of the file returns (its summary, given the argument kinds),
lax collectives of Python constants (`lax.psum(1, axis)` is the axis size, a Python int).
Every expression evaluated is recorded with its value, so rules ask for the kind of any expression
of the scope without re-running anything.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Sequence

import libcst as cst

from ..dataflow import FlowInterpreter
from ..semantic.module_state import ModuleState

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile


class Kind(IntEnum):
    """Ordered so that merging two paths keeps the larger (the less certain to be harmless)."""

    NONE = 0
    #: a concrete JAX array outside any trace (`x = jnp.zeros(3)` at module level)
    JAX_ARRAY = 1
    #: a container (tuple, list, dict) holding traced leaves; its truthiness is plain Python
    CONTAINER = 2
    #: a traced pytree of unknown structure that is not a parameter: a field of a traced argument
    #: (`state.dynamic_scale`), the outputs of a transformed function. Its leaves are traced, but
    #: it may be None or a struct, whose truthiness is plain Python: `if field:` is not reported
    TREE = 3
    #: a traced parameter whose structure is unknown (an array or a pytree of arrays)
    PARAM = 4
    #: a traced array
    ARRAY = 5
    #: a traced boolean array (a comparison), usable as a mask
    BOOL = 6

    @property
    def traced(self) -> bool:
        return self >= Kind.TREE

    @property
    def jax_array(self) -> bool:
        return self in (Kind.JAX_ARRAY, Kind.PARAM, Kind.ARRAY, Kind.BOOL)


#: Attributes that are static even on a tracer.
STATIC_ATTRIBUTES = frozenset({
    "shape", "ndim", "dtype", "size", "sharding", "aval", "weak_type", "itemsize", "nbytes", "named_shape",
    "__class__", "__name__", "__qualname__", "__module__",
})
#: Attributes of an array that are arrays again.
ARRAY_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "at"})
#: Calls whose result is static whatever they are given.
#: Functions that only inspect dtypes: their result is static, and naming float64 there requests nothing.
DTYPE_QUERIES = frozenset({
    "jax.numpy.dtype", "jax.numpy.finfo", "jax.numpy.iinfo", "jax.numpy.issubdtype", "jax.numpy.promote_types",
    "jax.numpy.result_type", "jax.numpy.can_cast", "jax.numpy.isdtype", "jax.lax.dtype",
})
STATIC_CALLS = DTYPE_QUERIES | frozenset({
    "builtins.len", "builtins.isinstance", "builtins.issubclass", "builtins.callable", "builtins.type",
    "builtins.id", "builtins.hasattr", "builtins.repr", "builtins.str",
    "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.isscalar",
    "numpy.shape", "numpy.ndim", "numpy.size", "numpy.result_type", "numpy.dtype", "numpy.issubdtype",
    "jax.tree.structure", "jax.tree_util.tree_structure", "jax.eval_shape", "jax.typeof",
    "jax.core.get_aval", "jax.dtypes.issubdtype", "jax.dtypes.result_type", "jax.numpy.iscomplexobj",
    "jax.lax.axis_size", "jax.lax.broadcast_shapes", "jax.numpy.broadcast_shapes",
    "jax.device_count", "jax.local_device_count",
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
#: lax control flow returns the pytree its bodies return, not one array.
LAX_CONTROL_FLOW = frozenset(f"jax.lax.{name}" for name in (
    "scan", "fori_loop", "while_loop", "cond", "switch", "map", "associative_scan", "custom_root",
    "custom_linear_solve", "platform_dependent"))
#: lax comparisons: boolean arrays.
LAX_COMPARISONS = frozenset(f"jax.lax.{name}" for name in ("eq", "ne", "lt", "le", "gt", "ge", "is_finite"))
#: Methods on a traced array whose result is a concrete Python value (JAX203 reports them).
CONCRETIZING_METHODS = frozenset({"item", "tolist", "__index__", "__bool__", "__float__", "__int__"})
TREE_FUNCTIONS = ("jax.tree.", "jax.tree_util.")
#: `leaves, treedef = jax.tree.flatten(tree)`: the leaves are the tree's, the structure is static.
TREE_FLATTENS = frozenset({"jax.tree.flatten", "jax.tree_util.tree_flatten", "jax.tree.flatten_with_path",
                           "jax.tree_util.tree_flatten_with_path"})
#: JAX's tracer class: `isinstance(x, Tracer)` is False exactly where `x` holds a concrete value.
TRACER_CLASSES = frozenset({"jax.core.Tracer", "jax._src.core.Tracer"})
#: Constructors of mutable references, which do support in-place assignment.
REFERENCE_CALLS = frozenset({"jax.new_ref", "jax.ref.new_ref", "jax.experimental.mutable_array"})

#: Bitwise operators, which keep boolean arrays boolean (`mask & other`, `~mask`).
BITWISE = (cst.BitAnd, cst.BitOr, cst.BitXor)

#: Lax collectives: of a Python constant they give a Python constant (`psum(1, axis)` is the axis size).
COLLECTIVES = frozenset({"jax.lax.psum", "jax.lax.pmean", "jax.lax.pmax", "jax.lax.pmin"})
#: Transforms whose wrapper, called, returns arrays: name -> what the call returns
#: ("grad": the gradients, a pytree like the input; "value_and_grad": (value, gradients);
#: "outputs": the wrapped function's outputs, a pytree of arrays).
TRANSFORM_WRAPPERS = {
    "jax.grad": "grad", "jax.value_and_grad": "value_and_grad",
    "jax.jacfwd": "outputs", "jax.jacrev": "outputs", "jax.hessian": "outputs",
    "jax.vmap": "outputs", "jax.pmap": "outputs", "jax.jit": "outputs", "jax.pjit": "outputs",
    "jax.experimental.pjit.pjit": "outputs", "jax.checkpoint": "outputs", "jax.remat": "outputs",
    "jax.ad_checkpoint.checkpoint": "outputs", "jax.shard_map": "outputs",
    "jax.experimental.shard_map.shard_map": "outputs",
}
#: Transforms applied and called at once: name -> the shape of what they return.
DIRECT_TRANSFORMS = {"jax.vjp": "vjp", "jax.jvp": "pair", "jax.linearize": "linearize"}
#: Transforms that trace non-array leaves as static (so attributes of a traced argument may be
#: Python values): equinox's filtered transforms and flax.nnx's.
STATIC_LEAF_TRANSFORMS = ("equinox.filter_", "flax.nnx.")
#: Tuples longer than this are not followed element by element.
MAX_ITEMS = 8
#: Keywords of field declarations that make a dataclass field static (not a pytree leaf).
_STATIC_FIELD_KEYWORDS = {"pytree_node": "False", "static": "True"}


@dataclass(frozen=True)
class Value:
    """One abstract value: its kind, and where known the elements of a tuple or what calling it returns."""

    kind: Kind
    #: the values of a tuple of known length (`jax.value_and_grad(f)(x)` gives two)
    items: "tuple[Value, ...] | None" = None
    #: a function made by a transform (`jax.grad(f)`): what calling it returns (a TRANSFORM_WRAPPERS
    #: value, "vjp_function" or "has_aux" variants)
    wrapper: str | None = None
    #: the truthiness of a Python constant known to be bound here (a parameter that every
    #: transform of the function binds to a literal through `functools.partial`)
    truth: bool | None = None
    #: an object whose class is known to keep every attribute static but these (a flax.nnx module
    #: under a trace): attribute -> its kind
    attributes: "tuple[tuple[str, Kind], ...] | None" = None

    @property
    def traced(self) -> bool:
        return self.kind.traced


PLAIN = {kind: Value(kind) for kind in Kind}
NOTHING = PLAIN[Kind.NONE]

#: A scope's environment: name -> value
State = dict[str, Value]


def as_value(value: "Value | Kind") -> Value:
    return value if isinstance(value, Value) else PLAIN[value]


class CallFacts(Protocol):
    """What a flow asks about the calls it meets (`traced.TracedFunctions`, which runs the flows)."""

    ctx: "SourceFile"

    def function_called(self, func: cst.BaseExpression, call: cst.Call,
                        flow: "ValueFlow") -> "cst.FunctionDef | cst.Lambda | None": ...

    def argument_kinds(self, function: "cst.FunctionDef | cst.Lambda", call: cst.Call,
                       flow: "ValueFlow") -> dict[str, Kind]: ...

    def call_result(self, function: "cst.FunctionDef | cst.Lambda", arguments: dict[str, Kind],
                    caller: "ValueFlow") -> "Value": ...

    def module_wrapper(self, name: str) -> "Value": ...

    def transformed_outputs(self, function: cst.BaseExpression, call: cst.Call,
                            flow: "ValueFlow") -> "Value | None": ...

    def fresh_receiver(self, call: cst.Call) -> bool: ...

    def static_fields(self) -> frozenset[str]: ...


class KindView:
    """id(expression) -> its Kind, read live from a flow's values (what rules have always read)."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[int, Value]) -> None:
        self._values = values

    def get(self, key: int, default: Kind | None = None) -> Kind | None:
        value = self._values.get(key)
        return value.kind if value is not None else default

    def __getitem__(self, key: int) -> Kind:
        return self._values[key].kind

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)


class ValueFlow:
    """The values of one scope (a function body or the module's top level): the JAX value domain,
    run by the generic interpreter."""

    def __init__(self, traced: CallFacts, scope_node: cst.CSTNode, initial: "dict[str, Value | Kind]",
                 abstract: bool, qualified_name: Callable[[cst.BaseExpression], str | None],
                 static_leaves: bool = False) -> None:
        self.traced = traced
        self.scope_node = scope_node
        self.abstract = abstract
        #: non-array leaves of traced arguments are static (equinox / flax.nnx transforms)
        self.static_leaves = static_leaves
        self.qualified_name = qualified_name
        self.initial: State = {name: as_value(value) for name, value in initial.items()}
        self.interpreter: FlowInterpreter[Value] = FlowInterpreter(self)
        #: id(expression) -> its value where it is evaluated
        self.values: dict[int, Value] = self.interpreter.values
        #: nested function -> the state when it was defined (its closure)
        self.closures: dict[int, State] = self.interpreter.closures
        #: calls to functions of this module: (callee, {parameter: kind of the argument})
        #: and the attributes of the receiver, where it is an object whose attributes are known
        self.calls: list[tuple[cst.FunctionDef, dict[str, Kind], "tuple[tuple[str, Kind], ...] | None"]] = []
        #: names bound to lists, dicts and sets built here (Python containers)
        self.python_sequences: set[str] = set()
        #: the state where the scope ends normally (None when no path reaches its end)
        self.state: State | None = dict(self.initial)
        #: the join of the values it returns; None when it returns none
        self.returned: Value | None = None
        self._kinds = KindView(self.values)
        self._module_level = type(scope_node) is cst.Module
        self._globals: dict[str, Value] = {}

    def run(self, body) -> "ValueFlow":
        result = self.interpreter.run(body, self.initial)
        self.state = result.exit
        self.returned = result.returned
        return self

    @property
    def kinds(self) -> KindView:
        """id(expression) -> its kind where it is evaluated."""
        return self._kinds

    @property
    def loads(self) -> KindView:
        """id(Name) -> the kind of the name where it is read."""
        return self._kinds

    # -- the domain: joins and bindings ----------------------------------------------------------
    def join(self, a: Value, b: Value) -> Value:
        if a is b or a == b:
            return a
        kind = max(a.kind, b.kind)
        items = None
        if a.items is not None and b.items is not None and len(a.items) == len(b.items):
            items = tuple(self.join(x, y) for x, y in zip(a.items, b.items))
        wrapper = a.wrapper if a.wrapper == b.wrapper else None
        truth = a.truth if a.truth == b.truth else None
        attributes = a.attributes if a.attributes == b.attributes else None
        if items is None and wrapper is None and truth is None and attributes is None:
            return PLAIN[kind]
        return Value(kind, items, wrapper, truth, attributes)

    def unbound(self, name: str) -> Value:
        """A name from outside the scope: inside a function, a module-level `fast = jax.jit(f)` is
        still known to be a transformed function."""
        if self._module_level:
            return NOTHING
        found = self._globals.get(name)
        if found is None:
            found = self._globals[name] = self.traced.module_wrapper(name)
        return found

    def opaque(self, node: cst.CSTNode) -> Value:
        return NOTHING

    def known_truth(self, value: Value) -> bool | None:
        return value.truth

    def store(self, target: cst.BaseExpression, value: Value, flow: FlowInterpreter[Value]) -> None:
        """`self.m = m` on an object whose attributes are known (one being built by its constructor):
        the attribute now holds the value; other targets are read."""
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)):
            flow.eval(target)
            return
        owner = flow.eval(target.value)
        if owner.attributes is None or owner.kind.traced:
            flow.eval(target)
            return
        attributes = dict(owner.attributes)
        attributes[target.attr.value] = value.kind if value.kind.traced else Kind.NONE
        flow.bind_name(target.value.value, Value(owner.kind, attributes=tuple(sorted(
            (name, kind) for name, kind in attributes.items() if kind != Kind.NONE))), None)

    def function(self, node: cst.FunctionDef | cst.Lambda) -> Value:
        return NOTHING

    def narrowed(self, test: cst.BaseExpression, holds: bool, flow: FlowInterpreter[Value]) -> dict[str, Value] | None:
        """`if not isinstance(x, jax.core.Tracer):`, `hasattr(x, "shape")` — in the branch where
        `x` is not a tracer (has no shape) it holds a concrete value, whatever it held before."""
        while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            test, holds = test.expression, not holds
        if holds or not (type(test) is cst.Call and len(test.args) == 2 and type(test.args[0].value) is cst.Name):
            return None
        checked, name = self.qualified_name(test.func), test.args[0].value.value
        if checked == "builtins.isinstance" and self.qualified_name(test.args[1].value) in TRACER_CLASSES:
            return {name: NOTHING}
        # `x.shape if hasattr(x, "shape") else np.asarray(x).shape`: every tracer has a shape
        if checked == "builtins.hasattr" and isinstance(test.args[1].value, cst.SimpleString) \
                and test.args[1].value.evaluated_value in ("shape", "dtype", "ndim"):
            return {name: NOTHING}
        return None

    def assigned(self, name: str, value: Value, source: cst.BaseExpression | None) -> None:
        if type(source) in (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp):
            self.python_sequences.add(name)
        else:
            self.python_sequences.discard(name)

    def augmented(self, current: Value, operand: Value, operator: cst.BaseAugOp) -> Value:
        return PLAIN[max(current.kind, _arith(operand.kind))]

    def unpack(self, value: Value, count: int, starred: int | None) -> list[Value]:
        if value.items is not None and starred is None and len(value.items) == count:
            return list(value.items)
        element = PLAIN[_element(value.kind)]
        parts = [element] * count
        if starred is not None:
            parts[starred] = PLAIN[Kind.CONTAINER if value.kind.traced else Kind.NONE]
        return parts

    def comprehension(self, node: cst.BaseExpression, elements: Sequence[Value]) -> Value:
        inner = max((e.kind for e in elements), default=Kind.NONE)
        return PLAIN[Kind.CONTAINER if inner.traced or inner == Kind.CONTAINER else Kind.NONE]

    def iterate(self, target: cst.BaseExpression, iterable: cst.BaseExpression, value: Value,
                flow: FlowInterpreter[Value]) -> None:
        """`for x in xs`, including `enumerate(xs)`, `zip(xs, ys)` and `d.items()`."""
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and not iterable.args:
            # the keys of a dict are Python values (a pytree's keys are static), only its values are traced
            method = iterable.func.attr.value
            if method == "keys":
                flow.bind(target, NOTHING)
                return
            if method == "items" and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                flow.bind(target.elements[0].value, NOTHING)
                flow.bind(target.elements[1].value, PLAIN[_element(value.kind)])
                return
        if isinstance(iterable, cst.Call) and isinstance(target, cst.Tuple):
            callee = self.qualified_name(iterable.func)
            args = [self.values.get(id(a.value), NOTHING).kind for a in iterable.args]
            if callee == "builtins.enumerate" and len(target.elements) == 2 and args:
                flow.bind(target.elements[0].value, NOTHING)
                flow.bind(target.elements[1].value, PLAIN[_element(args[0])])
                return
            if callee == "builtins.zip" and len(target.elements) == len(args):
                for element, arg in zip(target.elements, args):
                    flow.bind(element.value, PLAIN[_element(arg)])
                return
        flow.bind(target, PLAIN[_element(value.kind)])

    # -- the domain: expressions ----------------------------------------------------------------
    def evaluate(self, node: cst.BaseExpression, flow: FlowInterpreter[Value]) -> Value:
        kind = type(node)
        if kind is cst.Attribute:
            owner = flow.eval(node.value)
            if owner.attributes is not None:
                return PLAIN[dict(owner.attributes).get(node.attr.value, Kind.NONE)]
            return PLAIN[self._attribute(node, owner.kind)]
        if kind is cst.Call:
            return self._call(node, flow)
        if kind is cst.Subscript:
            return self._subscript(node, flow)
        if kind is cst.BinaryOperation:
            left, right = flow.eval(node.left).kind, flow.eval(node.right).kind
            if left == right == Kind.BOOL and isinstance(node.operator, BITWISE):
                return PLAIN[Kind.BOOL]  # `(a > 0) & (b > 0)`: still a boolean array
            return PLAIN[_arith(max(left, right))]
        if kind is cst.Comparison:
            return PLAIN[self._comparison(node, flow)]
        if kind is cst.UnaryOperation:
            operand = flow.eval(node.expression).kind
            if type(node.operator) is cst.Not:  # `not tree` may be Python's (None, a struct)
                return PLAIN[Kind.BOOL if operand.traced and operand != Kind.TREE else Kind.NONE]
            if operand == Kind.BOOL and isinstance(node.operator, cst.BitInvert):
                return PLAIN[Kind.BOOL]
            return PLAIN[_arith(operand)]
        if kind is cst.BooleanOperation:
            return self._boolean(node, flow)
        if kind is cst.IfExp:
            flow.eval(node.test)
            body, orelse = flow.alternatives(node.body, node.orelse, test=node.test)
            return self.join(body, orelse)
        if kind is cst.Tuple or kind is cst.List or kind is cst.Set:
            elements = [flow.eval(e.value) for e in node.elements]
            inner = max((e.kind for e in elements), default=Kind.NONE)
            container = Kind.CONTAINER if inner.traced or inner == Kind.CONTAINER else Kind.NONE
            if kind is cst.Tuple and 1 < len(elements) <= MAX_ITEMS and any(e is not NOTHING for e in elements) \
                    and not any(type(e) is cst.StarredElement for e in node.elements):
                return Value(container, tuple(elements))  # `return loss, aux`: each keeps its own value
            return PLAIN[container]
        if kind is cst.Dict:
            inner = Kind.NONE
            for element in node.elements:
                if isinstance(element, cst.DictElement):
                    flow.eval(element.key)
                inner = max(inner, flow.eval(element.value).kind)
            return PLAIN[Kind.CONTAINER if inner.traced or inner == Kind.CONTAINER else Kind.NONE]
        if kind is cst.FormattedString or kind is cst.ConcatenatedString:
            for child in _expressions_in(node):
                flow.eval(child)
            return NOTHING
        if kind is cst.StarredElement:
            return flow.eval(node.value)
        if kind is cst.Await:
            return flow.eval(node.expression)
        return NOTHING

    def _attribute(self, node: cst.Attribute, value: Kind) -> Kind:
        attribute = node.attr.value
        if attribute in STATIC_ATTRIBUTES:
            return Kind.NONE
        if value in (Kind.ARRAY, Kind.BOOL, Kind.JAX_ARRAY):
            return Kind.JAX_ARRAY if value == Kind.JAX_ARRAY else Kind.ARRAY
        if value == Kind.PARAM or value == Kind.TREE:
            if attribute in ARRAY_ATTRIBUTES:
                return Kind.ARRAY
            # a field of a traced pytree (a NamedTuple or dataclass state) is traced too, unless the
            # transform keeps non-array leaves static or the file declares such a field static
            if not self.static_leaves and attribute not in self.traced.static_fields():
                return Kind.TREE
        return Kind.NONE

    def _subscript(self, node: cst.Subscript, flow: FlowInterpreter[Value]) -> Value:
        value = flow.eval(node.value)
        index = Kind.NONE
        constant: int | None = None
        for element in node.slice:
            part = element.slice
            if isinstance(part, cst.Index):
                index = max(index, flow.eval(part.value).kind)
                if len(node.slice) == 1 and type(part.value) is cst.Integer:
                    constant = int(part.value.value, 0)
            elif isinstance(part, cst.Slice):
                for bound in (part.lower, part.upper, part.step):
                    if bound is not None:
                        index = max(index, flow.eval(bound).kind)
        if value.items is not None and constant is not None and -len(value.items) <= constant < len(value.items):
            return value.items[constant]
        if value.kind == Kind.JAX_ARRAY:
            return PLAIN[Kind.ARRAY if index.traced else Kind.JAX_ARRAY]
        if value.kind == Kind.TREE:
            return value  # a part of a pytree of unknown structure: a pytree of unknown structure
        if value.kind.traced or value.kind == Kind.CONTAINER:
            return PLAIN[Kind.ARRAY]
        return NOTHING

    def _comparison(self, node: cst.Comparison, flow: FlowInterpreter[Value]) -> Kind:
        left = flow.eval(node.left).kind
        result = left
        previous = node.left
        for target in node.comparisons:
            right = flow.eval(target.comparator).kind
            if type(target.operator) in (cst.Is, cst.IsNot):
                for rest in node.comparisons[node.comparisons.index(target) + 1:]:
                    flow.eval(rest.comparator)
                return Kind.NONE
            if type(target.operator) in (cst.In, cst.NotIn):
                result = max(result, right) if right in (Kind.ARRAY, Kind.BOOL) else Kind.NONE
                continue
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)) and (
                    self.not_an_array(previous) or self.not_an_array(target.comparator)):
                # `x == None`, `x == "auto"`, `x == _SENTINEL`: an array returns NotImplemented,
                # so Python falls back to identity and the result is a plain bool
                if len(node.comparisons) == 1:
                    return Kind.NONE
                previous = target.comparator
                continue
            result = max(result, right)
            previous = target.comparator
        return Kind.BOOL if result.traced else (Kind.JAX_ARRAY if result == Kind.JAX_ARRAY else Kind.NONE)

    def _boolean(self, node: cst.BooleanOperation, flow: FlowInterpreter[Value]) -> Value:
        left = flow.eval(node.left)
        right = flow.eval(node.right)
        if left.kind == Kind.PARAM and isinstance(node.operator, cst.Or) and _empty_container(node.right, self):
            # `extra or {}`: the idiom of an optional dict or list argument; its truthiness is Python's
            container = PLAIN[Kind.CONTAINER]
            flow.values[id(node.left)] = container
            if isinstance(node.left, cst.Name):
                flow.bind_name(node.left.value, container, None)
            return container
        return self.join(left, right)

    def not_an_array(self, node: cst.BaseExpression) -> bool:
        """None, a string, or a sentinel object: values a JAX array does not compare with elementwise."""
        if type(node) in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
            return True
        if isinstance(node, cst.Attribute):
            return "sentinel" in node.attr.value.lower()
        if not isinstance(node, cst.Name):
            return False
        if node.value == "None":
            return True
        if self.values.get(id(node), NOTHING).kind != Kind.NONE:
            return False
        if "sentinel" in node.value.lower():
            return True
        values = ModuleState.of(self.traced.ctx).module_values(node.value)
        return bool(values) and all(
            isinstance(v, cst.Call) and not v.args and self.qualified_name(v.func) == "builtins.object"
            for v in values)

    # -- calls ----------------------------------------------------------------------------------
    def _call(self, node: cst.Call, flow: FlowInterpreter[Value]) -> Value:
        func = node.func
        callee = self.qualified_name(func)
        receiver = flow.eval(func.value) if type(func) is cst.Attribute else None
        called = flow.eval(func) if receiver is None else None
        args = [flow.eval(arg.value) for arg in node.args]
        strongest = max((a.kind for a in args), default=Kind.NONE)
        if callee in STATIC_CALLS or callee in CONVERSIONS:
            return NOTHING
        if callee in COLLECTIVES and node.args and _python_constant(node.args[0].value):
            return NOTHING  # `lax.psum(1, axis)`: the axis size, a Python int
        if callee in TRANSFORM_WRAPPERS:
            return Value(Kind.NONE, wrapper=wrapper_of(callee, node, self.qualified_name))
        if callee in DIRECT_TRANSFORMS:
            return self._direct_transform(DIRECT_TRANSFORMS[callee], node, strongest)
        if called is not None and called.wrapper is not None:
            if called.wrapper == "outputs" and isinstance(func, cst.Call) and func.args and self._traced_result(strongest):
                # `jax.jit(f)(x)` under a trace: what `f` of the module returns, traced
                returned = self.traced.transformed_outputs(func.args[0].value, node, self)
                if returned is not None:
                    return returned
            return self.wrapper_result(called.wrapper, strongest)
        if callee is not None and callee.startswith(ARRAY_MODULES):
            if callee in BOOL_FUNCTIONS:
                return PLAIN[Kind.BOOL if strongest.traced or self.abstract else Kind.JAX_ARRAY]
            if strongest.traced or self.abstract:
                return PLAIN[Kind.ARRAY]
            return PLAIN[Kind.JAX_ARRAY]
        if callee is not None and callee.startswith(TREE_FUNCTIONS):
            leaves = PLAIN[Kind.CONTAINER if strongest.traced or strongest == Kind.CONTAINER else Kind.NONE]
            if callee in TREE_FLATTENS:
                return Value(leaves.kind, items=(leaves, NOTHING))  # the tree's structure is static
            return leaves
        if receiver is not None and receiver.kind in (Kind.ARRAY, Kind.BOOL, Kind.PARAM, Kind.TREE, Kind.JAX_ARRAY):
            method = func.attr.value
            if method in CONCRETIZING_METHODS:
                return NOTHING
            if method in ("keys", "values", "items"):
                return PLAIN[Kind.CONTAINER if receiver.kind.traced else Kind.NONE]
            if receiver.kind == Kind.JAX_ARRAY:
                return PLAIN[Kind.ARRAY if strongest.traced else Kind.JAX_ARRAY]
            if receiver.kind in (Kind.PARAM, Kind.TREE) and method in ("get", "pop", "copy", "replace", "_replace"):
                return PLAIN[receiver.kind]
            return PLAIN[Kind.ARRAY]
        target = self.traced.function_called(func, node, self)
        if target is not None:
            arguments = self.traced.argument_kinds(target, node, self)
            if receiver is not None and isinstance(func.value, cst.Name):
                known = receiver.attributes
            else:
                known = () if self.traced.fresh_receiver(node) else None
            self.calls.append((target, arguments, known))
            return self.traced.call_result(target, arguments, self)
        return NOTHING

    def _traced_result(self, strongest: Kind) -> bool:
        """Whether a transform's outputs are tracers here: under an abstract trace they always are
        (even for static inputs); elsewhere only when an input is traced (an outer `grad`)."""
        return self.abstract or strongest.traced

    def wrapper_result(self, wrapper: str, strongest: Kind) -> Value:
        """What calling a transformed function returns."""
        traced = self._traced_result(strongest)
        # a pytree of unknown structure: traced, or (outside a trace) nothing known
        tree = PLAIN[Kind.TREE if traced else Kind.NONE]
        array = PLAIN[Kind.ARRAY if traced else Kind.JAX_ARRAY]
        if wrapper == "grad":
            return tree
        if wrapper == "grad+aux":
            return _pair(tree, tree, traced)
        if wrapper == "value_and_grad":
            return _pair(array, tree, traced)
        if wrapper == "value_and_grad+aux":
            return _pair(_pair(array, tree, traced), tree, traced)
        if wrapper == "vjp_function":  # a tuple of cotangents, one per primal
            return PLAIN[Kind.CONTAINER if traced else Kind.NONE]
        if wrapper == "array_outputs":
            return array
        if wrapper == "bool_outputs":
            return PLAIN[Kind.BOOL if traced else Kind.JAX_ARRAY]
        return tree

    def _direct_transform(self, shape: str, node: cst.Call, strongest: Kind) -> Value:
        traced = self._traced_result(strongest)
        tree = PLAIN[Kind.TREE if traced else Kind.NONE]
        has_aux = _keyword_true(node, "has_aux")
        if shape == "vjp":
            function = Value(Kind.NONE, wrapper="vjp_function")
            parts = (tree, function, tree) if has_aux else (tree, function)
        elif shape == "linearize":
            parts = (tree, Value(Kind.NONE, wrapper="outputs"))
        else:
            parts = (tree, tree)
        return Value(Kind.CONTAINER if traced else Kind.NONE, parts)


def _pair(first: Value, second: Value, traced: bool) -> Value:
    return Value(Kind.CONTAINER if traced else Kind.NONE, (first, second))


def wrapper_of(callee: str, node: cst.Call,
                qualified_name: Callable[[cst.BaseExpression], str | None]) -> str:
    """What calling the function `node` (a transform applied to a function) makes returns."""
    wrapper = TRANSFORM_WRAPPERS[callee]
    if wrapper in ("grad", "value_and_grad") and _keyword_true(node, "has_aux"):
        return wrapper + "+aux"
    if wrapper == "outputs" and node.args and node.args[0].keyword is None:
        # `jax.jit(lax.gt)`, `jax.vmap(jnp.dot)`: a library function of arrays returns an array
        wrapped = qualified_name(node.args[0].value)
        if wrapped is not None and wrapped.startswith(ARRAY_MODULES) and wrapped not in STATIC_CALLS \
                and wrapped not in LAX_CONTROL_FLOW:
            return "bool_outputs" if wrapped in BOOL_FUNCTIONS or wrapped in LAX_COMPARISONS else "array_outputs"
    return wrapper


def _keyword_true(node: cst.Call, keyword: str) -> bool:
    return any(a.keyword is not None and a.keyword.value == keyword and isinstance(a.value, cst.Name)
               and a.value.value == "True" for a in node.args)


def _python_constant(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _empty_container(node: cst.BaseExpression, flow: ValueFlow) -> bool:
    """`{}`, `[]`, `()`, `dict()`, `list()`, `tuple()`."""
    if isinstance(node, (cst.Dict, cst.List, cst.Tuple)):
        return not node.elements
    return isinstance(node, cst.Call) and not node.args and flow.qualified_name(node.func) in (
        "builtins.dict", "builtins.list", "builtins.tuple")


def static_field_names(module: cst.Module) -> frozenset[str]:
    """Fields that classes of the module declare static (`struct.field(pytree_node=False)`,
    `eqx.field(static=True)`): not pytree leaves, so never traced."""
    found: set[str] = set()
    for statement in _class_statements(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            value = getattr(small, "value", None)
            if not isinstance(small, (cst.AnnAssign, cst.Assign)) or not isinstance(value, cst.Call):
                continue
            if not any(_declares_static(a) for a in value.args):
                continue
            targets = [small.target] if isinstance(small, cst.AnnAssign) else [t.target for t in small.targets]
            found.update(t.value for t in targets if isinstance(t, cst.Name))
    return frozenset(found)


def _declares_static(arg: cst.Arg) -> bool:
    """`pytree_node=False`, `static=True`, `metadata={"static": True}` / `metadata=dict(static=True)`."""
    if arg.keyword is None:
        return False
    keyword, value = arg.keyword.value, arg.value
    if isinstance(value, cst.Name):
        return _STATIC_FIELD_KEYWORDS.get(keyword) == value.value
    if keyword != "metadata":
        return False
    if isinstance(value, cst.Dict):
        return any(isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                   and e.key.evaluated_value == "static" and isinstance(e.value, cst.Name)
                   and e.value.value == "True" for e in value.elements)
    if isinstance(value, cst.Call):
        return any(_declares_static(a) for a in value.args)
    return False


def _class_statements(body: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """The statements of the module's classes (and of classes nested in them)."""
    for statement in body:
        if type(statement) is cst.ClassDef:
            for inner in statement.body.body:
                yield inner
                if isinstance(inner, cst.ClassDef):
                    yield from _class_statements([inner])
        elif type(statement) is cst.If:  # `if TYPE_CHECKING:` / version guards
            yield from _class_statements(statement.body.body)


def _arith(kind: Kind) -> Kind:
    """Arithmetic on a traced value gives a traced array; on a JAX array, a JAX array."""
    if kind.traced:
        return Kind.ARRAY
    return Kind.JAX_ARRAY if kind == Kind.JAX_ARRAY else Kind.NONE


def _element(kind: Kind) -> Kind:
    """An element of an iterated or unpacked value."""
    if kind == Kind.TREE:
        return Kind.TREE
    if kind.traced or kind == Kind.CONTAINER:
        return Kind.ARRAY
    return Kind.JAX_ARRAY if kind == Kind.JAX_ARRAY else Kind.NONE


def _expressions_in(node: cst.CSTNode):
    for child in node.children:
        if isinstance(child, cst.FormattedStringExpression):
            yield child.expression
        elif isinstance(child, (cst.FormattedString, cst.ConcatenatedString)):
            yield from _expressions_in(child)
