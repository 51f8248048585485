"""What a name or dotted expression refers to: `jnp.sum` -> `jax.numpy.sum`, from imports and aliases."""
from __future__ import annotations

import builtins

import libcst as cst

from .scopes import LOCAL, Binding, Scope

BUILTIN_NAMES = frozenset(dir(builtins))
_NAME = cst.Name
_ATTRIBUTE = cst.Attribute


class NameResolver:
    """Resolves expressions to fully qualified names, as seen from a given scope.

    A name whose bindings disagree (`np` imported from NumPy in one branch and from jax.numpy in
    another) or that is bound to a computed value resolves to None: rules then stay silent. An
    import fallback (`try: import jax.numpy as jnp` / `except ImportError: import numpy as jnp`)
    is not a disagreement: the code is checked with the meaning the `try` body gives the name.
    """

    def __init__(self) -> None:
        self._binding_cache: dict[Binding, str | None] = {}
        self._resolving: set[Binding] = set()
        #: id(node) -> (the scope it was resolved in, the answer): several rules ask about the same
        #: call's function at the same node; the scope is kept (and so kept alive) to check it
        self.answers: dict[int, tuple[Scope, str | None]] = {}

    def qualified_name(self, node: cst.BaseExpression, scope: Scope) -> str | None:
        answer = self.answers.get(id(node))
        if answer is not None and answer[0] is scope:
            return answer[1]
        resolved = self._qualify(node, scope)
        self.answers[id(node)] = (scope, resolved)
        return resolved

    def _qualify(self, node: cst.BaseExpression, scope: Scope) -> str | None:
        # exact types: `isinstance` against libcst's classes goes through ABCMeta, and this runs
        # for most Names and Attributes of a file
        kind = type(node)
        if kind is _NAME:
            return self.name(node.value, scope)
        suffix: list[str] = []
        while kind is _ATTRIBUTE:
            suffix.append(node.attr.value)
            node = node.value
            kind = type(node)
        if kind is not _NAME:
            return None
        root = self.name(node.value, scope)
        if root is None:
            return None
        return ".".join([root, *reversed(suffix)])

    def name(self, name: str, scope: Scope) -> str | None:
        found = scope.lookup(name)
        if found is None:
            return f"builtins.{name}" if name in BUILTIN_NAMES else None
        owner, binding = found
        return self.binding_target(binding, owner)

    def binding_target(self, binding: Binding, owner: Scope) -> str | None:
        key = binding
        if key in self._binding_cache:
            return self._binding_cache[key]
        if key in self._resolving:
            return None
        self._resolving.add(key)
        try:
            resolved = self._resolve_binding(binding, owner)
        finally:
            self._resolving.discard(key)
        self._binding_cache[key] = resolved
        return resolved

    def _resolve_binding(self, binding: Binding, owner: Scope) -> str | None:
        targets = set()
        aliases = iter(binding.alias_values)
        fallbacks = binding.fallbacks
        for index, target in enumerate(binding.targets):
            if index in fallbacks:
                if target == "<alias>":
                    next(aliases)
                continue  # only runs where the `try` body's import failed: the body's meaning holds
            if target == LOCAL:
                return None
            if target == "<alias>":
                value = next(aliases)
                # `jnp = jnp` or a chain through itself would loop; look the value up from the
                # enclosing scope when it names the bound name itself.
                target = self.qualified_name(value, owner)
                if target is None:
                    return None
            targets.add(target)
        return targets.pop() if len(targets) == 1 else None
