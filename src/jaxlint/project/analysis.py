"""The analysis of a project's modules together: calls followed across module boundaries.

Each module is analysed as a file alone is, with one difference: a call of a function of another
module of the project reaches a stand-in for it (`jaxmodel.external`), and the stand-in's questions
come here:

* forward, along imports: what the function returns for given argument kinds, and which of its
  parameters it consumes as keys — answered on demand by the analysis of the module that defines
  it (its `TracedFunctions` summaries, its key summaries), loaded for the purpose;
* backward, against imports: when a traced function calls a stand-in with traced values, the
  function becomes traced in its own module (a `Seed`, with the chain of calls that explains it).
  Seeds are propagated to a fixed point by a worklist over modules, importers first, so that a
  module is usually analysed once with all of its seeds; a module that gains seeds later is
  analysed further from where it stood (`TracedFunctions.add_seeds`).

Only the importers of the modules being reported (transitively) can seed them, so only those are
analysed for seeds; other modules are loaded only when a question reaches them. Cycles between
modules are cut: a question that reaches a module whose analysis is under way, or a summary that
is being computed, gets "not known", which never reports anything.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable

import libcst as cst

from ..jaxmodel.external import ExternalFunction, FunctionRef, KeyUse, Seed
from ..jaxmodel.keys import ALIGNING_DRAWS, KeyFlowFacts
from ..jaxmodel.name_origins import NameOrigins
from ..jaxmodel.traced import TracedFunctions
from ..jaxmodel.values import Value
from ..semantic.scopes import Scope
from ..semantic.source_file import SourceFile
from .layout import ImportedName, ModuleFile, ProjectLayout

#: How many re-exports (`from .losses import f` in a package's `__init__`) a name is followed through.
MAX_REEXPORTS = 4
#: How many times each module may be analysed further for new seeds, at most (bounds cycles).
MAX_ROUNDS_PER_MODULE = 6

#: Loads a module: the parsed file, analysed in the project through the view given; None when the
#: file cannot be read or parsed (it then takes no part).
Loader = Callable[[ModuleFile, "ModuleView"], "SourceFile | None"]
#: The imports of a module, read without analysing it.
ImportReader = Callable[[ModuleFile], "list[ImportedName] | None"]


@dataclass(eq=False)
class _Unit:
    module: ModuleFile
    file: SourceFile | None = None
    loaded: bool = False
    #: qualname -> the seed, joined over every caller that traces it
    seeds: dict[str, Seed] = field(default_factory=dict)
    #: set while its analysis is being built: questions that reach it then are not answered
    building: bool = False
    rounds: int = 0


class Project:
    def __init__(self, layout: ProjectLayout, load: Loader, read_imports: ImportReader) -> None:
        self.layout = layout
        self._load = load
        self._read_imports = read_imports
        self._units: dict[str, _Unit] = {}
        self._imports: dict[str, set[str]] = {}
        #: questions being answered, across modules: a question met again is not known
        self._answering: set[tuple] = set()

    # -- modules ------------------------------------------------------------------------------
    def view(self, module: ModuleFile) -> "ModuleView":
        return ModuleView(self, module)

    def unit(self, name: str) -> _Unit | None:
        unit = self._units.get(name)
        if unit is None:
            module = self.layout.by_name.get(name)
            if module is None:
                return None
            unit = self._units[name] = _Unit(module)
        return unit

    def file(self, module: ModuleFile) -> SourceFile | None:
        """The module's file, loaded (parsed, analysed in the project) on first use."""
        unit = self._units.get(module.name) if not module.notebook else None
        if unit is None:
            unit = _Unit(module)
            if not module.notebook:
                self._units[module.name] = unit
            else:
                self._units[module.path] = unit
        if not unit.loaded:
            unit.loaded = True
            unit.file = self._load(module, self.view(module))
        return unit.file

    def traced(self, name: str) -> TracedFunctions | None:
        """A module's traced functions; None when it cannot be loaded or is being built."""
        unit = self.unit(name)
        if unit is None or unit.building:
            return None
        file = self.file(unit.module)
        if file is None:
            return None
        if TracedFunctions not in file._facts:
            unit.building = True
            try:
                file.fact(TracedFunctions)
            finally:
                unit.building = False
        return file.fact(TracedFunctions)

    def imports(self, module: ModuleFile) -> set[str]:
        found = self._imports.get(module.path)
        if found is None:
            imports = self._read_imports(module)
            found = self._imports[module.path] = self.layout.imported_modules(module, imports or ())
        return found

    # -- seeds to a fixed point -----------------------------------------------------------------
    def settle(self, reported: Iterable[ModuleFile]) -> None:
        """Propagates seeds until the modules reported have all of theirs."""
        reported = list(reported)
        needed = self._importers_of(reported)
        order = self._importers_first(needed)
        queue = deque(order)
        queued = set(m.path for m in order)
        by_path = {m.path: m for m in order}
        while queue:
            module = queue.popleft()
            queued.discard(module.path)
            unit = self._units.get(module.name) if not module.notebook else self._units.get(module.path)
            if unit is not None and unit.rounds >= MAX_ROUNDS_PER_MODULE:
                continue
            traced = self._traced_of(module)
            if traced is None:
                continue
            unit = self._units.get(module.name) if not module.notebook else self._units.get(module.path)
            unit.rounds += 1
            if unit.seeds:
                traced.add_seeds(list(unit.seeds.values()))
            for external, seed in traced.outgoing_seeds():
                target = self.unit(external.ref.module)
                if target is None or target.module.path not in by_path:
                    continue  # a module no reported module imports, directly or not: nothing to tell
                if self._merge(target, seed) and target.module.path not in queued:
                    queued.add(target.module.path)
                    queue.append(target.module)

    def _traced_of(self, module: ModuleFile) -> TracedFunctions | None:
        if module.notebook:
            file = self.file(module)
            return file.fact(TracedFunctions) if file is not None else None
        return self.traced(module.name)

    @staticmethod
    def _merge(unit: _Unit, seed: Seed) -> bool:
        before = unit.seeds.get(seed.qualname)
        after = seed if before is None else before.joined(seed)
        unit.seeds[seed.qualname] = after
        return after != before

    def _importers_of(self, reported: list[ModuleFile]) -> list[ModuleFile]:
        """The reported modules and every project module that imports one of them, transitively."""
        importers: dict[str, set[str]] = {}
        everything = [*self.layout.by_path.values()]
        for module in everything:
            for imported in self.imports(module):
                importers.setdefault(imported, set()).add(module.path)
        found = {m.path: m for m in reported}
        pending = [m for m in reported if not m.notebook]
        while pending:
            module = pending.pop()
            for path in importers.get(module.name, ()):
                if path not in found:
                    importer = self.layout.by_path[path]
                    found[path] = importer
                    if not importer.notebook:
                        pending.append(importer)
        return list(found.values())

    def _importers_first(self, modules: list[ModuleFile]) -> list[ModuleFile]:
        """Modules ordered so that, cycles aside, a module comes after every module that imports it."""
        by_name = {m.name: m for m in modules if not m.notebook}
        order: list[ModuleFile] = []
        state: dict[str, int] = {}

        def visit(module: ModuleFile) -> None:  # depth first over imports: a module after its imports
            stack = [(module, iter(sorted(self.imports(module))))]
            state[module.path] = 1
            while stack:
                current, pending = stack[-1]
                for name in pending:
                    imported = by_name.get(name)
                    if imported is not None and imported.path not in state:
                        state[imported.path] = 1
                        stack.append((imported, iter(sorted(self.imports(imported)))))
                        break
                else:
                    stack.pop()
                    order.append(current)

        for module in sorted(modules, key=lambda m: m.path):
            if module.path not in state:
                visit(module)
        order.reverse()
        return order

    # -- questions from stand-ins ---------------------------------------------------------------
    def function_at(self, importer: ModuleFile, dotted: str, depth: int = 0) -> ExternalFunction | None:
        if depth > MAX_REEXPORTS:
            return None
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = self.layout.find(importer, ".".join(parts[:cut]))
            if module is None:
                continue
            if module.name == importer.name and not importer.notebook:
                return None  # the module's own functions are its own analysis's
            return self._exported(module, parts[cut:], depth)
        return None

    def _exported(self, module: ModuleFile, attributes: list[str], depth: int) -> ExternalFunction | None:
        """The function `attributes` name in a module: read from its parsed file alone (no analysis
        of it is needed, so modules that import each other still see each other's functions)."""
        file = self.file(module)
        if file is None:
            return None
        scope = file.module_scope
        binding = scope.bindings.get(attributes[0])
        if binding is None or len(binding.nodes) != 1:
            return None
        node = binding.nodes[0]
        if binding.is_import_only:  # a re-export: `from .losses import clipped_loss` in `__init__`
            target = file.names.binding_target(binding, scope)
            if target is None:
                return None
            return self.function_at(module, ".".join([target, *attributes[1:]]), depth + 1)
        if len(attributes) == 2 and isinstance(node, cst.ClassDef):
            # a static method through its class: `Loss.compute(x)` (other methods get `self`)
            method = Scope(node, scope).bindings.get(attributes[1])
            if method is None or len(method.nodes) != 1 or not isinstance(method.nodes[0], cst.FunctionDef):
                return None
            node = method.nodes[0]
            decorators = {file.names.qualified_name(d.decorator, scope) for d in node.decorators}
            if decorators != {"builtins.staticmethod"}:
                return None
        elif len(attributes) != 1 or not isinstance(node, cst.FunctionDef):
            return None
        return ExternalFunction(FunctionRef(module.name, ".".join(attributes)), node.params)

    def wrapper(self, ref: FunctionRef) -> str | None:
        traced = self.traced(ref.module)
        function = traced.local_function(ref.qualname) if traced is not None else None
        return traced._decorator_wrapper(function) if function is not None else None

    def returned(self, ref: FunctionRef, signature) -> Value | None:
        question = ("returned", ref, signature)
        if question in self._answering:
            return None
        traced = self.traced(ref.module)
        function = traced.local_function(ref.qualname) if traced is not None else None
        if function is None:
            return None
        self._answering.add(question)
        try:
            return traced.summaries.get(function, signature)
        finally:
            self._answering.discard(question)

    def key_uses(self, ref: FunctionRef) -> dict[str, KeyUse]:
        question = ("keys", ref)
        if question in self._answering:
            return {}
        traced = self.traced(ref.module)
        function = traced.local_function(ref.qualname) if traced is not None else None
        if function is None:
            return {}
        self._answering.add(question)
        try:
            facts = KeyFlowFacts.of(traced.ctx)
            summary = facts.summary(function)
            uses = {}
            for param, consumption in summary.consumed.items():
                innermost = consumption
                while innermost.via is not None:
                    innermost = innermost.via
                if innermost.draw in ALIGNING_DRAWS:
                    continue  # the same shuffle given to several arrays is often meant: not followed
                consumer = innermost.draw or facts.ctx.module.code_for_node(innermost.node.func)
                where = innermost.where or f"{_short(traced.ctx.path)}:{facts.line(innermost.node)}"
                uses[param] = KeyUse(consumption.certain, consumer, where)
            return uses
        finally:
            self._answering.discard(question)

    def returns_array(self, ref: FunctionRef) -> bool:
        question = ("array", ref)
        if question in self._answering:
            return False
        traced = self.traced(ref.module)
        function = traced.local_function(ref.qualname) if traced is not None else None
        if not isinstance(function, cst.FunctionDef) or "." in ref.qualname:
            return False
        self._answering.add(question)
        try:
            return NameOrigins.of(traced.ctx).returns_arrays(function)
        finally:
            self._answering.discard(question)

    def seeds_of(self, module: ModuleFile) -> list[Seed]:
        unit = self._units.get(module.name) if not module.notebook else self._units.get(module.path)
        return list(unit.seeds.values()) if unit is not None else []


def _short(path: str) -> str:
    """A path as messages name it: relative to the working directory when below it."""
    import os

    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


class ModuleView:
    """The project as one module's analysis sees it (`jaxmodel.external.ProjectView`)."""

    def __init__(self, project: Project, module: ModuleFile) -> None:
        self.project = project
        self.module_file = module
        self.module = module.name

    def function_at(self, dotted: str) -> ExternalFunction | None:
        return self.project.function_at(self.module_file, dotted)

    def returned(self, ref: FunctionRef, signature) -> Value | None:
        return self.project.returned(ref, signature)

    def wrapper(self, ref: FunctionRef) -> str | None:
        return self.project.wrapper(ref)

    def key_uses(self, ref: FunctionRef) -> dict[str, KeyUse]:
        return self.project.key_uses(ref)

    def returns_array(self, ref: FunctionRef) -> bool:
        return self.project.returns_array(ref)

    def seeds(self) -> list[Seed]:
        return self.project.seeds_of(self.module_file)
