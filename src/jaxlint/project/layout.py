"""Which modules make up a project, what each is called, and which of them an import reaches.

A project is a set of source roots (the directory of the configuration file, its `src/`, and the
`src = [...]` setting; without a configuration file, the directory above the top package of each
checked path) and the Python files under them. A file's module name is its path below the deepest
root that holds it (`src/pkg/losses.py` -> `pkg.losses`, `pkg/__init__.py` -> `pkg`).

An import is resolved as Python would for the project's code: an absolute name against the roots,
then — as for a script or a notebook, whose own directory is first on `sys.path` — against the
importing file's directory; a relative import against the importer's package. Modules outside the
project (site-packages, JAX itself) are never resolved: their functions keep jaxlint's tables.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

#: Files that are modules of a project (notebooks import modules but are never imported).
MODULE_SUFFIXES = (".py",)


@dataclass(frozen=True)
class ModuleFile:
    name: str
    path: str
    #: `__init__.py`: relative imports start from the module itself, not its parent
    is_package: bool = False
    #: a notebook: it imports the project's modules, nothing imports it
    notebook: bool = False

    @property
    def package(self) -> str:
        """The package relative imports in this module start from."""
        return self.name if self.is_package else self.name.rpartition(".")[0]

    @property
    def directory_prefix(self) -> str:
        """The dotted name of the file's directory below its root ("" at the root)."""
        return self.name if self.is_package and not self.notebook else self.name.rpartition(".")[0]


@dataclass(frozen=True)
class ImportedName:
    """One `import`/`from … import` as written: `from ..a import b, c` is ("a", 2, ("b", "c"))."""

    module: str | None
    level: int = 0
    names: tuple[str, ...] = ()


def default_roots(config_dir: str | None, checked: Iterable[str], src: Iterable[str] = ()) -> list[str]:
    """The source roots: the configuration file's directory and its `src/` (and `src` entries,
    relative to it); without one, each checked directory, or the directory above the top package
    of each checked file."""
    roots: list[Path] = []
    if config_dir is not None:
        base = Path(config_dir).resolve()
        roots += [base, base / "src", *(base / entry for entry in src)]
    else:
        for path in checked:
            resolved = Path(path).resolve()
            directory = resolved if resolved.is_dir() else resolved.parent
            while (directory / "__init__.py").is_file() and directory.parent != directory:
                directory = directory.parent
            roots.append(directory)
    found: list[str] = []
    for root in roots:
        if root.is_dir() and str(root) not in found:
            found.append(str(root))
    return found


class ProjectLayout:
    def __init__(self, roots: Iterable[str], files: Iterable[str]) -> None:
        #: deepest first: a file is named below the deepest root that holds it
        self.roots = sorted({str(Path(r).resolve()) for r in roots}, key=lambda r: -len(Path(r).parts))
        self.by_name: dict[str, ModuleFile] = {}
        self.by_path: dict[str, ModuleFile] = {}
        for path in files:
            module = self._module_file(path)
            if module is None:
                continue
            self.by_path[module.path] = module
            if not module.notebook:
                # two files with one name (a script folder copied twice): the first found stands
                self.by_name.setdefault(module.name, module)

    def _module_file(self, path: str) -> ModuleFile | None:
        resolved = os.path.realpath(path)
        notebook = resolved.endswith(".ipynb")
        if not notebook and not resolved.endswith(MODULE_SUFFIXES):
            return None
        for root in self.roots:
            if resolved.startswith(root + os.sep):
                parts = list(Path(resolved[len(root) + 1:]).with_suffix("").parts)
                break
        else:
            return None
        is_package = parts[-1] == "__init__" and not notebook
        if is_package:
            parts.pop()
        if not parts or not all(part.isidentifier() for part in parts):
            return None  # `01_intro.py`, `train.old.py`: no import statement names it
        return ModuleFile(".".join(parts), resolved, is_package, notebook)

    def add(self, path: str) -> ModuleFile | None:
        """A file checked that the walk of the roots did not list (a notebook, an excluded file)."""
        module = self._module_file(path)
        if module is not None:
            self.by_path[module.path] = module
            if not module.notebook:
                self.by_name.setdefault(module.name, module)
        return module

    def module_of(self, path: str) -> ModuleFile | None:
        return self.by_path.get(os.path.realpath(path))

    def absolute(self, importer: ModuleFile, imported: ImportedName) -> str | None:
        """The absolute dotted name an import statement names (a relative one resolved)."""
        if not imported.level:
            return imported.module
        parts = importer.package.split(".") if importer.package else []
        if imported.level - 1 > len(parts):
            return None
        base = parts[:len(parts) - (imported.level - 1)]
        if imported.module:
            base.append(imported.module)
        return ".".join(base) or None

    def find(self, importer: ModuleFile, dotted: str) -> ModuleFile | None:
        """The project module an absolute dotted module name reaches from `importer`: from a root,
        else from the importer's own directory (a script's or notebook's `sys.path[0]`), else from a
        directory above it (a sub-project of a repository, installed or run from its own folder:
        `proj/tests/test_x.py` importing `proj/pkg/model.py` as `pkg.model`)."""
        found = self.by_name.get(dotted)
        if found is not None:
            return found
        for prefix in _directory_prefixes(importer):
            found = self.by_name.get(f"{prefix}.{dotted}")
            if found is not None:
                return found
        return None

    def imported_modules(self, importer: ModuleFile, imports: Iterable[ImportedName]) -> set[str]:
        """The project modules these imports load (`from pkg import mod` loads `pkg` and `pkg.mod`)."""
        found: set[str] = set()
        for imported in imports:
            base = self.absolute(importer, imported)
            if base is None:
                continue
            candidates = [base]
            if imported.level == 0 and not imported.names:
                parts = base.split(".")  # `import a.b.c` loads a, a.b and a.b.c
                candidates = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            candidates += [f"{base}.{name}" for name in imported.names if name != "*"]
            for candidate in candidates:
                module = self.find(importer, candidate)
                if module is not None and module.name != importer.name:
                    found.add(module.name)
        return found

    def dotted_for(self, importer: ModuleFile, dotted: str) -> str:
        """A dotted name as the project names it: a script's `losses.f` is `scripts.losses.f` when
        `losses` is found in the script's directory rather than at a root."""
        head = dotted.split(".")
        for cut in range(len(head), 0, -1):
            module = ".".join(head[:cut])
            if module in self.by_name:
                return dotted
            for prefix in _directory_prefixes(importer):
                if f"{prefix}.{module}" in self.by_name:
                    return f"{prefix}.{dotted}"
        return dotted


def _directory_prefixes(importer: ModuleFile) -> list[str]:
    """The dotted names of the importer's directory and of those above it, nearest first."""
    parts = importer.directory_prefix.split(".") if importer.directory_prefix else []
    return [".".join(parts[:cut]) for cut in range(len(parts), 0, -1)]


def shown_path(path: str) -> str:
    """A path as messages name it: relative to the working directory when below it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


#: The fields of statements (and of `except` handlers and `case` blocks) that hold statements.
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def imports_in(tree: ast.Module) -> list[ImportedName]:
    """Every import of a module, wherever it stands (in functions and `try` blocks too). Imports are
    statements, so only statements are looked into, never expressions (most of a tree's nodes)."""
    found = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is ast.Import:
            found += [ImportedName(alias.name) for alias in node.names]
        elif kind is ast.ImportFrom:
            found.append(ImportedName(node.module, node.level, tuple(alias.name for alias in node.names)))
        else:
            for field in _STATEMENT_LISTS:
                inner = getattr(node, field, None)
                if type(inner) is list:
                    pending += inner
    return found
