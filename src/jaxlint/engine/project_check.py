"""Checking files as modules of one project: what one module's functions do is known in the others.

A `ProjectSession` holds the project's layout and its `project.Project`. It loads modules for
the project (read, CPython's gate, libcst's parse: the same steps as a check), settles the seeds of
the modules to be reported, then each is checked with the ordinary engine — reusing the tree and
the analysis the project made of it when the text is the same, or, for a fixed text, analysing it
afresh with what the project says about it.
"""
from __future__ import annotations

import ast
import gc
from typing import Iterable

from ..model.finding import Finding
from ..model.settings import Settings
from ..project.analysis import Project, ModuleView
from ..project.index import ProjectIndex
from ..project.layout import ImportedName, ModuleFile, ProjectLayout, imports_in, shown_path
from ..semantic.source_file import SourceFile
from .checker import cyclic_gc_paused
from .deep_stack import call_with_deep_stack, stack_depth_available
from .files import decode_file
from . import notebook as nb
from .notebook_check import JoinedCells, notebook_module_text
from .parsing import NotParsed, Parsed, libcst_parse, nesting_beyond, python_tree
from ..reading import read_regular, size_limit


class ProjectSession:
    def __init__(self, settings: Settings, roots: Iterable[str], files: Iterable[str],
                 index: ProjectIndex | None = None) -> None:
        self.settings = settings
        self.layout = ProjectLayout(roots, files)
        self.project = Project(self.layout, self._load, self._text, self._parse_imports, index)
        #: real path -> the path findings name (as the user gave it)
        self._shown: dict[str, str] = {}
        #: the real paths settled so far
        self._settled: set[str] = set()
        #: the lists of paths settled so far: a worker asks again with the same list for each of
        #: its files, and finding the module of every path each time made a run quadratic
        self._settled_requests: set[tuple[str, ...]] = set()
        #: real path -> (the text analysed, its parse)
        self._parsed: dict[str, tuple[str, Parsed]] = {}
        self._texts: dict[str, str | None] = {}
        #: real path of a notebook -> its cells joined
        self._cells: dict[str, JoinedCells] = {}
        #: real path -> CPython's tree of a module whose imports were read, until it is loaded
        self._trees: dict[str, ast.Module] = {}
        #: whether this session froze the cycle collector's objects (`_freeze_settled`)
        self._froze = False

    # -- what the engine asks ---------------------------------------------------------------------
    def settle(self, paths: Iterable[str]) -> None:
        """Makes sure the modules of `paths` (named in findings as given here) have every seed
        their importers give them."""
        paths = tuple(paths)
        if paths in self._settled_requests:
            return
        modules = []
        for path in paths:
            module = self.layout.module_of(path)
            if module is None:
                module = self.layout.add(path)  # a notebook or a file given outside the walk
            if module is not None:
                self._shown.setdefault(module.path, path)
                if module.path not in self._settled:
                    modules.append(module)
        self._settled_requests.add(paths)
        if modules:
            self._settled.update(m.path for m in modules)
            # as for one file (checker.cyclic_gc_paused), and more so: the trees of every module
            # loaded so far stay alive, and each pass of the collector would walk all of them
            collecting = gc.isenabled()
            with cyclic_gc_paused():
                call_with_deep_stack(self.project.settle, modules)
                if collecting:
                    self._freeze_settled()

    def _freeze_settled(self) -> None:
        """Moves what settling made out of the cycle collector's sight until `close`.

        The modules loaded, their trees and analyses, live as long as the session. Left to the
        collector, each would be walked once in the youngest generation, again in the middle one
        and again in the oldest, as it ages: about a fifth of a whole project's run, all of it
        the collector's (a tree holds no cycle, and the session frees nothing before its end).
        Frozen (`gc.freeze`), they are never walked while the session lives. Only when nothing
        else froze objects: `close` must not thaw what the program embedding jaxlint froze."""
        if self._froze or gc.get_freeze_count() == 0:
            gc.freeze()
            self._froze = True

    def close(self) -> None:
        """Gives what the session froze back to the cycle collector (its garbage is freed again);
        the session stays usable."""
        if self._froze:
            self._froze = False
            gc.unfreeze()

    def context_key(self, path: str) -> str | None:
        """What the findings of `path` depend on beyond its own text and the answers it asks for:
        the seeds its importers give it, when the index knows them without analysing anything;
        None otherwise (and for a file outside the project: "")."""
        module = self.layout.module_of(path)
        if module is None:
            return ""
        if module.path in self._settled:
            # settled in this session: it has every seed its importers give it, and replaying
            # them would walk all of its importers again, once per checked file
            return self.project.context_key(module)
        with cyclic_gc_paused():
            if not call_with_deep_stack(self.project.settle, [module], True):
                return None
        return self.project.context_key(module)

    def asked(self, path: str) -> list[list]:
        """The questions the analysis of `path` asked other modules, with their answers."""
        module = self.layout.module_of(path)
        return self.project.asked_by(module) if module is not None else []

    def still_true(self, asked: list[list]) -> bool:
        """Whether those questions get those answers now (from the index where it can tell)."""
        return bool(call_with_deep_stack(self.project.still_true, asked))

    def save(self) -> None:
        """Writes what was learnt to the project index."""
        self.project.index.save()

    def loaded(self, path: str, source: str) -> tuple[SourceFile, Parsed] | None:
        """The project's analysis of `path`, when it analysed exactly this text."""
        module = self.layout.module_of(path)
        if module is None:
            return None
        found = self._parsed.get(module.path)
        if found is None or found[0] != source:
            return None
        file = self.project.file(module)
        return (file, found[1]) if file is not None and file.path == path else None

    def analysed(self, path: str) -> bool:
        """Whether the project analysed the module of `path` (its importers called into it, or it
        was reported): another text of it (a fix, an editor's buffer) is analysed even if it never
        names JAX, since an importer may trace its functions."""
        module = self.layout.module_of(path)
        return module is not None and module.path in self._parsed

    def context(self, path: str) -> tuple[ModuleView, str] | tuple[()]:
        """What a new `SourceFile` of `path` is given to take part in the project (`project`,
        `package`); nothing for a file outside it."""
        module = self.layout.module_of(path)
        if module is None:
            return ()
        return self.project.view(module), module.package

    def walk_order(self, paths: list[str]) -> list[str]:
        """`paths` with importers before the modules they import: a module's analysis is still
        whole while the modules that import it are checked (it is released once checked)."""
        modules = {m.path: p for p in paths for m in [self.layout.module_of(p)] if m is not None}
        ordered = self.project.importers_first([self.layout.by_path[m] for m in modules])
        rank = {modules[m.path]: index for index, m in enumerate(ordered)}
        return sorted(paths, key=lambda p: rank.get(p, -1))

    # -- loading modules ----------------------------------------------------------------------------
    def _text(self, module: ModuleFile) -> str | None:
        if module.path not in self._texts:
            self._texts[module.path] = self._read(module)
        return self._texts[module.path]

    def _read(self, module: ModuleFile) -> str | None:
        try:
            data = read_regular(module.path, size_limit(module.path))
        except OSError:
            return None
        text = decode_file(module.path, data)
        if isinstance(text, Finding):
            return None
        if module.notebook:
            try:
                joined = notebook_module_text(nb.read_notebook(text))
            except nb.NotebookError:
                return None
            self._cells[module.path] = joined
            return joined.text
        return text

    def _parse_imports(self, module: ModuleFile, text: str) -> list[ImportedName] | None:
        tree = python_tree(text, module.path)
        if not isinstance(tree, ast.Module):
            return None
        self._trees[module.path] = tree  # the gate's tree when the module is loaded: parsed once
        return imports_in(tree)

    def _load(self, module: ModuleFile, view: ModuleView) -> SourceFile | None:
        text = self._text(module)
        if text is None:
            return None
        tree = self._trees.pop(module.path, None) or python_tree(text, module.path)
        if not isinstance(tree, ast.Module) or nesting_beyond(tree, text, stack_depth_available()) is not None:
            return None
        try:
            parsed = libcst_parse(text, tree)
        except NotParsed:
            return None
        self._parsed[module.path] = (text, parsed)
        shown = self._shown.get(module.path) or shown_path(module.path)
        file = SourceFile(shown, text, parsed.module, self.settings, view, module.package)
        cells = self._cells.get(module.path)
        if cells is not None:
            file.place = cells.place
            file.line_label = cells.line_label
        return file
