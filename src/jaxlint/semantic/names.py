"""What a name or dotted expression refers to: `jnp.sum` -> `jax.numpy.sum`, from imports and aliases."""
from __future__ import annotations

import builtins

import libcst as cst

from ..catalogue.deprecations import old_path_aliases
from .scopes import LOCAL, Binding, Scope

BUILTIN_NAMES = frozenset(dir(builtins))
_NAME = cst.Name
_ATTRIBUTE = cst.Attribute


def canonical_path(name: str, aliases: dict[str, str]) -> str:
    """`jax.api.grad` -> `jax.grad`, `jax.experimental.stax.Dense` -> `jax.example_libraries.stax.Dense`:
    a path through an old JAX name written as the path of the same object today. Only names that
    start with `jax.` can be old JAX paths."""
    if not name.startswith("jax."):
        return name
    prefix = name
    while True:
        new = aliases.get(prefix)
        if new is not None:
            return new + name[len(prefix):]
        cut = prefix.rfind(".")
        if cut <= 3:  # down to `jax`: nothing left to rename
            return name
        prefix = prefix[:cut]


class NameResolver:
    """Resolves expressions to fully qualified names, as seen from a given scope.

    Old JAX paths that name the same object as a current one (`from jax import api; api.jit`,
    `jax.tree_multimap`) resolve to the current name, so that every rule knows them; `written_name`
    keeps the path as written, for the rule that reports the old names themselves.

    A name whose bindings disagree (`np` imported from NumPy in one branch and from jax.numpy in
    another) or that is bound to a computed value resolves to None: rules then stay silent. An
    import fallback (`try: import jax.numpy as jnp` / `except ImportError: import numpy as jnp`)
    is not a disagreement: the code is checked with the meaning the `try` body gives the name.

    A module-level name is also bound by the module's star imports (`Scope.star_imports`): a name
    one of them binds joins the name's other bindings, and one that may bind names not known makes
    every name bound before it, and every builtin, resolve to None.
    """

    def __init__(self) -> None:
        self._binding_cache: dict[Binding, str | None] = {}
        self._resolving: set[Binding] = set()
        #: id(node) -> (the scope it was resolved in, the answer): several rules ask about the same
        #: call's function at the same node; the scope is kept (and so kept alive) to check it
        self.answers: dict[int, tuple[Scope, str | None]] = {}
        #: the same for `written_name`, which `qualified_name` starts from
        self._written: dict[int, tuple[Scope, str | None]] = {}
        self._aliases = old_path_aliases()

    def qualified_name(self, node: cst.BaseExpression, scope: Scope) -> str | None:
        answer = self.answers.get(id(node))
        if answer is not None and answer[0] is scope:
            return answer[1]
        resolved = self.written_name(node, scope)
        if resolved is not None:
            resolved = canonical_path(resolved, self._aliases)
        self.answers[id(node)] = (scope, resolved)
        return resolved

    def written_name(self, node: cst.BaseExpression, scope: Scope) -> str | None:
        """The qualified name with JAX's old paths kept as written (`jax.api.grad`)."""
        answer = self._written.get(id(node))
        if answer is not None and answer[0] is scope:
            return answer[1]
        written = self._qualify(node, scope)
        self._written[id(node)] = (scope, written)
        return written

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
        if found is not None and found[0].kind != "module":
            return self.binding_target(found[1], found[0])
        root = scope.module_scope()
        if root.star_imports:
            return self._through_star_imports(name, found[1] if found is not None else None, root)
        if found is None:
            return f"builtins.{name}" if name in BUILTIN_NAMES else None
        return self.binding_target(found[1], found[0])

    def _through_star_imports(self, name: str, binding: Binding | None, root: Scope) -> str | None:
        """A module-level name where the module star-imports: what its own bindings and its star
        imports bind to it, when they agree. A star import of a module whose names are not all known
        may rebind any name bound before it and shadow any builtin; one that binds the name only in
        some versions of a library (`max` in NumPy 2, not in NumPy 1) may leave the builtin."""
        targets = set()
        first = None
        if binding is not None:
            target = self.binding_target(binding, root)
            if target is None:
                return None
            targets.add(target)
            first = min((b.order for b in binding.recorded), default=None)
        bound = binding is not None
        for star in root.star_imports:
            exports = star.exports
            if name in exports.names:
                target = exports.names[name]
                if target is None:
                    return None
                targets.add(target)
                bound = bound or name not in exports.maybe
            elif exports.open and (first is None or first < star.order):
                return None
        if not bound and name in BUILTIN_NAMES:
            targets.add(f"builtins.{name}")
        return targets.pop() if len(targets) == 1 else None

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
