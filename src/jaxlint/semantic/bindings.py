"""Every binding of a name and every reference to one, as the semantic model's walk records them.

A `Binding` is one place where a scope binds a name (an import, an assignment target, a parameter,
a `def`, a loop variable …), in source order, with where it sits: its scope, the branches of the
compound statements around it (to tell `if`/`else` alternatives from sequential rebinding), and
whether a loop of its scope runs it again each iteration. A `Reference` is one Name read, bound or
deleted, with the bindings it may resolve to.

Which scope a binding belongs to follows Python, with two simplifications the name resolver has
always made: a name declared `global` or `nonlocal` is still recorded in the declaring scope (the
lookup redirects it), and a `:=` in a comprehension's element (not its first iterable) is not
recorded at all.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from ..syntax.walk import COMPREHENSIONS
from .scopes import (ALIAS, LOCAL, Binding as ScopeBinding, Scope, StarImport, catches_missing_api, dotted_name,
                     import_module_name)
from .star_imports import star_exports

if TYPE_CHECKING:
    from .walk_state import WalkState

#: (compound statement's id, branch) for each `if`, `try` or `match` branch around a binding, from
#: its scope's top down: `if` body 0 and `else`/`elif` 1, `try` body and `else` 0 and handler k k,
#: `match` case k k. Two bindings in different branches of one statement never both run.
BranchPath = tuple[tuple[int, int], ...]


class BindingKind(enum.Enum):
    """What binds the name."""

    IMPORT = "import"                    # `import a.b`, `import a.b as c`
    IMPORT_FROM = "import from"          # `from m import a`, `from m import a as b`
    ASSIGNMENT = "assignment"            # a target of `=`
    AUGMENTED = "augmented assignment"   # `x += 1`
    ANNOTATED = "annotated assignment"   # `x: int = 1`, or `x: int` alone (value None)
    PARAMETER = "parameter"
    FUNCTION = "function"                # `def`
    CLASS = "class"
    LOOP_TARGET = "loop target"          # `for x in …`
    WITH_ITEM = "with item"              # `with … as x`
    EXCEPT_NAME = "except name"          # `except E as e`
    WALRUS = "walrus"                    # `(x := …)`
    COMPREHENSION_TARGET = "comprehension target"
    MATCH_CAPTURE = "match capture"      # `case [x, *rest]`, `case P() as x`
    DELETION = "deletion"                # `del x`


#: kinds bound by a statement that imports
IMPORTS = frozenset({BindingKind.IMPORT, BindingKind.IMPORT_FROM})


class Binding(NamedTuple):
    """One binding of one name (see the module docstring)."""

    #: its index in `SemanticModel.bindings` (source order)
    id: int
    name: str
    kind: BindingKind
    #: what binds: the target Name, the ImportAlias, the Param, the `def`, the class, the `except`
    #: handler, the match pattern
    node: cst.CSTNode
    #: the statement (or `with` item, `except` handler, comprehension `for`, `:=`, match pattern)
    #: that binds; a Param, a `def` and a class are their own
    statement: cst.CSTNode
    #: the value of a plain `name = value` or `name: T = value` (one target, no unpacking), else None
    value: cst.BaseExpression | None
    #: where the name sits in an unpacking target: `a, (b, c) = …` binds `c` at (1, 1); () for a
    #: whole target
    unpack_path: tuple[int, ...]
    scope: "Scope"
    branch: BranchPath
    #: a `for`/`while` loop of its scope runs it once per iteration (in the body, or the loop's own
    #: target); comprehension targets too
    in_loop: bool
    #: the statement of the module's body that holds it (a parameter's: the one holding its `def`)
    top_level: cst.CSTNode | None

    @property
    def order(self) -> int:
        """Its rank in source order among the bindings of the file."""
        return self.id


class ReferenceContext(enum.Enum):
    LOAD = "load"
    STORE = "store"
    DEL = "del"


class Reference(NamedTuple):
    """One Name that stands for a variable, where it is written."""

    #: its index in `SemanticModel.references()`
    id: int
    node: cst.Name
    #: the scope it is written in
    scope: "Scope"
    context: ReferenceContext
    #: the bindings it may resolve to (every binding of the name in the scope it resolves in); ()
    #: for a builtin or an unknown name
    binding_ids: tuple[int, ...]


_OWNERS = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
_COMPREHENSIONS = frozenset(COMPREHENSIONS)
_BRANCHING = frozenset({cst.If, cst.Try, cst.TryStar, cst.Match, cst.For, cst.While})
_SEQUENCE_TARGETS = (cst.Tuple, cst.List)


class _OpenTry:
    """A `try` the walk is in: which names its body binds, and where its current handler starts."""

    __slots__ = ("node", "scope", "start", "body_names", "handler_start")

    def __init__(self, node: cst.Try, scope: "Scope", start: int) -> None:
        self.node = node
        self.scope = scope
        self.start = start
        self.body_names: set[str] | None = None
        self.handler_start = start


class BindingRecorder:
    """The visitor of the model's walk that records every binding (`bindings`), fills each scope's
    record (`Scope.bindings`, `globals`, `nonlocals`) and marks import fallbacks (see
    `scopes.Binding.fallbacks`)."""

    def __init__(self, state: "WalkState", scopes: dict[int, "Scope"]) -> None:
        self.state = state
        #: the walk's scopes: a function's, lambda's or class's is made here, where the walk meets
        #: it, so that its parameters can be bound before its body is entered
        self.scopes = scopes
        self.bindings: list[Binding] = []
        #: per binding: the scope's entry for its name, and its index there
        self._entries: list[tuple[ScopeBinding, int]] = []
        self._tries: list[_OpenTry] = []
        self._package = state.file.module_scope.package

    # -- recording ------------------------------------------------------------------------------
    def _add(self, scope: "Scope", name: str, kind: BindingKind, node: cst.CSTNode, statement: cst.CSTNode,
             target: str = LOCAL, value: cst.BaseExpression | None = None, unpack_path: tuple[int, ...] = (),
             alias: cst.BaseExpression | None = None, in_loop: bool = False, placed: bool = True) -> None:
        """One binding; `placed`: its branches and loops are read from the walk's ancestors (else it
        has none: a parameter, bound in the header outside its function's body)."""
        branch: BranchPath = ()
        ancestors = self.state.ancestors
        if placed:
            branch, looped = _placement(ancestors, scope.node)
            in_loop = in_loop or looped
        entry = scope._bindings.get(name)
        if entry is None:
            entry = scope._bindings[name] = ScopeBinding(name)
        self._entries.append((entry, len(entry.targets)))
        entry.targets.append(target)
        entry.nodes.append(node)
        entry.statements.append(statement)
        if alias is not None:
            entry.alias_values.append(alias)
        bindings = self.bindings
        binding = Binding(len(bindings), name, kind, node, statement, value, unpack_path, scope, branch, in_loop,
                          ancestors[1] if len(ancestors) > 1 else None)
        entry.recorded.append(binding)
        bindings.append(binding)

    def _target(self, target: cst.BaseExpression, statement: cst.CSTNode, kind: BindingKind,
                value: cst.BaseExpression | None = None, path: tuple[int, ...] = (), in_loop: bool = False,
                scope: "Scope | None" = None) -> None:
        """The names a target binds (`a, (b, *c)` binds a, b and c); `value` is what a whole Name
        target is assigned."""
        kind_of_target = type(target)
        if scope is None:
            scope = self.state.scope
        if kind_of_target is cst.Name:
            if value is not None and dotted_name(value) is not None:
                self._add(scope, target.value, kind, target, statement, ALIAS, value, path, value, in_loop)
            else:
                self._add(scope, target.value, kind, target, statement, LOCAL, value, path, None, in_loop)
        elif kind_of_target in _SEQUENCE_TARGETS:
            for index, element in enumerate(target.elements):
                self._target(element.value, statement, kind, None, (*path, index), in_loop, scope)
        elif kind_of_target is cst.StarredElement:
            self._target(target.value, statement, kind, None, path, in_loop, scope)

    # -- scopes and their own names -------------------------------------------------------------
    def _own_scope(self, node: cst.FunctionDef | cst.ClassDef | cst.Lambda) -> "Scope":
        scope = self.scopes.get(id(node))
        if scope is None:
            scope = self.scopes[id(node)] = Scope(node, self.state.scope)
        return scope

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._add(self.state.scope, node.name.value, BindingKind.FUNCTION, node, node)
        self._parameters(node)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._parameters(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._add(self.state.scope, node.name.value, BindingKind.CLASS, node, node)
        self._own_scope(node)

    def _parameters(self, node: cst.FunctionDef | cst.Lambda) -> None:
        scope = self._own_scope(node)
        params = node.params
        # this order (stars last) is the order the scope's names have always had
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            self._add(scope, param.name.value, BindingKind.PARAMETER, param, param, placed=False)
        for star in (params.star_arg, params.star_kwarg):
            if type(star) is cst.Param:
                self._add(scope, star.name.value, BindingKind.PARAMETER, star, star, placed=False)

    def visit_Global(self, node: cst.Global) -> None:
        self.state.scope.globals.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.state.scope.nonlocals.update(item.name.value for item in node.names)

    # -- statements -----------------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value if len(node.targets) == 1 else None
        for target in node.targets:
            self._target(target.target, node, BindingKind.ASSIGNMENT, value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target, node, BindingKind.ANNOTATED, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target, node, BindingKind.AUGMENTED)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target, node, BindingKind.DELETION)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target, node, BindingKind.LOOP_TARGET, in_loop=True)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name, node, BindingKind.WITH_ITEM)

    def visit_Import(self, node: cst.Import) -> None:
        scope = self.state.scope
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if scope.kind == "module":
                scope.imported_modules.add(full)
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                self._add(scope, alias.asname.name.value, BindingKind.IMPORT, alias, node, full)
            else:
                # `import a.b.c` binds `a` to the package `a`
                root = full.split(".")[0]
                self._add(scope, root, BindingKind.IMPORT, alias, node, root)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        scope = self.state.scope
        module = import_module_name(node, self._package if node.relative else None)
        if scope.kind == "module" and module is not None:
            scope.imported_modules.add(module)
        if type(node.names) is cst.ImportStar:
            # only a module's top level may star-import (CPython rejects it elsewhere)
            if scope.kind == "module":
                scope.star_imports.append(
                    StarImport(node, module, len(self.bindings), star_exports(self.state.file, module)))
            return
        for alias in node.names:
            if type(alias.name) is not cst.Name:
                continue
            local = alias.name.value
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                local = alias.asname.name.value
            self._add(scope, local, BindingKind.IMPORT_FROM, alias, node,
                      f"{module}.{alias.name.value}" if module else LOCAL)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self._add(self.state.scope, node.name.value, BindingKind.MATCH_CAPTURE, node, node)

    visit_MatchStar = visit_MatchAs

    # -- expressions ----------------------------------------------------------------------------
    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        scope = self._walrus_scope()
        if scope is not None:
            self._target(node.target, node, BindingKind.WALRUS, scope=scope)

    def _walrus_scope(self) -> "Scope | None":
        """The scope a `:=` at the current node binds in: the function, lambda, class or module
        around it, through the first iterables of comprehensions (evaluated outside them); None in
        a comprehension's element or condition, or in a header (decorators, defaults, bases)."""
        ancestors = self.state.ancestors
        index = len(ancestors) - 2
        while index >= 0:
            node = ancestors[index]
            kind = type(node)
            if kind in _OWNERS:
                return self.scopes.get(id(node)) if ancestors[index + 1] is node.body else None
            if kind in _COMPREHENSIONS:
                if not (ancestors[index + 1] is node.for_in and ancestors[index + 2] is node.for_in.iter):
                    return None
            index -= 1
        return self.state.file.module_scope

    def visit_CompFor(self, node: cst.CompFor) -> None:
        scope = self.state.scope
        ancestors = self.state.ancestors
        index = len(ancestors) - 2
        while type(ancestors[index]) is cst.CompFor:
            index -= 1
        # a comprehension that is a lambda's whole body has no scope of its own in the walk: its
        # variables are bound nowhere, as they always were
        if scope.node is ancestors[index]:
            self._target(node.target, node, BindingKind.COMPREHENSION_TARGET, in_loop=True)

    # -- `try` fallbacks ------------------------------------------------------------------------
    def visit_Try(self, node: cst.Try) -> None:
        self._tries.append(_OpenTry(node, self.state.scope, len(self.bindings)))

    def leave_Try(self, node: cst.Try) -> None:
        self._tries.pop()

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        tries = self._tries
        if tries and tries[-1].node is self.state.parent:
            open_try = tries[-1]
            if open_try.body_names is None:  # the first handler: the body is behind
                open_try.body_names = {b.name for b in self.bindings[open_try.start:] if b.scope is open_try.scope}
            open_try.handler_start = len(self.bindings)
        if node.name is not None and type(node.name.name) is cst.Name:
            self._add(self.state.scope, node.name.name.value, BindingKind.EXCEPT_NAME, node, node)

    def leave_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        """A handler of a missing module or attribute rebinding a name its `try` body binds: a fallback."""
        tries = self._tries
        if not (tries and tries[-1].node is self.state.parent):
            return
        open_try = tries[-1]
        if not open_try.body_names or not catches_missing_api(node):
            return
        for binding in self.bindings[open_try.handler_start:]:
            if binding.scope is open_try.scope and binding.name in open_try.body_names:
                entry, index = self._entries[binding.id]
                entry.fallbacks.add(index)


def _placement(ancestors: list[cst.CSTNode], scope_node: cst.CSTNode) -> tuple[BranchPath, bool]:
    """The branches around the current node, up to its scope's node, and whether a loop there runs
    it once per iteration."""
    branch: list[tuple[int, int]] = []
    in_loop = False
    index = len(ancestors) - 2
    while index >= 0:
        node = ancestors[index]
        kind = type(node)
        if node is scope_node or kind in _OWNERS:
            break
        if kind in _BRANCHING:
            child = ancestors[index + 1]
            if kind is cst.If:
                if child is node.body:
                    branch.append((id(node), 0))
                elif child is node.orelse:
                    branch.append((id(node), 1))
            elif kind is cst.For:
                in_loop = in_loop or child is node.body or child is node.target
            elif kind is cst.While:
                in_loop = in_loop or child is node.body or child is node.test
            elif kind is cst.Match:
                for number, case in enumerate(node.cases):
                    if case is child:
                        branch.append((id(node), number))
            elif child is node.body or child is node.orelse:  # a `try`
                branch.append((id(node), 0))
            else:
                for number, handler in enumerate(node.handlers, start=1):
                    if handler is child:
                        branch.append((id(node), number))
        index -= 1
    branch.reverse()
    return tuple(branch), in_loop


def reached_through_module(expr: cst.BaseExpression, scope: Scope) -> bool:
    """Whether `mod.f` (or `pkg.mod.f`) starts from a name bound only by `import mod` (as opposed to a
    name taken `from` a module, which may be any object): its attributes are then the module's own,
    the same objects at every access."""
    if type(expr) is not cst.Attribute:
        return False
    base = expr.value
    while type(base) is cst.Attribute:
        base = base.value
    if type(base) is not cst.Name:
        return False
    found = scope.lookup(base.value)
    return found is not None and bool(found[1].recorded) \
        and all(binding.kind is BindingKind.IMPORT for binding in found[1].recorded)
