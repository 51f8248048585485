"""Inputs for parameters annotated with a structured class: a dataclass (flax's `struct.dataclass`,
`TrainState` and its subclasses) or a NamedTuple, in the worker.

A probe gives such a parameter an array, and the function fails on its first attribute
(`state.step`: "DynamicJaxprTracer has no attribute step") before the flagged line. The class
itself says what it holds: each field is built from its annotation (an array for an array or an
unknown type, 3 for `int`, 1.0 for `float`, a function for a `Callable`, a dict of one array for
a mapping, the class of a nested dataclass or NamedTuple built the same way), and a field with a
default keeps it, unless the default is `None` for a field whose type is not optional (a
placeholder the program fills in). The other parameters get the first probes' values.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import typing
from typing import Any

from .subject import Inputs

#: Nested structures are built this deep at most (a field of a field of ...).
MAX_DEPTH = 4


def structured_inputs(params: list[dict], probes: Inputs | None, namespace: dict) -> Inputs | None:
    """A candidate in which the parameters annotated with a structured class get an instance of
    it, or None when no parameter is (or none could be built)."""
    classes = {}
    for param in params:
        cls = _resolve(param.get("annotation"), namespace)
        if cls is not None and _structured(cls) and param["kind"] in ("positional", "positional_only", "keyword_only"):
            classes[param["name"]] = cls
    if not classes:
        return None
    try:
        for cls in classes.values():
            build(cls, namespace)  # once, to know it can be built
    except Exception:  # noqa: BLE001 - a class that cannot be built from its fields: no candidate
        return None
    positions = [p["name"] for p in params if p["kind"] in ("positional", "positional_only")]

    def make() -> tuple[tuple, dict]:
        args, kwargs = probes.make() if probes is not None else ((), {})
        args = list(args)
        for name, cls in classes.items():
            value = build(cls, namespace)
            index = positions.index(name) if name in positions else None
            if index is not None and index < len(args):
                args[index] = value
            else:
                kwargs[name] = value
        return tuple(args), kwargs

    built = ", ".join(f"{name}={cls.__name__}(...)" for name, cls in classes.items())
    rest = probes.description.split(": ", 1)[-1] if probes is not None else ""
    others = ", ".join(part for part in rest.split(", ") if part.split("=")[0] not in classes and "=" in part)
    description = f"annotations: {built}" + (f", {others}" if others else "")
    static = probes.static_argnames if probes is not None else ()
    return Inputs(make, description, tuple(name for name in static if name not in classes))


def _resolve(annotation: str | None, namespace: dict) -> type | None:
    if not annotation:
        return None
    try:
        value = eval(annotation, dict(namespace))  # noqa: S307 - the user's annotation, in the worker
    except Exception:  # noqa: BLE001 - names the module does not bind, forward references
        return None
    return value if isinstance(value, type) else None


def _structured(cls: type) -> bool:
    return dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields"))


def build(cls: type, namespace: dict, depth: int = 0) -> Any:
    """An instance of a dataclass or NamedTuple with every field that has no default built."""
    hints = _hints(cls, namespace)
    values = {}
    if dataclasses.is_dataclass(cls):
        for field in dataclasses.fields(cls):
            if not field.init:
                continue
            if field.default_factory is not dataclasses.MISSING:
                continue
            if field.default is not dataclasses.MISSING and not (field.default is None and _not_optional(
                    hints.get(field.name, field.type))):
                continue  # a real default; `None` for a field typed as an array is a placeholder
            values[field.name] = _value(hints.get(field.name, field.type), namespace, depth)
    else:
        defaults = getattr(cls, "_field_defaults", {})
        for name in cls._fields:
            if name not in defaults:
                values[name] = _value(hints.get(name), namespace, depth)
    return cls(**values)


def _not_optional(hint: Any) -> bool:
    if isinstance(hint, str):
        return "Optional[" not in hint and "None" not in hint and hint.strip() != "Any"
    if hint is None:
        return False
    origin = typing.get_origin(hint)
    union = origin is typing.Union or type(hint).__name__ == "UnionType"
    return not (union and type(None) in typing.get_args(hint)) and hint is not Any


def _hints(cls: type, namespace: dict) -> dict:
    """The fields' types: resolved where the names are known (the class's module, then the checked
    module), else the annotation's text, one field at a time."""
    import sys

    scope = {**vars(typing), **namespace, **vars(sys.modules.get(cls.__module__, typing))}
    try:
        return typing.get_type_hints(cls, globalns=scope)
    except Exception:  # noqa: BLE001 - one unresolvable annotation: resolve the others alone
        hints: dict = {}
        for klass in reversed(cls.__mro__):
            for name, hint in getattr(klass, "__annotations__", {}).items():
                hints[name] = (_resolve_any(hint, scope) or hint) if isinstance(hint, str) else hint
        return hints


def _resolve_any(annotation: str, scope: dict) -> Any:
    try:
        return eval(annotation, dict(scope))  # noqa: S307 - the user's annotation, in the worker
    except Exception:  # noqa: BLE001
        return None


def _value(hint: Any, namespace: dict, depth: int) -> Any:
    import jax.numpy as jnp

    if isinstance(hint, str):
        return _value_from_text(hint)
    origin = typing.get_origin(hint)
    if origin is typing.Union or type(hint).__name__ == "UnionType":
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _value(options[0], namespace, depth) if options else None
    if origin is not None and origin in (collections.abc.Callable,):
        return _function
    if hint is bool:
        return True
    if hint is int:
        return 3
    if hint is float:
        return 1.0
    if hint is str:
        return "x"
    base = origin or hint
    if isinstance(base, type):
        if issubclass(base, collections.abc.Mapping):
            return {"w": jnp.ones(())}
        if _structured(base) and depth < MAX_DEPTH:
            return build(base, namespace, depth + 1)
        if base is collections.abc.Callable or (base.__module__ == "typing" and base.__name__ == "Callable"):
            return _function
    if hint is collections.abc.Callable or getattr(hint, "_name", None) == "Callable":
        return _function
    return jnp.ones(())


def _value_from_text(text: str) -> Any:
    """A field whose annotation names what this module cannot resolve: read from its text."""
    import jax.numpy as jnp

    bare = text.replace("typing.", "").replace("Optional[", "").strip()
    if "Callable" in bare:
        return _function
    for name, value in (("bool", True), ("int", 3), ("float", 1.0), ("str", "x")):
        if bare == name or bare.startswith(f"{name} |"):
            return value
    if bare.startswith(("dict", "Dict", "Mapping", "FrozenDict")):
        return {"w": jnp.ones(())}
    return jnp.ones(())


def _function(*args: Any, **kwargs: Any) -> None:
    """A stand-in for a field that holds a function (a model's `apply_fn`, an optimizer's `update`)."""
    return None
