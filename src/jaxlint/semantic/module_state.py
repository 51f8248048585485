"""Module-level variables whose value changes after it is first bound, and what each name holds.

A module variable bound once (`SCALE = 2.0`) is a constant. One bound again at module level
(outside mutually exclusive branches such as `if`/`else` or `try`/`except`), rebound by a
module-level loop, augmented-assigned, or assigned inside a function through a `global` statement
changes while the program runs. Functions that JAX traces and caches read such a variable once, at
trace time.

Computed once per file, on first use (`ModuleState.of(ctx)`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

import libcst as cst

from .model import SemanticModel
from .scopes import EXPRESSION_TYPES as _EXPRESSIONS
from ..syntax.walk import walk

if TYPE_CHECKING:
    from .source_file import SourceFile

#: (compound statement, branch): the branches a statement sits in, from the module down
Path = tuple[tuple[int, int], ...]
_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef)


@dataclass
class _Site:
    path: Path
    #: index of the top-level statement that holds the binding
    statement: int
    #: runs more than once (a loop target, a body of a module-level loop) or updates (`+=`)
    repeats: bool
    #: the value assigned, for a plain `name = value`
    value: cst.BaseExpression | None = None


@dataclass
class ModuleState:
    #: name -> why it is not a constant ("assigned more than once at module level", …)
    reassigned: dict[str, str] = field(default_factory=dict)
    #: names bound at module level by `def`, `class` or an import
    definitions: set[str] = field(default_factory=set)
    #: name -> index of the last top-level statement that binds it at module level; None when a
    #: function rebinds it through `global` (it may change at any time)
    last_binding: dict[str, int | None] = field(default_factory=dict)
    #: id(top-level statement) -> its index in the module body
    statement_index: dict[int, int] = field(default_factory=dict)
    #: name -> values of its module-level bindings, when every one is a plain `name = value`
    _values: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    #: name -> indices of the top-level statements that bind it at module level
    binding_statements: dict[str, list[int]] = field(default_factory=dict)
    #: name -> the functions (and classes) that assign it through `global`
    global_setters: dict[str, list[cst.CSTNode]] = field(default_factory=dict)
    #: ids of the targets of top-level `name = 0` / `name: int = 0` statements (an integer literal)
    _integer_targets: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, ctx: "SourceFile") -> "ModuleState":
        """The facts for the file of `ctx`, computed on the first call and kept on the context."""
        return ctx.fact(cls, lambda: cls.compute(ctx.module, ctx if "global" in ctx.source else None))

    @classmethod
    def compute(cls, module: cst.Module, file: "SourceFile | None" = None) -> "ModuleState":
        """The facts for `module`; `global` statements are looked for only when its `file` is given
        (their semantic model records them)."""
        state = cls()
        collector = _ModuleBindings(state)
        for index, statement in enumerate(module.body):
            state.statement_index[id(statement)] = index
            collector.index = index
            collector.statement(statement, (), False)
            if type(statement) is cst.SimpleStatementLine:
                state._integer_targets.update(_integer_targets(statement))
        for name, sites in collector.sites.items():
            state.binding_statements[name] = [site.statement for site in sites]
            if all(site.value is not None for site in sites):
                state._values[name] = [site.value for site in sites]
            if name in state.definitions:
                continue
            if any(site.repeats for site in sites):
                state.reassigned[name] = "rebound at module level (by a loop or an augmented assignment)"
            elif any(not _exclusive(a.path, b.path) for i, a in enumerate(sites) for b in sites[i + 1:]):
                state.reassigned[name] = "assigned more than once at module level"
            state.last_binding[name] = max(site.statement for site in sites)
        for owner, name in _global_assignments(SemanticModel.of(file)) if file is not None else ():
            if name not in state.definitions:
                state.reassigned[name] = f"assigned in `{owner.name.value}` through `global {name}`"
                state.last_binding[name] = None
                state.global_setters.setdefault(name, []).append(owner)
        for name in state.definitions:
            state.reassigned.pop(name, None)
        return state

    def may_change_after(self, name: str, statement: cst.CSTNode) -> bool:
        """Whether `name` can be rebound once the top-level `statement` has run.

        A function defined after the last module-level binding of a name (and not rebound through
        `global`) only ever sees its final value.
        """
        if name not in self.reassigned:
            return False
        last = self.last_binding.get(name)
        index = self.statement_index.get(id(statement))
        return last is None or index is None or last >= index

    def assigns_integer_literal(self, target: cst.CSTNode) -> bool:
        """Whether `target` is a target of a statement of the module's body (not one nested in a
        block) that assigns an integer literal: `SEED = 0`, `SEED: int = 0`, `A = B = 0`."""
        return id(target) in self._integer_targets

    def module_values(self, name: str) -> list[cst.BaseExpression] | None:
        """The values a module-level name is assigned, when it is only ever bound by `name = value`."""
        return self._values.get(name)


def _integer_targets(line: cst.SimpleStatementLine) -> Iterable[int]:
    for small in line.body:
        if type(small) is cst.Assign and type(small.value) is cst.Integer:
            yield from (id(t.target) for t in small.targets)
        elif type(small) is cst.AnnAssign and type(small.value) is cst.Integer:
            yield id(small.target)


def _exclusive(a: Path, b: Path) -> bool:
    """Whether two statements sit in different branches of one `if`, `try` or `match`."""
    for (owner_a, branch_a), (owner_b, branch_b) in zip(a, b):
        if owner_a != owner_b:
            return False
        if branch_a != branch_b:
            return True
    return False


class _ModuleBindings:
    """Every statement that binds a name at module level, with the branches it sits in."""

    def __init__(self, state: ModuleState) -> None:
        self.state = state
        self.sites: dict[str, list[_Site]] = {}
        self.index = 0

    def add(self, name: str, path: Path, repeats: bool, value: cst.BaseExpression | None = None) -> None:
        self.sites.setdefault(name, []).append(_Site(path, self.index, repeats, value))

    def targets(self, target: cst.BaseExpression, path: Path, repeats: bool, value=None) -> None:
        if isinstance(target, cst.Name):
            self.add(target.value, path, repeats, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.targets(element.value, path, repeats)
        elif isinstance(target, cst.StarredElement):
            self.targets(target.value, path, repeats)

    def statements(self, body: Iterable[cst.CSTNode], path: Path, in_loop: bool) -> None:
        for statement in body:
            self.statement(statement, path, in_loop)

    def statement(self, node: cst.CSTNode, path: Path, in_loop: bool) -> None:
        if type(node) is cst.SimpleStatementLine:
            for small in node.body:
                self.small(small, path, in_loop)
        elif type(node) in (cst.FunctionDef, cst.ClassDef):
            self.state.definitions.add(node.name.value)
        elif isinstance(node, cst.If):
            self.statements(node.body.body, path + ((id(node), 0),), in_loop)
            if isinstance(node.orelse, cst.If):
                self.statement(node.orelse, path + ((id(node), 1),), in_loop)
            elif node.orelse is not None:
                self.statements(node.orelse.body.body, path + ((id(node), 1),), in_loop)
        elif isinstance(node, (cst.For, cst.While)):
            if isinstance(node, cst.For):
                self.targets(node.target, path, True)
            self.statements(node.body.body, path, True)
            if node.orelse is not None:
                self.statements(node.orelse.body.body, path, in_loop)
        elif isinstance(node, cst.Try) or type(node).__name__ == "TryStar":
            self.statements(node.body.body, path + ((id(node), 0),), in_loop)
            for index, handler in enumerate(node.handlers, start=1):
                self.statements(handler.body.body, path + ((id(node), index),), in_loop)
            if node.orelse is not None:
                self.statements(node.orelse.body.body, path + ((id(node), 0),), in_loop)
            if node.finalbody is not None:
                self.statements(node.finalbody.body.body, path, in_loop)
        elif isinstance(node, cst.With):
            for item in node.items:
                if item.asname is not None:
                    self.targets(item.asname.name, path, in_loop)
            self.statements(node.body.body, path, in_loop)
        elif isinstance(node, cst.Match):
            for index, case in enumerate(node.cases):
                self.statements(case.body.body, path + ((id(node), index),), in_loop)

    def small(self, node: cst.BaseSmallStatement, path: Path, in_loop: bool) -> None:
        if type(node) is cst.Assign:
            single = len(node.targets) == 1
            for target in node.targets:
                self.targets(target.target, path, in_loop, node.value if single else None)
        elif type(node) is cst.AnnAssign and node.value is not None:
            self.targets(node.target, path, in_loop, node.value)
        elif type(node) is cst.AugAssign:
            self.targets(node.target, path, True)
        elif type(node) is cst.Del:
            self.targets(node.target, path, True)
        elif type(node) in (cst.Import, cst.ImportFrom) and type(node.names) is not cst.ImportStar:
            for alias in node.names:
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.state.definitions.add(alias.asname.name.value)
                elif type(node) is cst.Import:
                    root = alias.name
                    while type(root) is cst.Attribute:
                        root = root.value
                    if isinstance(root, cst.Name):
                        self.state.definitions.add(root.value)
                elif isinstance(alias.name, cst.Name):
                    self.state.definitions.add(alias.name.value)


def _global_assignments(model: SemanticModel) -> list[tuple[cst.FunctionDef | cst.ClassDef, str]]:
    """(function, variable) for each module variable a function assigns through `global`, the
    functions (and classes) in the order their definitions end."""
    declared: dict[int, tuple[cst.FunctionDef | cst.ClassDef, set[str]]] = {}
    for node, scope, _ in model.sites_of(cst.Global):
        if isinstance(scope.node, _NESTED_SCOPES):  # a statement's scope is the def or class around it
            declared.setdefault(id(scope.node), (scope.node, set()))[1].update(item.name.value for item in node.names)
    found: list[tuple[cst.FunctionDef | cst.ClassDef, str]] = []
    for owner, names in sorted(declared.values(), key=lambda item: model.end_order[id(item[0])]):
        found.extend((owner, name) for name in sorted(names & _bound_directly(owner)))
    return found


def _bound_directly(owner: cst.FunctionDef | cst.ClassDef) -> set[str]:
    """Names the statements of a function or class body bind (those of nested ones left out)."""
    bound: set[str] = set()

    def bind(target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            bound.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                bind(element.value)
        elif isinstance(target, cst.StarredElement):
            bind(target.value)

    def enter(node: cst.CSTNode, field: str) -> bool:
        if type(node) in _EXPRESSIONS or isinstance(node, _NESTED_SCOPES):
            return False  # statements hold every binding that matters here; nested scopes bind their own
        if type(node) is cst.AssignTarget:
            bind(node.target)
        elif type(node) in (cst.AnnAssign, cst.AugAssign):
            bind(node.target)
        elif type(node) is cst.For:
            bind(node.target)
        elif type(node) is cst.Del:
            bind(node.target)
        elif type(node) is cst.AsName and type(node.name) is cst.Name:
            bind(node.name)
        return True

    walk(owner.body, enter, None)
    return bound
