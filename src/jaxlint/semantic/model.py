"""What one walk of a file records for every fact that needs the whole module at once.

Facts used to walk the whole module each for themselves (the traced functions' collection, the key
flow's index, the module's `global` assignments, a rename's name occurrences). `SemanticModel`
walks it once, on first use, and keeps, in source order:

* the nodes that bind or apply something (functions, lambdas, classes, calls, assignments, import
  aliases, `global` statements), each with the scope it is in and its parent (`sites`), which a
  visitor can be replayed over as if it walked the tree itself (`replay`);
* the pre-order index of each call, and the functions with a call written directly in them;
* per function: the identifiers written directly in it (its header included, nested functions
  left out), and the `name.attribute` uses in its body (nested functions included);
* every Name with its scope and parent (`name_occurrences`);
* the walk itself (`events`): every node entered and left and every change of scope, which
  `Walker.replay` plays back to the rules instead of a second walk of the tree.

It knows nothing of JAX: the facts read what they need from it.
"""
from __future__ import annotations

import bisect
from typing import Iterable, NamedTuple

import libcst as cst

from .bindings import Binding, BindingRecorder, Reference, ReferenceContext
from .scopes import Scope
from ..syntax.references import is_binding, is_reference
from ..syntax.walk import ENUMERATORS
from .walk_state import Walker, WalkState, handlers

from .source_file import SourceFile

FunctionNode = cst.FunctionDef | cst.Lambda
#: the node types `sites` holds
RECORDED = frozenset({
    cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Call, cst.Assign, cst.AnnAssign, cst.AugAssign,
    cst.ImportAlias, cst.Global,
})
_SCOPES_WITH_ATTRIBUTE_USES = frozenset({"function", "module"})
_DEFINITIONS = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})


class NameInStatement(NamedTuple):
    """A Name where it stands in the module (`SemanticModel.names_in_statements`)."""

    statement: int
    node: cst.Name
    parent: cst.CSTNode
    grandparent: cst.CSTNode | None
    in_definition: bool


class Site(NamedTuple):
    """A recorded node, the scope it is in (for a function or class: the scope around it), and its parent."""

    node: cst.CSTNode
    scope: Scope
    parent: cst.CSTNode | None


class SemanticModel:
    """One walk's record of a file (see the module docstring); `SemanticModel.of(file)` builds it once."""

    @classmethod
    def of(cls, file: "SourceFile") -> "SemanticModel":
        return file.fact(cls)

    def __init__(self, file: "SourceFile") -> None:
        self.file = file
        #: recorded nodes (`RECORDED`) in source order (pre-order)
        self.sites: list[Site] = []
        #: id(call) -> its index among the calls of the file, in pre-order
        self.call_order: dict[int, int] = {}
        #: ids of the functions and lambdas with a call written directly in them (their headers
        #: included, nested functions left out)
        self.calling: set[int] = set()
        #: id(function or lambda) -> the identifiers (Name spellings) written directly in it
        self.identifiers: dict[int, set[str]] = {}
        #: id(function, lambda or module) -> (name, attribute) for each `name.attribute` in its body
        self.attribute_uses: dict[int, set[tuple[str, str]]] = {id(file.module): set()}
        #: id(function, lambda or class) -> its rank in the order their definitions end (post-order)
        self.end_order: dict[int, int] = {}
        #: (Name, scope, parent) for every Name of the file, in source order
        self.names: list[tuple[cst.Name, Scope, cst.CSTNode]] = []
        #: id(function or lambda) -> [first, end): the indexes in `names` of the Names written in it
        self.name_ranges: dict[int, list[int]] = {}
        #: the walk itself, for `Walker.replay`: the rules' walk is a replay of it
        self.events: list = []
        #: the statements of the module's body, in order
        self.statements: list[cst.CSTNode] = []
        state = WalkState(file)
        #: id(function, lambda, class or comprehension) -> its scope, as the walk and its replay have it
        self.scopes: dict[int, Scope] = {}
        recorder = BindingRecorder(state, self.scopes)
        walker = Walker(state, [_Recorder(self, state), recorder], self.scopes)
        #: every binding of the file, in source order (`Binding.id` is the index)
        self.bindings: list[Binding] = recorder.bindings
        self._references: list[Reference] | None = None
        #: spelling -> the indexes in `names` of the Names spelling it (made on first use)
        self._names_by_spelling: dict[str, list[int]] | None = None
        #: id(scope's node) -> the calls recorded directly in that scope, in source order (on first use)
        self._calls_by_scope: dict[int, list[cst.Call]] | None = None
        root = file.module_scope
        root.recorded = False  # a scope asked for its bindings during the walk would see part of them
        try:
            walker.run(file.module, self.events)
        finally:
            root.recorded = None
        if walker.failures:  # a partial record would silently change every fact built on it
            raise walker.failures[0][1]
        root.recorded = True

    def references(self) -> list[Reference]:
        """Every Name that stands for a variable, with the bindings it may resolve to; made from the
        walk's record of the names on first use (no walk of the tree)."""
        if self._references is None:
            self._references = _references(self.names)
        return self._references

    def sites_of(self, *kinds: type) -> Iterable[Site]:
        """The recorded nodes of these exact types, in source order."""
        wanted = frozenset(kinds)
        return (site for site in self.sites if type(site.node) in wanted)

    def calls_in_scope(self, scope: Scope, after: int = -1, before: int | None = None) -> list[cst.Call]:
        """The calls recorded in this scope (not in the scopes nested in it), in source order; only
        those whose index in `call_order` is above `after` and below `before`, when given.

        Indexed once for the file: checks that ask this for every finding stay linear in its size."""
        if self._calls_by_scope is None:
            by_scope: dict[int, list[cst.Call]] = {}
            call = cst.Call
            for node, in_scope, _ in self.sites:
                if type(node) is call:
                    by_scope.setdefault(id(in_scope.node), []).append(node)
            self._calls_by_scope = by_scope
        calls = self._calls_by_scope.get(id(scope.node), [])
        order = self.call_order
        first = bisect.bisect_right(calls, after, key=lambda node: order[id(node)]) if after >= 0 else 0
        end = bisect.bisect_left(calls, before, key=lambda node: order[id(node)]) if before is not None else len(calls)
        return calls[first:end]

    def name_occurrences(self, spellings: Iterable[str], within: cst.CSTNode | None = None
                         ) -> list[tuple[cst.Name, Scope, cst.CSTNode]]:
        """Every Name node spelling one of `spellings`, with its scope and parent, in source order;
        with `within`, a node of the file, only those written in it (its header included) where it
        is a function or lambda (any Name that resolves to one of its own bindings is).

        The Names are indexed by spelling once for the file, so asking costs what it finds."""
        if self._names_by_spelling is None:
            by_spelling: dict[str, list[int]] = {}
            for index, occurrence in enumerate(self.names):
                by_spelling.setdefault(occurrence[0].value, []).append(index)
            self._names_by_spelling = by_spelling
        wanted = set(spellings)
        if len(wanted) == 1:
            indexes = self._names_by_spelling.get(next(iter(wanted)), [])
        else:
            indexes = sorted(i for spelling in wanted for i in self._names_by_spelling.get(spelling, []))
        if within is not None and id(within) in self.name_ranges:
            first, end = self.name_ranges[id(within)]
            indexes = indexes[bisect.bisect_left(indexes, first):bisect.bisect_left(indexes, end)]
        names = self.names
        return [names[i] for i in indexes]

    def statements_holding(self, nodes: Iterable[cst.CSTNode]) -> dict[int, cst.CSTNode]:
        """id(node) -> the statement of the module's body that holds it (or is it), for each of the
        nodes the walk met (read from the recorded walk: no walk of the tree)."""
        wanted = {id(node) for node in nodes}
        found: dict[int, cst.CSTNode] = {}
        scope_type = Scope
        enumerators = ENUMERATORS
        depth = 0
        statement = None
        for item in self.events:
            if item is None:
                depth -= 1
                continue
            kind = type(item)
            if kind is scope_type:
                continue
            if depth == 1:  # a child of the module: one of its statements
                statement = item
            if id(item) in wanted:
                found[id(item)] = statement
                if len(found) == len(wanted):
                    break
            if enumerators[kind] is not None:  # a leaf is left where it is entered
                depth += 1
        return found

    def names_in_statements(self, spellings: Iterable[str]) -> list[NameInStatement]:
        """Every Name spelling one of `spellings`, in source order, with the index of the module's
        statement that holds it, its parent and grandparent, and whether a function, lambda or class
        holds it (a header included). Read from the recorded walk: no walk of the tree."""
        wanted = frozenset(spellings)
        found: list[NameInStatement] = []
        scope_type, name_type, enumerators, definitions = Scope, cst.Name, ENUMERATORS, _DEFINITIONS
        ancestors: list[cst.CSTNode] = []
        inside = 0  # how many of the ancestors are definitions
        statement = -1
        for item in self.events:
            if item is None:
                if type(ancestors.pop()) in definitions:
                    inside -= 1
                continue
            kind = type(item)
            if kind is scope_type:
                continue
            if len(ancestors) == 1:  # a child of the module: its next statement
                statement += 1
            if kind is name_type:
                if item.value in wanted:
                    found.append(NameInStatement(statement, item, ancestors[-1],
                                                 ancestors[-2] if len(ancestors) > 1 else None, inside > 0))
            elif enumerators[kind] is not None:  # a leaf is left where it is entered
                ancestors.append(item)
                if kind in definitions:
                    inside += 1
        return found

    def replay(self, visitor: object) -> list[BaseException]:
        """Calls the visitor's `visit_<Node>` methods on the recorded nodes, in source order, as a walk
        would; `visitor.ctx` is set to a `ReplayState` that says where each node is.

        A visitor whose method raises is dropped for the rest of the replay, as a walk drops it; the
        exceptions are returned. Only types in `RECORDED` can be replayed, and no `leave_` methods.
        """
        if handlers(type(visitor), "leave_"):
            raise TypeError(f"{type(visitor).__name__}: a replay calls no leave_ methods")
        methods = {}
        for node_type, name in handlers(type(visitor), "visit_"):
            if node_type not in RECORDED:
                raise TypeError(f"{type(visitor).__name__}.{name}: {node_type.__name__} nodes are not recorded")
            methods[node_type] = getattr(visitor, name)
        state = ReplayState(self.file)
        visitor.ctx = state
        for node, scope, parent in self.sites:
            method = methods.get(type(node))
            if method is not None:
                state.scope = scope
                state.parent = parent
                try:
                    method(node)
                except Exception as exc:  # as `Walker` does with a visitor that raises
                    return [exc]
        return []


def _references(names: list[tuple[cst.Name, Scope, cst.CSTNode]]) -> list[Reference]:
    found: list[Reference] = []
    for node, scope, parent in names:
        if not is_reference(node, parent):
            continue
        if type(parent) is cst.Del:
            context = ReferenceContext.DEL
        elif is_binding(node, parent):
            context = ReferenceContext.STORE
        else:
            context = ReferenceContext.LOAD
        resolved = scope.lookup(node.value)
        binding_ids = tuple(binding.id for binding in resolved[1].recorded) if resolved is not None else ()
        found.append(Reference(len(found), node, scope, context, binding_ids))
    return found


class ReplayState:
    """Where a replayed node is: what a visitor reads of `WalkState` (its scope and parent)."""

    __slots__ = ("file", "scope", "parent")

    def __init__(self, file: "SourceFile") -> None:
        self.file = file
        self.scope: Scope = file.module_scope
        self.parent: cst.CSTNode | None = None

    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        """`jnp.sum` -> `jax.numpy.sum` as seen from the node's scope; None when unknown."""
        return self.file.names.qualified_name(node, self.scope)

    def written_name(self, node: cst.BaseExpression) -> str | None:
        """The qualified name with JAX's old paths kept as written (`jax.api.grad`, not `jax.grad`)."""
        return self.file.names.written_name(node, self.scope)


class _Recorder:
    """The visitor of the model's walk."""

    def __init__(self, model: SemanticModel, state: WalkState) -> None:
        self.model = model
        self.state = state
        self.sites = model.sites
        self.names = model.names
        #: the functions and lambdas around the current node, innermost last, and their identifiers
        self.functions: list[FunctionNode] = []
        self.identifiers: list[set[str]] = []

    def _site(self, node: cst.CSTNode) -> None:
        ancestors = self.state.ancestors
        self.sites.append(Site(node, self.state.scope, ancestors[-2] if len(ancestors) >= 2 else None))

    visit_Assign = visit_AnnAssign = visit_AugAssign = visit_ImportAlias = visit_Global = _site

    def _statement(self, node: cst.CSTNode) -> None:
        if len(self.state.ancestors) == 2:  # a child of the module
            self.model.statements.append(node)

    visit_SimpleStatementLine = visit_If = visit_For = visit_While = visit_Try = visit_TryStar = _statement
    visit_With = visit_Match = _statement

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._statement(node)
        self._site(node)

    def visit_FunctionDef(self, node: FunctionNode) -> None:
        self._statement(node)
        self._site(node)
        own: set[str] = set()
        self.model.identifiers[id(node)] = own
        self.model.name_ranges[id(node)] = [len(self.names), -1]
        self.functions.append(node)
        self.identifiers.append(own)

    visit_Lambda = visit_FunctionDef

    def leave_FunctionDef(self, node: FunctionNode) -> None:
        self.model.name_ranges[id(node)][1] = len(self.names)
        self.functions.pop()
        self.identifiers.pop()
        self.leave_ClassDef(node)

    leave_Lambda = leave_FunctionDef

    def leave_ClassDef(self, node: cst.CSTNode) -> None:
        end_order = self.model.end_order
        end_order[id(node)] = len(end_order)

    def visit_Call(self, node: cst.Call) -> None:
        self._site(node)
        order = self.model.call_order
        order[id(node)] = len(order)
        if self.functions:
            self.model.calling.add(id(self.functions[-1]))

    def visit_Name(self, node: cst.Name) -> None:
        state = self.state
        self.names.append((node, state.scope, state.ancestors[-2]))  # a Name is never the root
        if self.identifiers:
            self.identifiers[-1].add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        base = node.value
        if type(base) is not cst.Name:
            return
        use = (base.value, node.attr.value)
        uses = self.model.attribute_uses
        # the scopes a node is in are those whose body holds it: a function's header is outside
        scope = self.state.scope
        while scope is not None:
            if scope.kind in _SCOPES_WITH_ATTRIBUTE_USES:
                found = uses.get(id(scope.node))
                if found is None:
                    found = uses[id(scope.node)] = set()
                found.add(use)
            scope = scope.parent


SourceFile.record_bindings = SemanticModel.of
