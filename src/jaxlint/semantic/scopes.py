"""Lexical scopes and name resolution over the bindings the semantic model's walk records.

libcst's own scope and qualified-name providers annotate every node of the file and cost many
times the parse. Here each scope's bindings, `global` and `nonlocal` names are recorded by the one
walk of the file that builds its `SemanticModel` (`semantic.bindings`), and a scope only looks them
up: nothing walks a scope again.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Callable, Iterator, Union

import libcst as cst

from ..syntax.walk import COMPREHENSIONS, NODE_TYPES

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
#: Marks a plain alias (`jnp = jax.numpy`), resolved only when asked.
ALIAS = "<alias>"


@dataclass(eq=False)
class Binding:
    """Everything one scope binds to one name."""

    name: str
    #: one entry per binding statement: a dotted qualified name, LOCAL or ALIAS
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
    #: for each of `nodes`, the walk's record of that binding (a `semantic.bindings.Binding`)
    recorded: list = field(default_factory=list)

    @property
    def is_import_only(self) -> bool:
        return bool(self.targets) and LOCAL not in self.targets


#: scope kind by exact node type (`isinstance` against libcst's classes is slow on the hot path)
_KINDS = {cst.Module: "module", cst.ClassDef: "class", **{t: "comprehension" for t in COMPREHENSIONS}}


def _kind(node: ScopeNode) -> str:
    return _KINDS.get(type(node), "function")


@dataclass(frozen=True)
class StarExports:
    """What `from m import *` binds: `m.__all__`, else every name of `m`'s namespace that does not
    start with `_` (the modules it imported and the names it star-imported included)."""

    #: name -> the qualified name of what it holds there (`jr` -> `jax.random`), or None where that
    #: is not known (the name is still bound, to something unknown)
    names: dict[str, "str | None"] = field(default_factory=dict)
    #: names bound only by some versions of a library or on some paths of the module: where one is
    #: not bound, the name keeps what it held before
    maybe: frozenset[str] = frozenset()
    #: other names may be bound too: the module's exports are not all known (`m` cannot be read,
    #: its `__all__` is computed, or it star-imports such a module itself)
    open: bool = False


#: a star import of a module whose names are not known: any name may be bound by it
UNKNOWN_EXPORTS = StarExports(open=True)


@dataclass(frozen=True)
class StarImport:
    """One `from m import *` of a module's top level, with what it binds."""

    node: cst.ImportFrom
    #: the absolute module it names; None for a relative import whose package is not known
    module: str | None
    #: how many bindings of the file come before it (`Binding.order`)
    order: int
    exports: StarExports


#: what the walk records for one scope node: its bindings by name, its `global` and `nonlocal` names
ScopeRecord = tuple[dict[str, Binding], set[str], set[str]]


class Scope:
    """A scope of a file: its kind, node and enclosing scope, and what it binds (`bindings`,
    `globals`, `nonlocals`).

    Every `Scope` made for the same node of a file shares one record (kept by the module's scope),
    which the walk that builds the file's `SemanticModel` fills in. Asked before that walk, the
    module's scope has it run first (`recorder`, set by the file the scope is made for).
    """

    #: set on the module scope of a module whose package is known: relative imports resolve from it
    package: str | None = None

    def __init__(self, node: ScopeNode, parent: "Scope | None") -> None:
        self.node = node
        self.parent = parent
        #: "module", "class", "comprehension" or "function"
        self.kind = _kind(node)
        # the module's scope, None in the module's scope itself (holding itself would make it a
        # reference cycle, which keeps the tree alive until the cycle collector finds it)
        self._root: Scope | None = (parent._root or parent) if parent is not None else None
        root = self._root or self
        if parent is None:
            #: (module scope only) id(scope node) -> its record, shared by every Scope of the file
            self.records: dict[int, ScopeRecord] = {}
            #: (module scope only) None until the walk that records the bindings starts, False
            #: while it runs, True once it is done
            self.recorded: bool | None = None
            #: (module scope only) runs that walk; set by the file the scope belongs to
            self.recorder: Callable[[], object] | None = None
            #: (module scope only) its `from m import *` statements, in source order: the names they
            #: bind are not bindings of the scope (`bindings`), they are resolved through these
            self.star_imports: list[StarImport] = []
            #: (module scope only) the absolute names of the modules its top-level imports load
            #: (`from .util import f` loads `pkg.util`, which becomes an attribute of `pkg`)
            self.imported_modules: set[str] = set()
        record = root.records.get(id(node))
        if record is None:
            record = root.records[id(node)] = ({}, set(), set())
        self._bindings, self.globals, self.nonlocals = record
        self._outer: tuple[Scope, ...] | None = None

    @property
    def bindings(self) -> dict[str, Binding]:
        """name -> what this scope binds to it, in the order the names are first bound."""
        root = self._root or self
        if root.recorded is not True:
            root.ensure_recorded()
        return self._bindings

    def ensure_recorded(self) -> None:
        """(module scope) Runs the walk that records the file's bindings, unless it has run."""
        if self.recorded is True:
            return
        if self.recorded is False:
            raise RuntimeError("a scope's bindings were asked during the walk that records them")
        if self.recorder is None or self.recorder() is None:
            raise RuntimeError("a scope's bindings are recorded by its file's semantic model: make the "
                               "module's scope through `SourceFile`")

    def enclosing_for_lookup(self) -> Iterator["Scope"]:
        """This scope, then the scopes Python searches after it (class bodies are skipped)."""
        yield self
        scope = self.parent
        while scope is not None:
            if scope.kind != "class":
                yield scope
            scope = scope.parent

    def module_scope(self) -> "Scope":
        return self._root or self

    def _chain(self) -> "tuple[Scope, ...]":
        """This scope, then the scopes Python searches after it."""
        outer = self._outer
        if outer is None:
            # without `self`: a scope holding itself would be a reference cycle
            outer = self._outer = tuple(self.enclosing_for_lookup())[1:]
        return (self, *outer)

    def lookup(self, name: str) -> "tuple[Scope, Binding] | None":
        """The scope that binds `name` as seen from here, and its binding; None for builtins."""
        root = self._root or self
        if root.recorded is not True:
            root.ensure_recorded()
        for scope in self._chain():
            if name in scope.globals:
                binding = root._bindings.get(name)
                return (root, binding) if binding else None
            binding = scope._bindings.get(name)
            if binding is not None and name not in scope.nonlocals:
                return scope, binding
        return None


def file_recorder(file: object, record: Callable[[object], object]) -> Callable[[], object]:
    """A `Scope.recorder` that runs `record(file)` while the file lives (holding the file itself
    would make a reference cycle through its module scope, which keeps the tree alive longer)."""
    reference = weakref.ref(file)

    def recorder() -> object:
        alive = reference()
        return record(alive) if alive is not None else None

    return recorder


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


def catches_missing_api(handler: cst.ExceptHandler) -> bool:
    """`except ImportError:`, `except (ModuleNotFoundError, AttributeError) as e:`, …"""
    caught = handler.type
    if caught is None:
        return False
    names = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    return any(dotted_name(name) in MISSING_API_ERRORS or dotted_name(name) in _BUILTIN_MISSING_API
               for name in names)


_BUILTIN_MISSING_API = frozenset(f"builtins.{name}" for name in MISSING_API_ERRORS)
