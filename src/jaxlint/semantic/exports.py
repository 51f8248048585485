"""What a module gives `from module import *`, read from its own text: its `__all__` when it declares
one, else every name of its namespace that does not start with `_` — what it defines, the modules
it imports under a name, and what its own star imports bind.

Read from the bindings its semantic model records (no walk of its own). The project answers with it
for the modules of a project (`project.analysis`, question `s:`), naming each name's object in the
project's terms.
"""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .bindings import BindingKind
from .model import SemanticModel
from .source_file import SourceFile


@dataclass(frozen=True)
class ModuleExports:
    #: name -> the qualified name of what it holds (`jr` -> `jax.random`, `helper` -> `pkg.util.helper`
    #: where it was imported from there), or None: the module's own object by that name (a function,
    #: a class, a value it computes), or one the module does not know itself
    names: dict[str, str | None]
    #: names the module binds only on some paths (in a branch, a loop, a `try` body) or deletes
    maybe: frozenset[str]
    #: names `__all__` lists that the module does not bind: a package's submodules (which the star
    #: import loads), else an error when it runs
    unbound: tuple[str, ...]
    #: other names may be bound too (`__all__` is computed, or a star import of the module's own
    #: binds names that are not known)
    open: bool


#: a module whose exports cannot be read from its text
UNREAD = ModuleExports({}, frozenset(), (), True)


def module_exports(file: SourceFile, package: str | None = None) -> ModuleExports:
    """What `from <file's module> import *` binds (see the module docstring). `package`: the name of
    the package whose `__init__` the file is: without `__all__`, the submodules its own imports load
    are attributes of it (`from .util import f` makes `util` one), and bound too."""
    scope = file.module_scope
    bindings = scope.bindings
    stars = scope.star_imports
    any_open = any(star.exports.open for star in stars)
    declared = declared_all(file)
    if declared is UNDECIDED:
        return UNREAD
    if declared is None:
        candidates = [name for name in bindings if not name.startswith("_")]
        candidates += [name for star in stars for name in star.exports.names if not name.startswith("_")]
    else:
        candidates = list(declared)
    names: dict[str, str | None] = {}
    maybe: set[str] = set()
    unbound: list[str] = []
    for name in dict.fromkeys(candidates):
        binding = bindings.get(name)
        starred = [star for star in stars if name in star.exports.names]
        if binding is None and not starred:
            if any_open:
                names[name] = None  # from a star import whose names are not known
            else:
                unbound.append(name)
            continue
        names[name] = file.names.name(name, scope)
        if binding is not None:
            recorded = binding.recorded
            last = max(recorded, key=lambda b: b.order)
            if last.kind is BindingKind.DELETION and not (last.branch or last.in_loop) and not starred:
                del names[name]  # deleted before the module's end: not in its namespace
                continue
            if any(b.kind is BindingKind.DELETION for b in recorded):
                names[name] = None
                maybe.add(name)
            elif all(b.branch or b.in_loop for b in recorded) and \
                    all(name in star.exports.maybe for star in starred):
                maybe.add(name)
        elif all(name in star.exports.maybe for star in starred):
            maybe.add(name)
    if declared is None and package is not None:
        for module in sorted(scope.imported_modules):
            if module.startswith(package + "."):
                name = module[len(package) + 1:].partition(".")[0]
                if not name.startswith("_") and name not in names:
                    names[name] = f"{package}.{name}"
    return ModuleExports(names, frozenset(maybe), tuple(unbound), any_open and declared is None)


class _Undecided:
    """`__all__` is there, but what it holds is not written out."""


UNDECIDED = _Undecided()


def declared_all(file: SourceFile) -> tuple[str, ...] | None | _Undecided:
    """The names the module's `__all__` lists; None when it has none; `UNDECIDED` when it is not a
    list or tuple of strings written out at the top level (`__all__ = [...]`, `__all__ += [...]`),
    changed elsewhere (`__all__.append(...)`, in a branch or a function) or read to compute it."""
    binding = file.module_scope.bindings.get("__all__")
    occurrences = SemanticModel.of(file).name_occurrences(("__all__",))
    if binding is None:
        return UNDECIDED if occurrences else None
    names: list[str] = []
    targets = set()
    for recorded in binding.recorded:
        if recorded.branch or recorded.in_loop or recorded.unpack_path:
            return UNDECIDED
        statement = recorded.statement
        if recorded.kind in (BindingKind.ASSIGNMENT, BindingKind.ANNOTATED) and recorded.value is not None:
            written = _strings(recorded.value)
            if written is None:
                return UNDECIDED
            names = written
        elif recorded.kind is BindingKind.AUGMENTED and type(statement.operator) is cst.AddAssign:
            written = _strings(statement.value)
            if written is None:
                return UNDECIDED
            names += written
        else:
            return UNDECIDED
        targets.add(id(recorded.node))
    if any(id(node) not in targets for node, _, _ in occurrences):
        return UNDECIDED  # read or changed besides these statements
    return tuple(names)


def _strings(value: cst.BaseExpression) -> list[str] | None:
    """The strings of a list or tuple display of string literals; None for anything else."""
    if type(value) not in (cst.List, cst.Tuple):
        return None
    found = []
    for element in value.elements:
        if type(element) is not cst.Element:
            return None
        text = element.value.evaluated_value if isinstance(element.value, (cst.SimpleString, cst.ConcatenatedString)) \
            else None
        if not isinstance(text, str):
            return None
        found.append(text)
    return found
