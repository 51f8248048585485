"""The JAX value lattice: what the analysis knows about one value, fact by fact, with how sure it is.

A `Value` is a product of small lattices (`dataflow.product`), one per field:

  traced    Certainty  the value is a tracer, or a pytree JAX handed in whose leaves are tracers
  array     Certainty  the value is a JAX array (a tracer or a concrete one)
  static    Certainty  the value is a plain Python value, fixed while JAX traces (no array in it)
  holds     Certainty  the value holds traced data: it is traced, or a Python container of tracers
  mask      Certainty  the value is a boolean array (usable as a mask)
  form      Form       its structure, where the truthiness or indexing of it is Python's
  items     tuple      the elements of a tuple of known length
  wrapper   str        a function made by a transform: what calling it returns
  truth     bool       the truthiness of a Python constant known to be bound here
  attributes tuple     an object whose attributes are known: attribute -> its Kind (`OTHER_ATTRIBUTES`:
                       the others'; without it, the others are static)
  origin    Provenance where the fact came from, to explain a finding
  at_update bool       the new array an `x.at[...].set(...)` (or `add`, `multiply`, ...) returns

Each `Certainty` is MUST (on every path, certainly), NO (on no path) or MAY (on some paths, or not
known). Two paths that disagree join to MAY: a value traced on one path and static on the other is
traced MAY. The flat fields join to "not known" (None, `Form.ANY`) unless both paths agree.

Unknown is not static: `UNKNOWN` (an opaque call's result, a global) is MAY in all of traced, array
and static, while `STATIC` (a literal, a shape, `len(x)`) is static MUST, traced NO. Rules report
only on MUST: a "may be traced" never makes a finding.

`BOTTOM` is the value of a name on a path that has not bound it yet, where paths meet: it joins to
the other side unchanged (reading the name on that path would raise NameError, so only the paths
that bound it matter).

`Kind` is the older, one-dimensional view of a value (NONE < JAX_ARRAY < CONTAINER < TREE < PARAM <
ARRAY < BOOL), derived from the fields (`Value.kind`), kept for the summaries that still key on it:
the parameter kinds of traced functions and the signatures of helper summaries.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum, IntEnum

from ...dataflow.product import Product, component, equal_or


class Kind(IntEnum):
    """The older view of a value, ordered from the least to the most certain to be a tracer."""

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


class Certainty(Enum):
    """How sure a fact is: on every path (MUST), on none (NO), or on some / not known (MAY)."""

    NO = 0
    MAY = 1
    MUST = 2

    def join(self, other: "Certainty") -> "Certainty":
        return self if self is other else MAY


NO, MAY, MUST = Certainty.NO, Certainty.MAY, Certainty.MUST


def _join_certainty(a: Certainty, b: Certainty) -> Certainty:
    return a if a is b else MAY


def any_of(*certainties: Certainty) -> Certainty:
    """The certainty that at least one of the facts holds (a computation from several operands is
    traced when one of them is): MUST if one is MUST, NO if all are NO, else MAY."""
    if MUST in certainties:
        return MUST
    return NO if all(c is NO for c in certainties) else MAY


class Form(Enum):
    """What Python sees of a value's structure, where it is not just an array."""

    #: nothing known beyond the certainties
    ANY = 0
    #: a tuple, list or dict built by the code: its truthiness, length and indexing are Python's
    CONTAINER = 1
    #: a pytree of unknown structure (a field of a traced argument, a transform's outputs): it may
    #: be None or a struct, whose truthiness is Python's
    TREE = 2


class Source(Enum):
    """Where a fact about a value came from."""

    #: a parameter of a traced function (`detail`: its name)
    PARAMETER = "parameter"
    #: a call of a JAX array function (`detail`: its dotted name)
    JAX_CALL = "jax call"
    #: calling a function made by a transform (`detail`: what the wrapper returns)
    TRANSFORM_OUTPUT = "transform output"
    #: the summary of a function of the module or the project (`detail`: its name)
    SUMMARY = "summary"
    #: arithmetic, indexing or a comparison of a value with one of these origins
    COMPUTED = "computed"


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a value's facts came from: enough to say in a finding why a value is traced."""

    source: Source
    detail: str = ""

    def describe(self) -> str:
        return f"{self.source.value} `{self.detail}`" if self.detail else self.source.value


def _encode_certainty(value: Certainty) -> int:
    return value.value


def _encode_enum(value: Enum) -> object:
    return value.value


def _encode_items(items: "tuple[Value, ...]") -> list:
    return [VALUES.to_json(item) for item in items]


def _decode_items(data: list) -> "tuple[Value, ...]":
    return tuple(VALUES.from_json(item) for item in data)


def _join_items(a: "tuple[Value, ...] | None", b: "tuple[Value, ...] | None") -> "tuple[Value, ...] | None":
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(join(x, y) for x, y in zip(a, b))


def _encode_attributes(attributes: tuple) -> list:
    return [[name, int(kind)] for name, kind in attributes]


def _decode_attributes(data: list) -> tuple:
    return tuple((name, Kind(kind)) for name, kind in data)


def _encode_origin(origin: Provenance) -> list:
    return [origin.source.value, origin.detail]


def _decode_origin(data: list) -> Provenance:
    return Provenance(Source(data[0]), data[1])


def _certainty(default: Certainty):
    return component(default, _join_certainty, _encode_certainty, Certainty)


@dataclass(frozen=True, slots=True)
class Value:
    """One abstract value: a product of per-field lattices (the module docstring lists them). The
    defaults describe a value nothing is known about."""

    traced: Certainty = _certainty(MAY)
    array: Certainty = _certainty(MAY)
    static: Certainty = _certainty(MAY)
    holds: Certainty = _certainty(MAY)
    mask: Certainty = _certainty(MAY)
    form: Form = component(Form.ANY, equal_or(Form.ANY), _encode_enum, Form)
    #: the values of a tuple of known length (`jax.value_and_grad(f)(x)` gives two)
    items: "tuple[Value, ...] | None" = component(None, _join_items, _encode_items, _decode_items)
    #: a function made by a transform (`jax.grad(f)`): what calling it returns (a TRANSFORM_WRAPPERS
    #: value, "vjp_function" or "has_aux" variants)
    wrapper: str | None = component(None, equal_or(None))
    #: the truthiness of a Python constant known to be bound here (a parameter that every
    #: transform of the function binds to a literal through `functools.partial`)
    truth: bool | None = component(None, equal_or(None))
    #: an object whose class says which of its attributes are data: attribute -> its kind. The
    #: attributes not listed are static (a flax.nnx module under a trace keeps every other attribute
    #: static), or, where an entry `OTHER_ATTRIBUTES` is listed, of its kind (a dataclass pytree's
    #: properties and methods are not known). An entry `a.b` gives the kind of the attribute `b` of
    #: the attribute `a` (`model.scale.value`, an nnx Variable's array)
    attributes: "tuple[tuple[str, Kind], ...] | None" = component(
        None, equal_or(None), _encode_attributes, _decode_attributes)
    #: where the value's facts came from
    origin: Provenance | None = component(None, equal_or(None), _encode_origin, _decode_origin)
    #: the new array an `x.at[...].set(...)` (or `add`, `multiply`, ...) returns: `x` is unchanged
    at_update: bool = component(False, equal_or(False))

    @property
    def kind(self) -> Kind:
        """The older one-dimensional view: only MUST facts count."""
        if self.traced is MUST:
            if self.array is MUST:
                return Kind.BOOL if self.mask is MUST else Kind.ARRAY
            return Kind.TREE if self.form is Form.TREE else Kind.PARAM
        if self.holds is MUST:
            return Kind.CONTAINER
        return Kind.JAX_ARRAY if self.array is MUST else Kind.NONE

    @property
    def tracer(self) -> bool:
        """Traced on every path and not a pytree of unknown structure (which may be None, a struct or
        static data): a tracer whenever the code runs, whose truth, type or text JAX cannot give."""
        return self.traced is MUST and self.form is not Form.TREE

    @property
    def array_or_traced_argument(self) -> bool:
        """A JAX array on every path, or a traced value that is not a pytree of unknown structure (a
        traced argument: an array, or a pytree of arrays, which has no array methods to call)."""
        return self.array is MUST or self.tracer

    def with_origin(self, origin: Provenance | None) -> "Value":
        if origin is None or origin == self.origin:
            return self
        return replace(self, origin=origin)

    def with_facts(self, *, items: "tuple[Value, ...] | None" = None, wrapper: str | None = None,
                   truth: bool | None = None, attributes: "tuple[tuple[str, Kind], ...] | None" = None) -> "Value":
        """This value with the structural facts given (the certainties kept)."""
        return replace(self, items=items, wrapper=wrapper, truth=truth, attributes=attributes)


#: The entry of `Value.attributes` that gives the kind of every attribute it does not list (not a
#: Python identifier, so never an attribute's own name).
OTHER_ATTRIBUTES = "*"

#: nothing known: maybe traced, maybe an array, maybe static
UNKNOWN = Value()
#: a plain Python value fixed at trace time: a literal, a shape, `len(x)`, a dtype
STATIC = Value(NO, NO, MUST, NO, NO)
#: a concrete JAX array, outside any trace
CONCRETE_ARRAY = Value(NO, MUST, NO, NO, MAY)
#: a Python container (tuple, list, dict) holding traced leaves
TRACED_CONTAINER = Value(NO, NO, NO, MUST, NO, Form.CONTAINER)
#: a traced pytree of unknown structure: its leaves are traced, itself may be None or a struct
TRACED_TREE = Value(MUST, MAY, MAY, MUST, MAY, Form.TREE)
#: a traced parameter of unknown structure (an array or a pytree of arrays)
TRACED_PARAM = Value(MUST, MAY, NO, MUST, MAY)
#: a traced array
TRACED_ARRAY = Value(MUST, MUST, NO, MUST, MAY)
#: a traced boolean array
TRACED_MASK = Value(MUST, MUST, NO, MUST, MUST)
#: a name not bound yet on a path, where paths meet: the other paths decide (compared by identity)
BOTTOM = Value(NO, NO, NO, NO, NO)

#: the value each Kind stands for (NONE: nothing known)
OF_KIND = {
    Kind.NONE: UNKNOWN, Kind.JAX_ARRAY: CONCRETE_ARRAY, Kind.CONTAINER: TRACED_CONTAINER,
    Kind.TREE: TRACED_TREE, Kind.PARAM: TRACED_PARAM, Kind.ARRAY: TRACED_ARRAY, Kind.BOOL: TRACED_MASK,
}
#: the shared instances, so that the common values compare by identity
_SHARED = {value: value for value in (*OF_KIND.values(), STATIC)}


def _make(*fields) -> Value:
    value = Value(*fields)
    return _SHARED.get(value, value)


VALUES: Product[Value] = Product(Value, _make)


def join(a: Value, b: Value) -> Value:
    """The value on a path that may have come either way: field by field (see the module docstring)."""
    if a is b:
        return a
    if a is BOTTOM:
        return b
    if b is BOTTOM:
        return a
    return VALUES.join(a, b)


def value_to_json(value: Value) -> dict:
    return VALUES.to_json(value)


def value_from_json(data: dict) -> Value:
    return VALUES.from_json(data)


def of_kind(kind: Kind, items: "tuple[Value, ...] | None" = None, wrapper: str | None = None,
            truth: bool | None = None, attributes: "tuple[tuple[str, Kind], ...] | None" = None) -> Value:
    """The value a Kind stands for, with the structural facts given."""
    plain = OF_KIND[kind]
    if items is None and wrapper is None and truth is None and attributes is None:
        return plain
    return plain.with_facts(items=items, wrapper=wrapper, truth=truth, attributes=attributes)
