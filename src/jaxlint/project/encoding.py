"""What the project index stores, as JSON: values, seeds, key uses, signatures, parameters."""
from __future__ import annotations

import json
from typing import Any

import libcst as cst

from ..jaxmodel.external import KeyUse, Seed, TraceStep
from ..jaxmodel.values import PLAIN, Kind, Value


def value_to_json(value: Value | None) -> Any:
    if value is None:
        return None
    items = [value_to_json(item) for item in value.items] if value.items is not None else None
    attributes = [[name, int(kind)] for name, kind in value.attributes] if value.attributes is not None else None
    if items is None and value.wrapper is None and value.truth is None and attributes is None:
        return int(value.kind)
    return [int(value.kind), items, value.wrapper, value.truth, attributes]


def value_from_json(data: Any) -> Value | None:
    if data is None:
        return None
    if isinstance(data, int):
        return PLAIN[Kind(data)]
    kind, items, wrapper, truth, attributes = data
    return Value(Kind(kind), tuple(value_from_json(item) for item in items) if items is not None else None,
                 wrapper, truth, tuple((name, Kind(k)) for name, k in attributes) if attributes is not None else None)


def signature_key(signature: Any) -> str:
    """A summary's signature (argument kinds, abstract, static leaves, closure) as text."""
    arguments, abstract, static_leaves = signature[:3]
    return json.dumps([[[name, int(kind)] for name, kind in arguments], bool(abstract), bool(static_leaves)],
                      separators=(",", ":"))


def signature_from_key(text: str) -> tuple:
    arguments, abstract, static_leaves = json.loads(text)
    return tuple((name, Kind(kind)) for name, kind in arguments), abstract, static_leaves, None


def seed_to_json(target: str, seed: Seed) -> list:
    return [target, seed.qualname, [[name, int(kind)] for name, kind in seed.param_kinds], sorted(seed.modes),
            seed.transform, [[s.path, s.line, s.caller, s.transform, s.cell] for s in seed.chain]]


def seed_from_json(data: list) -> tuple[str, Seed]:
    target, qualname, kinds, modes, transform, chain = data
    return target, Seed(qualname, tuple((name, Kind(kind)) for name, kind in kinds), frozenset(modes), transform,
                        tuple(TraceStep(*step) for step in chain))


def seeds_key(seeds: list[Seed]) -> str:
    """What a module receives, as text (its part of the module's context key)."""
    return json.dumps(sorted(seed_to_json("", seed) for seed in seeds), separators=(",", ":"))


def key_uses_to_json(uses: dict[str, KeyUse]) -> dict:
    return {param: [use.certain, use.consumer, use.where] for param, use in uses.items()}


def key_uses_from_json(data: dict) -> dict[str, KeyUse]:
    return {param: KeyUse(*use) for param, use in data.items()}


def parameters_code(params: cst.Parameters) -> str:
    return cst.Module([]).code_for_node(params)


def parameters_from_code(code: str) -> cst.Parameters:
    function = cst.parse_statement(f"def _({code}):\n    pass\n")
    assert isinstance(function, cst.FunctionDef)
    return function.params
