"""Keys broadcast by `vmap`: a key that every batch element of a vmapped function draws from alike
(JAX104)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ...semantic.model import SemanticModel
from ...semantic.scopes import Scope
from ..traced import TracedFunctions
from ..transforms import FRAMEWORKS
from .domain import parameter_names
from .facts import KeyFlowFacts
from .tables import KEY_DERIVERS, KEY_MAKERS, NON_CONSUMING_RANDOM

if TYPE_CHECKING:
    from ...semantic.source_file import SourceFile

FunctionNode = cst.FunctionDef | cst.Lambda


# -- keys broadcast by vmap ---------------------------------------------------------------------
VMAP_TRANSFORMS = frozenset(t.name for t in FRAMEWORKS.transforms.values() if t.broadcasts_keys)


def vmap_broadcast_keys(ctx: "SourceFile") -> list[tuple[cst.Call, str, str]]:
    """(consuming call, key name, how it reaches the function) for keys a vmapped function draws from
    while every batch element sees the same key: a parameter mapped with `in_axes=None`, or a key
    closed over from the enclosing scope. Only sure consumers count (samplers, `split`)."""
    facts = KeyFlowFacts.of(ctx)
    traced = ctx.fact(TracedFunctions)
    found: list[tuple[cst.Call, str, str]] = []
    for function in traced.functions:
        for use in traced.applications.get(id(function), ()):
            if use.transform not in VMAP_TRANSFORMS or id(function) in traced.methods:
                continue
            positional = parameter_names(function)[use.bound_positional:]
            for param in _broadcast(use, positional):
                consumption = facts.summary(function).consumed.get(param)
                if consumption is not None and consumption.certain \
                        and not _given_none(ctx, function, positional.index(param)):
                    found.append((consumption.node, param, "in_axes=None"))
            for node, name in _closed_over_draws(facts, function):
                found.append((node, name, "closure"))
    seen: set[int] = set()
    unique = []
    for item in found:
        if id(item[0]) not in seen:
            seen.add(id(item[0]))
            unique.append(item)
    return unique


def _given_none(ctx: "SourceFile", function: FunctionNode, index: int) -> bool:
    """Whether every call of `jax.vmap(function, ...)(...)` passes a literal `None` at this position
    (`vmap(sample, in_axes=(None, None, 0))(state, None, values)`): no key reaches the function there.
    False when the vmapped function is kept and called elsewhere, out of sight."""
    if not isinstance(function, cst.FunctionDef):
        return False
    name = function.name.value
    applied: list[cst.Call] = []
    called: dict[int, cst.Call] = {}
    for node, _, _ in SemanticModel.of(ctx).sites_of(cst.Call):
        if node.args and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == name \
                and ctx.names.qualified_name(node.func, ctx.module_scope) in VMAP_TRANSFORMS:
            applied.append(node)
        if isinstance(node.func, cst.Call):
            called[id(node.func)] = node
    for vmapped in applied:
        outer = called.get(id(vmapped))
        if outer is None:
            return False
        given = [a for a in outer.args if a.keyword is None]
        if any(a.star for a in given) or index >= len(given):
            return False
        value = given[index].value
        if not (isinstance(value, cst.Name) and value.value == "None"):
            return False
    return bool(applied)


#: Containers whose annotation lists the type of each element (or of the keys and values).
def _broadcast(use, positional: list[str]) -> list[str]:
    axes = use.keywords.get("in_axes", use.extra_positional[0] if use.extra_positional else None)
    if axes is None:
        return []
    if isinstance(axes, cst.Name) and axes.value == "None":
        return list(positional)
    if isinstance(axes, (cst.Tuple, cst.List)):
        return [name for name, element in zip(positional, axes.elements)
                if isinstance(element.value, cst.Name) and element.value.value == "None"]
    return []


def _closed_over_draws(facts: KeyFlowFacts, function: FunctionNode) -> list[tuple[cst.Call, str]]:
    """Sampler/split calls in the function body whose key is a name from an enclosing scope."""
    from ...syntax.walk import walk

    scope = facts.traced.scopes.get(id(function))
    if scope is None:
        return []
    local = set(scope.bindings)
    draws: list[tuple[cst.Call, str]] = []

    def enter(node: cst.CSTNode, field: str) -> bool:
        if node is not function and type(node) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            return False
        if type(node) is cst.Call and node.args and node.args[0].keyword is None:
            callee = facts.ctx.names.qualified_name(node.func, scope)
            key = node.args[0].value
            if callee is not None and callee.startswith("jax.random.") and callee not in NON_CONSUMING_RANDOM \
                    and isinstance(key, cst.Name) and key.value not in local and _is_outer_key(facts, scope, key.value):
                draws.append((node, key.value))
        return True

    body = function.body
    walk(body, enter, None)
    return draws


def _is_outer_key(facts: KeyFlowFacts, scope: Scope, name: str) -> bool:
    """Whether an enclosing scope binds `name` to a key (made by jax.random, or a key-named parameter)."""
    found = scope.lookup(name)
    if found is None:
        return False
    owner, binding = found
    for node in binding.nodes:
        if isinstance(node, cst.Param):
            if not facts.key_name.match(name):
                return False
            continue
        return False if not _bound_to_key(facts, owner, node) else True
    return bool(binding.nodes)


def _bound_to_key(facts: KeyFlowFacts, owner: Scope, target: cst.CSTNode) -> bool:
    """A Name target assigned from `jax.random.key/PRNGKey/split/fold_in(...)` (directly or unpacked)."""
    from ...syntax.walk import walk

    result = [False]

    def enter(node: cst.CSTNode, field: str) -> bool:
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            if any(_contains(t.target, target) for t in node.targets):
                callee = facts.ctx.names.qualified_name(node.value.func, owner)
                result[0] = callee in KEY_MAKERS or callee in KEY_DERIVERS
            return False
        return not isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) or node is owner.node

    walk(owner.node, enter, None)
    return result[0]


def _contains(target: cst.BaseExpression, node: cst.CSTNode) -> bool:
    if target is node:
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_contains(e.value, node) for e in target.elements)
    if isinstance(target, cst.StarredElement):
        return _contains(target.value, node)
    return False
