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

from typing import TYPE_CHECKING, Callable, Protocol, Sequence

import libcst as cst

from ...dataflow import FlowInterpreter
from ...semantic.module_state import ModuleState
from ...syntax.walk import written_number
from ..transforms import NUMPYRO_SAMPLE
from .lattice import BOTTOM, MAY, MUST, NO, OF_KIND, OTHER_ATTRIBUTES, STATIC, UNKNOWN, Kind, Value, join, of_kind
from .tables import (AT_UPDATES, ARRAY_ATTRIBUTES, ARRAY_MODULES, BITWISE, BOOL_FUNCTIONS, COLLECTIVES, CONCRETIZING_METHODS,
                     CONVERSIONS, DIRECT_TRANSFORMS, LAX_COMPARISONS, LAX_CONTROL_FLOW, MAX_ITEMS, STATIC_ATTRIBUTES,
                     STATIC_CALLS, TRACER_CLASSES, TRANSFORM_WRAPPERS, TREE_FLATTENS, TREE_FUNCTIONS)

if TYPE_CHECKING:
    from ...semantic.source_file import SourceFile

PLAIN = OF_KIND
NOTHING = UNKNOWN
#: Names of Python's constants: static wherever they are read.
_PYTHON_CONSTANTS = frozenset({"None", "True", "False", "Ellipsis", "NotImplemented"})
#: What a name holds in the branch where a test says it is not a tracer: a concrete value.
NOT_TRACED = Value(NO, MAY, MAY, NO, MAY)
#: Literal expressions: static values.
_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)



#: A scope's environment: name -> value
State = dict[str, Value]


def as_value(value: "Value | Kind") -> Value:
    return value if isinstance(value, Value) else OF_KIND[value]


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

    def calls_instance(self, call: cst.Call) -> bool: ...

    def samples_latent(self, function: cst.CSTNode) -> bool: ...


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

    #: a nested function's values start from its closure (`flow.closures`)
    reads_closures = True

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
        return join(a, b)

    def absent(self, name: str) -> Value:
        """A name some path has not bound yet, where paths meet: the paths that bound it decide."""
        return BOTTOM

    def unbound(self, name: str) -> Value:
        """A name from outside the scope: inside a function, a module-level `fast = jax.jit(f)` is
        still known to be a transformed function."""
        if name in _PYTHON_CONSTANTS:
            return STATIC
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
        flow.bind_name(target.value.value, of_kind(owner.kind, attributes=tuple(sorted(
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
            return {name: NOT_TRACED}
        # `x.shape if hasattr(x, "shape") else np.asarray(x).shape`: every tracer has a shape
        if checked == "builtins.hasattr" and isinstance(test.args[1].value, cst.SimpleString) \
                and test.args[1].value.evaluated_value in ("shape", "dtype", "ndim"):
            return {name: NOT_TRACED}
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
                flow.bind(target, STATIC)
                return
            if method == "items" and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                flow.bind(target.elements[0].value, STATIC)
                flow.bind(target.elements[1].value, PLAIN[_element(value.kind)])
                return
        if isinstance(iterable, cst.Call) and isinstance(target, cst.Tuple):
            callee = self.qualified_name(iterable.func)
            args = [self.values.get(id(a.value), NOTHING).kind for a in iterable.args]
            if callee == "builtins.enumerate" and len(target.elements) == 2 and args:
                flow.bind(target.elements[0].value, STATIC)
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
            if owner.attributes is not None:  # an object whose class says which attributes are data
                name = node.attr.value
                known = dict(owner.attributes)
                found = known.get(name, known.get(OTHER_ATTRIBUTES))
                if found is None:
                    return STATIC
                # `model.scale.value`: entries `scale.value` say what the attribute's own attributes are
                inner = tuple((key[len(name) + 1:], kind) for key, kind in owner.attributes
                              if key.startswith(name + "."))
                return of_kind(found, attributes=inner) if inner else PLAIN[found]
            if node.attr.value in STATIC_ATTRIBUTES:
                return STATIC
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
            return self._comparison(node, flow)
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
            if kind is cst.Tuple and 1 < len(elements) <= MAX_ITEMS and any(e is not NOTHING and e is not STATIC for e in elements) \
                    and not any(type(e) is cst.StarredElement for e in node.elements):
                return of_kind(container, tuple(elements))  # `return loss, aux`: each keeps its own value
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
            return STATIC  # a `str`, whatever it shows
        if kind is cst.StarredElement:
            return flow.eval(node.value)
        if kind is cst.Await:
            return flow.eval(node.expression)
        if kind in _LITERALS:
            return STATIC
        return NOTHING

    def _attribute(self, node: cst.Attribute, value: Kind) -> Kind:
        """An attribute of a value whose class is not known. Only an array's own array-valued
        attributes (`x.T`, `x.real`) are known to be arrays: any other attribute of a value taken
        for an array is a method, or shows it is not an array after all. A traced pytree of unknown
        class (a parameter, a field of one) may hold the attribute as a leaf or as static data (an
        xarray Dataset's `dims`, a dataclass field declared static in another module): not known."""
        if node.attr.value in ARRAY_ATTRIBUTES:
            if value == Kind.JAX_ARRAY:
                return Kind.JAX_ARRAY
            if value.traced:
                return Kind.ARRAY
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
        if value.kind == Kind.PARAM and _string_key(node):
            # an array cannot be indexed with a string: the parameter is a mapping (a dict pytree),
            # and its entry a pytree of unknown structure (a leaf, a sub-dict, None), not an array
            return PLAIN[Kind.TREE]
        if value.kind.traced or value.kind == Kind.CONTAINER:
            return PLAIN[Kind.ARRAY]
        return NOTHING

    def _comparison(self, node: cst.Comparison, flow: FlowInterpreter[Value]) -> Value:
        left = flow.eval(node.left).kind
        result = left
        previous = node.left
        for target in node.comparisons:
            right = flow.eval(target.comparator).kind
            if type(target.operator) in (cst.Is, cst.IsNot):
                for rest in node.comparisons[node.comparisons.index(target) + 1:]:
                    flow.eval(rest.comparator)
                return STATIC
            if type(target.operator) in (cst.In, cst.NotIn):
                result = max(result, right) if right in (Kind.ARRAY, Kind.BOOL) else Kind.NONE
                continue
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)) and (
                    self.not_an_array(previous) or self.not_an_array(target.comparator)):
                # `x == None`, `x == "auto"`, `x == _SENTINEL`: an array returns NotImplemented,
                # so Python falls back to identity and the result is a plain bool
                if len(node.comparisons) == 1:
                    return STATIC
                previous = target.comparator
                continue
            result = max(result, right)
            previous = target.comparator
        return PLAIN[Kind.BOOL if result.traced else (Kind.JAX_ARRAY if result == Kind.JAX_ARRAY else Kind.NONE)]

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
            return STATIC
        if callee in COLLECTIVES and node.args and written_number(node.args[0].value):
            return STATIC  # `lax.psum(1, axis)`: the axis size, a Python int
        if callee in TRANSFORM_WRAPPERS:
            return of_kind(Kind.NONE, wrapper=wrapper_of(callee, node, self.qualified_name))
        if callee in NUMPYRO_SAMPLE and not any(a.keyword is not None and a.keyword.value == "obs" for a in node.args) \
                and self.traced.samples_latent(self.scope_node):
            return PLAIN[Kind.ARRAY]  # the value the inference algorithm explores, a tracer
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
                return of_kind(leaves.kind, items=(leaves, STATIC))  # the tree's structure is static
            return leaves
        if receiver is not None and func.attr.value in AT_UPDATES and type(func.value) is cst.Subscript \
                and type(func.value.value) is cst.Attribute and func.value.value.attr.value == "at":
            # `x.at[i].set(v)`: only JAX arrays have this indexer and these methods; the result is a
            # new array (traced where `x` or `v` is), `x` itself unchanged
            traced = MUST if strongest.traced or receiver.traced is MUST else (MAY if self.abstract else NO)
            return Value(traced, MUST, NO, traced, MAY, at_update=True)
        target = self.traced.function_called(func, node, self)
        # a traced pytree's call the resolver follows to a function of the module (a method of its
        # class, `state.apply_fn(...)` to the model's `__call__`): that function's result
        followed = target is not None and receiver is not None and receiver.kind in (Kind.PARAM, Kind.TREE)
        if receiver is not None and not followed \
                and receiver.kind in (Kind.ARRAY, Kind.BOOL, Kind.PARAM, Kind.TREE, Kind.JAX_ARRAY):
            method = func.attr.value
            if method in CONCRETIZING_METHODS:
                return STATIC
            if method in ("keys", "values", "items"):
                return PLAIN[Kind.CONTAINER if receiver.kind.traced else Kind.NONE]
            if receiver.kind == Kind.JAX_ARRAY:
                return PLAIN[Kind.ARRAY if strongest.traced else Kind.JAX_ARRAY]
            if receiver.kind in (Kind.PARAM, Kind.TREE) and method in ("get", "pop", "copy", "replace", "_replace"):
                return PLAIN[receiver.kind]
            return PLAIN[Kind.ARRAY]
        if target is not None:
            arguments = self.traced.argument_kinds(target, node, self)
            if receiver is not None and isinstance(func.value, cst.Name) and not followed:
                known = receiver.attributes
            elif type(func) is cst.Name and called is not None and self.traced.calls_instance(node):
                known = called.attributes  # `model(x)`: `__call__` of the object the name holds
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
            function = of_kind(Kind.NONE, wrapper="vjp_function")
            parts = (tree, function, tree) if has_aux else (tree, function)
        elif shape == "linearize":
            parts = (tree, of_kind(Kind.NONE, wrapper="outputs"))
        else:
            parts = (tree, tree)
        return of_kind(Kind.CONTAINER if traced else Kind.NONE, parts)


def _pair(first: Value, second: Value, traced: bool) -> Value:
    return of_kind(Kind.CONTAINER if traced else Kind.NONE, (first, second))


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


def _string_key(node: cst.Subscript) -> bool:
    """`batch["observations"]`: one index, a string."""
    return len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and type(
        node.slice[0].slice.value) in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def _empty_container(node: cst.BaseExpression, flow: ValueFlow) -> bool:
    """`{}`, `[]`, `()`, `dict()`, `list()`, `tuple()`."""
    if isinstance(node, (cst.Dict, cst.List, cst.Tuple)):
        return not node.elements
    return isinstance(node, cst.Call) and not node.args and flow.qualified_name(node.func) in (
        "builtins.dict", "builtins.list", "builtins.tuple")


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
