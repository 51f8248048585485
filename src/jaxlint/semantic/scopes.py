"""Lexical scopes and name resolution, computed lazily and only as deep as the rules ask.

libcst's own scope and qualified-name providers annotate every node of the file and cost many
times the parse. Rules here only ever ask "what does this name mean at this point", so each scope
collects its bindings the first time it is asked, with a walk that stops at nested scopes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Union

import libcst as cst

from ..syntax.walk import COMPREHENSIONS, NODE_TYPES, walk

EXPRESSION_TYPES = frozenset(t for t in NODE_TYPES if issubclass(t, cst.BaseExpression))

ScopeNode = Union[
    cst.Module, cst.FunctionDef, cst.ClassDef, cst.Lambda,
    cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
]
#: Exceptions a `try` catches to fall back to another spelling of a missing module or attribute.
MISSING_API_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError"})

#: Marks a name bound by something other than an import or a plain alias (`jnp = jax.numpy`):
#: a parameter, a loop variable, a computed value. Its meaning is unknown to the alias facts.
LOCAL = "<local>"


#: (id of a scope's node, whether `:=` may bind) -> its bindings, `global` and `nonlocal` names
CollectedBindings = dict[tuple[int, bool], tuple[dict[str, "Binding"], frozenset[str], frozenset[str]]]


@dataclass(eq=False)
class Binding:
    """Everything one scope binds to one name."""

    name: str
    #: one entry per binding statement: a dotted qualified name, or LOCAL
    targets: list[str] = field(default_factory=list)
    #: nodes that bind the name (ImportAlias, Name targets, FunctionDef …), in source order
    nodes: list[cst.CSTNode] = field(default_factory=list)
    #: for each of `nodes`, what binds it: its statement (Assign, For, Import, Del …), or the `:=`,
    #: `with` item, `except` clause, comprehension `for`, `match` pattern; a Param or a `def` or
    #: class is its own
    statements: list[cst.CSTNode] = field(default_factory=list)
    #: aliases as written (`jnp = jax.numpy`), resolved only when asked
    alias_values: list[cst.BaseExpression] = field(default_factory=list)
    #: indices (into `targets`) of fallbacks: bindings in an `except ImportError:` (or
    #: ModuleNotFoundError, AttributeError) handler of a `try` whose body binds the name too. They
    #: only run where the `try` body's spelling is missing, so the name means what that body binds.
    fallbacks: set[int] = field(default_factory=set)

    @property
    def is_import_only(self) -> bool:
        return bool(self.targets) and LOCAL not in self.targets


#: scope kind by exact node type (`isinstance` against libcst's classes is slow on the hot path)
_KINDS = {cst.Module: "module", cst.ClassDef: "class", **{t: "comprehension" for t in COMPREHENSIONS}}


def _kind(node: ScopeNode) -> str:
    return _KINDS.get(type(node), "function")


class Scope:
    #: set on the module scope when the source has no `:=`: bindings then only come from statements
    may_have_walrus = True
    #: set on the module scope of a module whose package is known: relative imports resolve from it
    package: str | None = None

    def __init__(self, node: ScopeNode, parent: "Scope | None",
                 collected: "CollectedBindings | None" = None) -> None:
        self.node = node
        self.parent = parent
        #: "module", "class", "comprehension" or "function"
        self.kind = _kind(node)
        #: what scopes of this module collected, shared by every walk of the file that is handed it
        if parent is not None:
            self.collected: CollectedBindings = parent.collected
        else:
            self.collected = collected if collected is not None else {}
        self._bindings: dict[str, Binding] | None = None
        self._outer: tuple[Scope, ...] | None = None
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()

    @property
    def bindings(self) -> dict[str, Binding]:
        if self._bindings is None:
            # Several parts of the analysis make their own Scope for the same function (the
            # semantic walk, name origins, a walk outside a check, ...): the names it binds are
            # collected once.
            key = (id(self.node), self.module_scope().may_have_walrus)
            collected = self.collected.get(key)
            if collected is None:
                bindings = _BindingCollector(self).collect()
                self.collected[key] = (bindings, frozenset(self.globals), frozenset(self.nonlocals))
            else:
                bindings, global_names, nonlocal_names = collected
                self.globals.update(global_names)
                self.nonlocals.update(nonlocal_names)
            self._bindings = bindings
        return self._bindings

    def enclosing_for_lookup(self) -> Iterator["Scope"]:
        """This scope, then the scopes Python searches after it (class bodies are skipped)."""
        yield self
        scope = self.parent
        while scope is not None:
            if scope.kind != "class":
                yield scope
            scope = scope.parent

    def module_scope(self) -> "Scope":
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def _chain(self) -> "tuple[Scope, ...]":
        """This scope, then the scopes Python searches after it."""
        outer = self._outer
        if outer is None:
            # without `self`: a scope holding itself would be a reference cycle
            outer = self._outer = tuple(self.enclosing_for_lookup())[1:]
        return (self, *outer)

    def lookup(self, name: str) -> "tuple[Scope, Binding] | None":
        """The scope that binds `name` as seen from here, and its binding; None for builtins."""
        for scope in self._chain():
            bindings = scope._bindings
            if bindings is None:
                bindings = scope.bindings  # collects its `global` and `nonlocal` names too: first
            if name in scope.globals:
                module = self.module_scope()
                binding = module.bindings.get(name)
                return (module, binding) if binding else None
            binding = bindings.get(name)
            if binding is not None and name not in scope.nonlocals:
                return scope, binding
        return None


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` written as Names and Attributes, else None."""
    parts = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def import_module_name(node: cst.ImportFrom, package: str | None = None) -> str | None:
    """The absolute module of a `from … import`; for a relative import, resolved from `package`
    (the importing module's package) when it is known, else None."""
    if node.relative:
        return relative_module(package, len(node.relative),
                               dotted_name(node.module) if node.module is not None else None)
    return dotted_name(node.module) if node.module is not None else None


def relative_module(package: str | None, level: int, module: str | None) -> str | None:
    """`from ..x import y` in package `a.b.c`: level 2 is `a.b`, so the module is `a.b.x`; None when
    the import climbs above the top package or the package is not known."""
    if package is None:
        return None
    parts = package.split(".") if package else []
    if level - 1 > len(parts) or (level - 1 == len(parts) and not module):
        return None
    base = parts[:len(parts) - (level - 1)]
    if module:
        base.append(module)
    return ".".join(base) or None


#: statements (and `with` items) that hold no binding below themselves but a `:=` in an expression:
#: what they bind is read from the node itself
_NOTHING_BOUND_BELOW = frozenset({
    cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Del, cst.Expr, cst.Return, cst.Raise, cst.Assert, cst.Pass,
    cst.Break, cst.Continue, cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.WithItem,
})


class _BindingCollector:
    """Collects the names a single scope binds, without entering nested scopes."""

    _methods: dict[type, object] = {}

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.bindings: dict[str, Binding] = {}
        self.walrus = scope.module_scope().may_have_walrus
        #: (binding, index into its targets) for each binding made, in order
        self.log: list[tuple[Binding, int]] = []

    def visit(self, node: cst.CSTNode) -> None:
        walk(node, self._enter, None)

    def _enter(self, node: cst.CSTNode, field: str) -> bool:
        kind = type(node)
        if kind in EXPRESSION_TYPES and not self.walrus:
            return False  # targets are read from their statements; only `:=` binds inside expressions
        method = self._methods.get(kind)
        if method is None:
            method = self._methods[kind] = getattr(type(self), f"visit_{kind.__name__}", _no_method)
        if method(self, node) is False:
            return False
        return self.walrus or kind not in _NOTHING_BOUND_BELOW

    def collect(self) -> dict[str, Binding]:
        node = self.scope.node
        if type(node) in (cst.FunctionDef, cst.Lambda):
            self._params(node.params)
            self.visit(node.body)
        elif isinstance(node, COMPREHENSIONS):
            comp_for: cst.CompFor | None = node.for_in
            while comp_for is not None:
                self._target(comp_for.target, comp_for)
                comp_for = comp_for.inner_for_in
        elif isinstance(node, cst.ClassDef):
            self.visit(node.body)
        else:
            for stmt in node.body:
                self.visit(stmt)
        return self.bindings

    def _add(self, name: str, target: str, node: cst.CSTNode, statement: cst.CSTNode,
             alias: cst.BaseExpression | None = None) -> None:
        binding = self.bindings.setdefault(name, Binding(name))
        self.log.append((binding, len(binding.targets)))
        binding.targets.append(target)
        binding.nodes.append(node)
        binding.statements.append(statement)
        if alias is not None:
            binding.alias_values.append(alias)

    def _params(self, params: cst.Parameters) -> None:
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            self._add(param.name.value, LOCAL, param, param)
        for star in (params.star_arg, params.star_kwarg):
            if type(star) is cst.Param:
                self._add(star.name.value, LOCAL, star, star)

    def _target(self, target: cst.BaseExpression, statement: cst.CSTNode,
                alias: cst.BaseExpression | None = None) -> None:
        if type(target) is cst.Name:
            if alias is not None and dotted_name(alias) is not None:
                self._add(target.value, "<alias>", target, statement, alias)
            else:
                self._add(target.value, LOCAL, target, statement)
        elif type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self._target(element.value, statement)
        elif type(target) is cst.StarredElement:
            self._target(target.value, statement)

    # Nested scopes bind their own name here and keep the rest to themselves.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._add(node.name.value, LOCAL, node, node)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._add(node.name.value, LOCAL, node, node)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def _comprehension(self, node) -> bool:
        # The first iterable is evaluated in the enclosing scope, and may hold a walrus.
        self.visit(node.for_in.iter)
        return False

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_Try(self, node: cst.Try) -> bool:
        """`try: import jax.numpy as jnp` / `except ImportError: import numpy as jnp`: the handler's
        bindings of names the body binds are marked as fallbacks."""
        start = len(self.log)
        self.visit(node.body)
        in_body = {binding.name for binding, _ in self.log[start:]}
        for handler in node.handlers:
            start = len(self.log)
            self.visit(handler)
            if in_body and catches_missing_api(handler):
                for binding, index in self.log[start:]:
                    if binding.name in in_body:
                        binding.fallbacks.add(index)
        for part in (node.orelse, node.finalbody):
            if part is not None:
                self.visit(part)
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        single = len(node.targets) == 1
        for target in node.targets:
            self._target(target.target, node, node.value if single else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target, node, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target, node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target, node)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target, node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name, node)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self._add(node.name.name.value, LOCAL, node, node)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self._add(node.name.value, LOCAL, node, node)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self._add(node.name.value, LOCAL, node, node)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target, node)

    def visit_Global(self, node: cst.Global) -> None:
        self.scope.globals.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.scope.nonlocals.update(item.name.value for item in node.names)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._add(alias.asname.name.value, full, alias, node)
            else:
                # `import a.b.c` binds `a` to the package `a`.
                self._add(full.split(".")[0], full.split(".")[0], alias, node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if type(node.names) is cst.ImportStar:
            return
        module = import_module_name(node, self.scope.module_scope().package if node.relative else None)
        for alias in node.names:
            if not isinstance(alias.name, cst.Name):
                continue
            local = alias.name.value
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            target = f"{module}.{alias.name.value}" if module else LOCAL
            self._add(local, target, alias, node)


def catches_missing_api(handler: cst.ExceptHandler) -> bool:
    """`except ImportError:`, `except (ModuleNotFoundError, AttributeError) as e:`, …"""
    caught = handler.type
    if caught is None:
        return False
    names = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    return any(dotted_name(name) in MISSING_API_ERRORS or dotted_name(name) in _BUILTIN_MISSING_API
               for name in names)


_BUILTIN_MISSING_API = frozenset(f"builtins.{name}" for name in MISSING_API_ERRORS)


def _no_method(self, node: cst.CSTNode) -> None:
    return None
