"""What the project index stores, as JSON: values, seeds, key uses, signatures, parameters."""
from __future__ import annotations

import json
from typing import Any

import libcst as cst

from ..jaxmodel.external import KeyUse, Seed, TraceStep
from ..jaxmodel.values import Kind, Value
from ..jaxmodel.values import value_from_json as lattice_from_json
from ..jaxmodel.values import value_to_json as lattice_to_json


def value_to_json(value: Value | None) -> Any:
    """A value as JSON (the codec `Value`'s fields declare), None as null."""
    return lattice_to_json(value) if value is not None else None


def value_from_json(data: Any) -> Value | None:
    return lattice_from_json(data) if data is not None else None


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
    return {param: [use.certain, use.consumer, use.where,
                    None if use.returned is None else sorted(list(p) for p in use.returned)]
            for param, use in uses.items()}


def key_uses_from_json(data: dict) -> dict[str, KeyUse]:
    uses = {}
    for param, use in data.items():
        certain, consumer, where, *rest = use
        returned = rest[0] if rest else None  # an answer stored before positions were recorded
        uses[param] = KeyUse(certain, consumer, where,
                             None if returned is None else frozenset(tuple(p) for p in returned))
    return uses


def parameters_code(params: cst.Parameters) -> str:
    return cst.Module([]).code_for_node(params)


def parameters_from_code(code: str) -> cst.Parameters:
    function = cst.parse_statement(f"def _({code}):\n    pass\n")
    assert isinstance(function, cst.FunctionDef)
    return function.params
