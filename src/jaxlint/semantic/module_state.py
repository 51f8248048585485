"""Module-level variables whose value changes after it is first bound, and what each name holds.

A module variable bound once (`SCALE = 2.0`) is a constant. One bound again at module level
(outside mutually exclusive branches such as `if`/`else` or `try`/`except`), rebound by a
module-level loop, augmented-assigned, or assigned inside a function through a `global` statement
changes while the program runs. Functions that JAX traces and caches read such a variable once, at
trace time.

Read from the bindings the semantic model's walk records, once per file, on first use
(`ModuleState.of(ctx)`): no walk of its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from .bindings import Binding, BindingKind, BranchPath as Path
from .loops import names_read
from .model import SemanticModel
from .scopes import Scope

if TYPE_CHECKING:
    from .source_file import SourceFile

_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef)
#: module-level bindings that define a name once and for all (a rebinding of one is not tracked)
_DEFINITIONS = frozenset({BindingKind.FUNCTION, BindingKind.CLASS, BindingKind.IMPORT, BindingKind.IMPORT_FROM})
#: module-level bindings that give a name a new value
_ASSIGNMENTS = frozenset({BindingKind.ASSIGNMENT, BindingKind.ANNOTATED, BindingKind.AUGMENTED,
                          BindingKind.DELETION, BindingKind.LOOP_TARGET, BindingKind.WITH_ITEM})
#: what a function or class body binds of a name it declares `global`
_STATEMENT_TARGETS = frozenset({BindingKind.ASSIGNMENT, BindingKind.ANNOTATED, BindingKind.AUGMENTED,
                                BindingKind.LOOP_TARGET, BindingKind.DELETION})


@dataclass
class ModuleState:
    """The module-level variables that change, and where each name is bound (see the module
    docstring); read from the semantic model's bindings."""

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
    #: name -> the class whose constructor alone sets it up (`global mesh; mesh = make_mesh(args)` in
    #: `Trainer.__init__`), when the module builds no instance or one, once, at its top level
    constructor_setups: dict[str, cst.ClassDef] = field(default_factory=dict)
    #: ids of the targets of top-level `name = 0` / `name: int = 0` statements (an integer literal)
    _integer_targets: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, ctx: "SourceFile") -> "ModuleState":
        """The facts for the file of `ctx`, computed on the first call and kept on the context."""
        return ctx.fact(cls, lambda: cls.compute(SemanticModel.of(ctx)))

    @classmethod
    def compute(cls, model: SemanticModel) -> "ModuleState":
        """The facts read from `model`: its module scope's bindings and `global` statements."""
        state = cls()
        state.statement_index = index = {id(statement): number for number, statement in enumerate(model.statements)}
        sites: dict[str, list[Binding]] = {}
        for name, entry in model.file.module_scope.bindings.items():
            for binding in entry.recorded:
                kind = binding.kind
                if kind in _DEFINITIONS:
                    state.definitions.add(name)
                elif kind in _ASSIGNMENTS and not (kind is BindingKind.ANNOTATED and binding.value is None):
                    sites.setdefault(name, []).append(binding)
                    if _assigns_integer_at_top(binding):
                        state._integer_targets.add(id(binding.node))
        for name, bindings in sites.items():
            statements = state.binding_statements[name] = [index[id(b.top_level)] for b in bindings]
            if all(b.value is not None for b in bindings):
                state._values[name] = [b.value for b in bindings]
            if name in state.definitions:
                continue
            if any(b.in_loop or b.kind in (BindingKind.AUGMENTED, BindingKind.DELETION) for b in bindings):
                state.reassigned[name] = "rebound at module level (by a loop or an augmented assignment)"
            elif any(not _exclusive(a.branch, b.branch) for i, a in enumerate(bindings) for b in bindings[i + 1:]):
                state.reassigned[name] = "assigned more than once at module level"
            state.last_binding[name] = max(statements)
        assignments = _global_assignments(model)
        setters: dict[str, list[cst.CSTNode]] = {}
        for owner, name in assignments:
            setters.setdefault(name, []).append(owner)
        for owner, name in assignments:
            if name in state.definitions:
                continue
            state.global_setters.setdefault(name, []).append(owner)
            setup = _setup_assignment(name, setters[name], sites.get(name, []), model)
            if setup is not None and _run_once(setup, model):
                continue
            owner_class = _constructor_class(setup, model) if setup is not None else None
            if owner_class is not None:
                state.constructor_setups[name] = owner_class
            state.reassigned[name] = f"assigned in `{owner.name.value}` through `global {name}`"
            state.last_binding[name] = None
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


def _assigns_integer_at_top(binding: Binding) -> bool:
    """`SEED = 0`, `SEED: int = 0`, `A = B = 0` as a statement of the module's body (not nested in
    a block): a whole target of an integer literal."""
    return (binding.kind in (BindingKind.ASSIGNMENT, BindingKind.ANNOTATED) and not binding.unpack_path
            and type(binding.top_level) is cst.SimpleStatementLine and type(binding.statement.value) is cst.Integer)


def _setup_assignment(name: str, setters: list[cst.CSTNode], module_bindings: list[Binding],
                      model: SemanticModel) -> cst.FunctionDef | None:
    """The one function that sets the module variable up: it assigns it through `global`, once, not
    in a loop and not from its old value, and the module itself at most gives the variable a
    placeholder (`optimizer = None`, `mesh: Mesh`). Whether the setup runs before the functions that
    read it are traced is for the caller to say: when the module calls it once from its top level
    (`main()` configures, then trains), reading the variable there is reading a constant."""
    if len(setters) != 1 or len(module_bindings) > 1:
        return None
    if module_bindings and not _placeholder(module_bindings[0].value):
        return None
    setter = setters[0]
    if type(setter) is not cst.FunctionDef:
        return None
    entry = model.scopes[id(setter)].bindings.get(name)
    if entry is None:
        return None
    writes = [b for b in entry.recorded if b.kind in _STATEMENT_TARGETS or b.kind is BindingKind.WITH_ITEM]
    if len(writes) != 1 or writes[0].in_loop or writes[0].kind not in (BindingKind.ASSIGNMENT, BindingKind.ANNOTATED):
        return None
    if writes[0].value is None or name in names_read(writes[0].value):
        return None  # `rate = rate * 0.5`: an update of the old value, made each time it is called
    return setter


def _constructor_class(setter: cst.FunctionDef, model: SemanticModel) -> cst.ClassDef | None:
    """The class whose `__init__` is `setter`, when the module builds no instance of it (its users
    are elsewhere) or one, once, at its top level: each instance sets the variable up as it is built,
    before any method of it can run."""
    scope = model.scopes[id(setter)].parent
    if setter.name.value != "__init__" or scope is None or scope.kind != "class":
        return None
    owner = scope.node
    if not isinstance(owner, cst.ClassDef):
        return None
    if _calls_of(owner, model) and not _run_once(owner, model):
        return None
    return owner


def _calls_of(definition: cst.FunctionDef | cst.ClassDef, model: SemanticModel) -> list:
    return [site for site in model.sites_of(cst.Call)
            if type(site.node.func) is cst.Name and site.node.func.value == definition.name.value]


def _run_once(function: cst.FunctionDef | cst.ClassDef, model: SemanticModel) -> bool:
    """Whether the module calls `function` exactly once, from its top level and not in a loop
    (`main()` under `if __name__ == "__main__":`): a setter called from elsewhere may run again."""
    calls = _calls_of(function, model)
    if len(calls) != 1 or calls[0].scope.kind != "module":
        return False
    statement = model.statements_holding([calls[0].node]).get(id(calls[0].node))
    return statement is not None and type(statement) not in (cst.For, cst.While)


def _placeholder(value: cst.BaseExpression | None) -> bool:
    """`None`, a literal, or nothing (an annotation alone): what a module writes before its setup."""
    return value is None or type(value) in (cst.Integer, cst.Float, cst.SimpleString) \
        or type(value) is cst.Name and value.value in ("None", "True", "False")


def _exclusive(a: Path, b: Path) -> bool:
    """Whether two statements sit in different branches of one `if`, `try` or `match`."""
    for (owner_a, branch_a), (owner_b, branch_b) in zip(a, b):
        if owner_a != owner_b:
            return False
        if branch_a != branch_b:
            return True
    return False


def _global_assignments(model: SemanticModel) -> list[tuple[cst.FunctionDef | cst.ClassDef, str]]:
    """(function, variable) for each module variable a function assigns through `global`, the
    functions (and classes) in the order their definitions end."""
    declared: dict[int, tuple[cst.FunctionDef | cst.ClassDef, set[str]]] = {}
    for node, scope, _ in model.sites_of(cst.Global):
        if isinstance(scope.node, _NESTED_SCOPES):  # a statement's scope is the def or class around it
            declared.setdefault(id(scope.node), (scope.node, set()))[1].update(item.name.value for item in node.names)
    found: list[tuple[cst.FunctionDef | cst.ClassDef, str]] = []
    for owner, names in sorted(declared.values(), key=lambda item: model.end_order[id(item[0])]):
        found.extend((owner, name) for name in sorted(names & _bound_directly(model.scopes[id(owner)])))
    return found


def _bound_directly(scope: Scope) -> set[str]:
    """Names the statements of a function or class body bind (those of nested ones left out): the
    targets of assignments, loops and `del`, and names given by `as` (`with`, `except`, imports)."""
    bound: set[str] = set()
    for name, entry in scope.bindings.items():
        for binding in entry.recorded:
            kind = binding.kind
            if kind in _STATEMENT_TARGETS or kind is BindingKind.EXCEPT_NAME \
                    or (kind is BindingKind.WITH_ITEM and not binding.unpack_path) \
                    or (kind in (BindingKind.IMPORT, BindingKind.IMPORT_FROM) and binding.node.asname is not None):
                bound.add(name)
                break
    return bound
