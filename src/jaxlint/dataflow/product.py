"""Abstract values built as products of small lattices, one per field of a frozen dataclass.

Each field declares, with `component(...)`, how two of its values join where paths meet and how it
is written as JSON; `Product` derives the value's join and its JSON codec from those declarations.
A field that declares no join is refused when the product is built (a `TypeError` at import time),
so a fact added to a domain cannot be silently dropped, or kept from one path only, at a join, nor
left out of the summaries written to disk.

JSON form: an object holding only the fields whose value differs from the field's default, each
under its name; a value with every field at its default is `{}`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")
#: the key of a field's metadata holding its `FieldLattice`
LATTICE = "lattice"


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class FieldLattice:
    """How one field joins, and how it is written to and read from JSON."""

    join: Callable[[Any, Any], Any]
    encode: Callable[[Any], Any] = _same
    decode: Callable[[Any], Any] = _same


def component(default: Any, join: Callable[[Any, Any], Any], encode: Callable[[Any], Any] = _same,
              decode: Callable[[Any], Any] = _same) -> Any:
    """A dataclass field that is one lattice of a product: its default, its join, its codec."""
    return dataclasses.field(default=default, metadata={LATTICE: FieldLattice(join, encode, decode)})


def equal_or(fallback: Any) -> Callable[[Any, Any], Any]:
    """The join of a flat lattice: two equal values stay, two different ones give `fallback`
    (the field's "not known")."""
    def join(a: Any, b: Any) -> Any:
        return a if a is b or a == b else fallback
    return join


class Product(Generic[T]):
    """The join and the JSON codec of the frozen dataclass `cls`, derived from its fields.

    `make` builds a value from the joined fields (by default the class itself; a domain may pass
    one that returns shared instances for common values)."""

    def __init__(self, cls: type[T], make: Callable[..., T] | None = None) -> None:
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        undeclared = [f.name for f in fields if LATTICE not in f.metadata]
        if undeclared:
            raise TypeError(f"{cls.__name__}: field(s) {', '.join(undeclared)} declare no join; "
                            f"declare each with `component(default, join, ...)`")
        self.cls = cls
        self.make = make or cls
        self.names = tuple(f.name for f in fields)
        self.lattices = tuple(f.metadata[LATTICE] for f in fields)
        self.defaults = tuple(f.default for f in fields)
        self._by_name = {name: (lattice, default) for name, lattice, default
                         in zip(self.names, self.lattices, self.defaults)}

    def join(self, a: T, b: T) -> T:
        """Field by field; equal values join to themselves."""
        if a is b or a == b:
            return a
        return self.make(*[lattice.join(getattr(a, name), getattr(b, name))
                           for name, lattice in zip(self.names, self.lattices)])

    def to_json(self, value: T) -> dict[str, Any]:
        found = {}
        for name, lattice, default in zip(self.names, self.lattices, self.defaults):
            field_value = getattr(value, name)
            if field_value is not default and field_value != default:
                found[name] = lattice.encode(field_value)
        return found

    def from_json(self, data: dict[str, Any]) -> T:
        unknown = data.keys() - self._by_name.keys()
        if unknown:
            raise ValueError(f"{self.cls.__name__}: no field(s) {', '.join(sorted(unknown))}")
        return self.make(*[self._by_name[name][0].decode(data[name]) if name in data else default
                           for name, default in zip(self.names, self.defaults)])
