"""Inputs for a flagged function, in the worker: declared examples, else annotations, else probes.

Each candidate is an `Inputs` whose `make()` builds fresh arguments every call (a typed key is
consumed by the checks, so it must not be shared between runs). The candidates come best first:
- a declared example (pyproject.toml or `jaxlint_examples.py`): the only candidate when present,
  since the user said what the function takes;
- otherwise the parameters' annotations fix what they can (`jax.Array`, jaxtyping shapes, `int`,
  key types), and probes fill the rest, in a few shapes: guided by the parameter names (keys for
  `key`/`rng`/`*_key`, a batch of three keys for `keys`, the integer 3 for counts such as `n`,
  `num_steps`, `axis`, the shape (3,) for `shape`, True for flags such as `training`, float32[3]
  for the others), then float32 scalars, then the integer 3, then float32[3,3].

Parameters with a default that the static analysis does not see passed keep their default, and so
do those that no call site passes; a parameter every call site passes a Python literal for gets
that literal, not a probe; a call site whose arguments are all literals is a candidate of its own,
before the annotations and probes. (Inputs recorded from the program's own calls come before all
of these: recording.py.)
Parameters the static analysis finds static (not traced, no default) get the integer 3 unless
an annotation or example says otherwise, and are named in `static_argnames`.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from .specs import DTYPES, Spec, SpecError, parse_spec, read_annotation
from .subject import Inputs

KEY_NAME = re.compile(r"^(key|rng|prng_key|prngkey|subkey|rng_key|.+_key|.+_rng|key_.+|rng_.+)$", re.IGNORECASE)
KEYS_NAME = re.compile(r"^(keys|.+_keys|rngs)$", re.IGNORECASE)
COUNT_NAME = re.compile(
    r"^(n|m|k|i|j|num|count|size|length|width|depth|steps?|iters?|epochs?|times|repeats|degree|axis|dim|"
    r"rows|cols|layer|index|idx|num_.+|n_.+|.+_count|.+_size|.+_len|.+_idx|.+_index|.+_steps)$", re.IGNORECASE)
SHAPE_NAME = re.compile(r"^(shape|.+_shape)$", re.IGNORECASE)
FLAG_NAME = re.compile(r"^(training|train|deterministic|flag|verbose|is_.+|use_.+|has_.+)$", re.IGNORECASE)

VECTOR = Spec("array", "float32", (3,))
SCALAR = Spec("array", "float32", ())
MATRIX = Spec("array", "float32", (3, 3))
INT = Spec("python", value=3)
KEY = Spec("key")
KEYS = Spec("key", shape=(3,))


def build(spec: Spec) -> Any:
    """A fresh value for a spec (imports JAX: worker only)."""
    import jax
    import jax.numpy as jnp

    if spec.kind == "python":
        return spec.value
    if spec.kind == "key":
        key = jax.random.key(0)
        return jax.random.split(key, spec.shape[0]) if spec.shape else key
    return jnp.ones(spec.shape, dtype=spec.dtype)


def from_example(value: Any) -> Any:
    """An example value with its spec strings (`"f32[3]"`, `"key"`) turned into arrays and keys."""
    if isinstance(value, str):
        spec = parse_spec(value)
        return value if spec is None else build(spec)
    if isinstance(value, list):
        return [from_example(v) for v in value]
    if isinstance(value, tuple):
        return tuple(from_example(v) for v in value)
    if isinstance(value, dict):
        return {k: from_example(v) for k, v in value.items()}
    return value


def example_inputs(example: Any, source: str, static: tuple[str, ...]) -> tuple[Inputs, list | None]:
    """Inputs from a declared example, and the constructor arguments it declares (`init`), if any.

    An example is a list (the positional arguments), a table `{args = [...], kwargs = {...},
    init = [...]}`, or in `jaxlint_examples.py` a function returning either.
    """
    def shape() -> tuple[list, dict, list | None]:
        value = example() if callable(example) else example
        if isinstance(value, tuple):
            value = list(value)
        if isinstance(value, list):
            return value, {}, None
        if isinstance(value, dict):
            unknown = set(value) - {"args", "kwargs", "init"}
            if unknown:
                raise SpecError(f"unknown example key {sorted(unknown)[0]!r} (known: args, kwargs, init)")
            return list(value.get("args", [])), dict(value.get("kwargs", {})), value.get("init")
        raise SpecError(f"an example must be a list of arguments or a table with args/kwargs, "
                        f"not {type(value).__name__}")

    args, kwargs, init = shape()  # validated once here; `make` re-reads for fresh values

    def make() -> tuple[tuple, dict]:
        fresh_args, fresh_kwargs, _ = shape()
        return tuple(from_example(v) for v in fresh_args), {k: from_example(v) for k, v in fresh_kwargs.items()}

    described = ", ".join([*map(_describe_value, args), *(f"{k}={_describe_value(v)}" for k, v in kwargs.items())])
    return Inputs(make, f"example from {source}: ({described})", static, from_caller=True), init


def _describe_value(value: Any) -> str:
    """Short text for an example value: specs as written, arrays by dtype and shape."""
    if isinstance(value, str):
        try:
            spec = parse_spec(value)
        except SpecError:
            spec = None
        return str(spec) if spec is not None else repr(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_describe_value(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_describe_value(v)}" for k, v in value.items()) + "}"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        dtype = str(value.dtype)
        code = next((c for c, name in DTYPES.items() if name == dtype), dtype)
        return f"{code}[{','.join(map(str, value.shape))}]"
    text = repr(value)
    return text if len(text) <= 20 else type(value).__name__


def candidates(params: list[dict], traced: set[str] | None, abstract: bool = True,
               calls: dict | None = None) -> list[Inputs]:
    """Inputs from the call sites, annotations and probes, best first (see the module docstring).

    `params` are the planner's parameter records without `self`/`cls`; `traced` the parameters the
    static analysis finds traced (None: the function is not traced, every parameter is an input).
    `abstract`: traced abstractly (jit, vmap, lax …), where an untraced parameter is a static one;
    otherwise (under `grad` alone) it is an ordinary argument, and the differentiated parameters
    must be floating point. `calls`: what the planner knows of the function's call sites
    (`planner.call_facts`): a parameter no call passes keeps its default, one every call passes a
    Python literal gets that literal, and a call whose arguments are all literals is a candidate.
    """
    calls = calls or {}
    unpassed = set(calls.get("unpassed", ()))
    literals = {name: _literal(text) for name, text in calls.get("literals", {}).items()}
    literals = {name: value for name, value in literals.items() if value is not _NOT_LITERAL}
    result = _site_candidates(params, traced, abstract, calls)
    sizes: dict[str, int] = {}
    hints = {p["name"]: read_annotation(p.get("annotation"), sizes) for p in params}
    plans = []
    for probe in ("guided", "scalar", "int", "matrix"):
        chosen: dict[str, Spec] = {}
        static: list[str] = []
        origin = "annotations" if any(h and h.spec for h in hints.values()) else "probes"
        for param in params:
            name, kind = param["name"], param["kind"]
            if kind in ("var_positional", "var_keyword"):
                continue
            is_traced = traced is None or name in traced
            if param.get("default") is not None and (name in unpassed or not (traced is not None and name in traced)):
                continue  # keeps its default
            is_static = traced is not None and not is_traced and abstract
            if is_static:
                static.append(name)
            if name in literals:
                chosen[name] = Spec("python", value=literals[name])  # what every call passes
                continue
            spec = _choose(name, hints.get(name), probe, static=is_static)
            if not abstract and traced is not None and is_traced and spec.kind == "python":
                spec = SCALAR if probe != "guided" else VECTOR  # grad differentiates floats only
            chosen[name] = spec
        plans.append((chosen, tuple(static), origin))
    seen = {inputs.description for inputs in result}
    for chosen, static, origin in plans:
        description = ", ".join(f"{name}={spec}" for name, spec in chosen.items()) or "no arguments"
        if description in seen:
            continue
        seen.add(description)
        result.append(Inputs(_maker(params, chosen), f"{origin}: {description}", static))
    return result


_NOT_LITERAL = object()


def _literal(text: str) -> Any:
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _site_candidates(params: list[dict], traced: set[str] | None, abstract: bool, calls: dict) -> list[Inputs]:
    """One candidate per call site whose arguments are all Python literals, in source order."""
    result = []
    for site in calls.get("sites", ()):
        values = {name: _literal(text) for name, text in site["args"].items()}
        if any(value is _NOT_LITERAL for value in values.values()):
            continue
        chosen, static = {}, []
        for param in params:
            name = param["name"]
            if name in values:
                chosen[name] = Spec("python", value=values[name])
                if traced is not None and name not in traced and abstract:
                    static.append(name)
            elif param.get("default") is None and param["kind"] not in ("var_positional", "var_keyword"):
                break  # a required parameter the call does not name: not usable alone
        else:
            described = ", ".join(f"{name}={spec}" for name, spec in chosen.items()) or "no arguments"
            result.append(Inputs(_maker(params, chosen), f"inputs from the call site at {site['where']} "
                                                         f"(literals): {described}", tuple(static), from_caller=True))
    return result


def _choose(name: str, hint, probe: str, static: bool) -> Spec:
    if hint is not None and hint.spec is not None:
        return hint.spec
    if KEYS_NAME.match(name):
        return KEYS
    if KEY_NAME.match(name):
        return KEY
    if static:  # a static argument must be hashable: a small integer is the likeliest
        return INT
    array_only = hint is not None and hint.array
    if probe == "guided":
        if not array_only and SHAPE_NAME.match(name):
            return Spec("python", value=(3,))
        if not array_only and COUNT_NAME.match(name):
            return INT
        if not array_only and FLAG_NAME.match(name):
            return Spec("python", value=True)
        return VECTOR
    if probe == "scalar":
        return SCALAR
    if probe == "int":
        return VECTOR if array_only else INT
    return MATRIX


def _maker(params: list[dict], chosen: dict[str, Spec]) -> Callable[[], tuple[tuple, dict]]:
    """Positional parameters go by position until one is skipped (it keeps its default); the
    ones after it, and keyword-only ones, go by keyword."""
    by_position, by_keyword, gap = [], [], False
    for param in params:
        name = param["name"]
        if param["kind"] in ("positional_only", "positional"):
            if name not in chosen:
                gap = True
            elif gap:
                by_keyword.append(name)
            else:
                by_position.append(name)
        elif name in chosen:
            by_keyword.append(name)

    def make() -> tuple[tuple, dict]:
        return (tuple(build(chosen[n]) for n in by_position), {n: build(chosen[n]) for n in by_keyword})

    return make
