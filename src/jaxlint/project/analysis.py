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

import ast
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import libcst as cst

from ..jaxmodel.configured import ConfiguredIntegers
from ..jaxmodel.dispatch import Dispatch
from ..jaxmodel.external import TABLE_PREFIXES, ConfiguredInteger, ExternalFunction, FunctionRef, KeyUse, Seed
from ..jaxmodel.keys.facts import KeyFlowFacts
from ..jaxmodel.keys.tables import ALIGNING_DRAWS
from ..jaxmodel.name_origins import NameOrigins
from ..jaxmodel.signatures import assigned_lambda
from ..jaxmodel.traced import TracedFunctions
from ..jaxmodel.values import Kind, Value
from ..model.settings import may_use_jax
from ..semantic.exports import module_exports
from ..semantic.scopes import Scope, StarExports
from ..semantic.source_file import SourceFile
from .encoding import (key_uses_from_json, key_uses_to_json, parameters_code, parameters_from_code, seed_from_json,
                       seed_to_json, seeds_key, signature_from_key, signature_key, value_from_json, value_to_json)
from .index import ProjectIndex, combined, content_hash
from .layout import ImportedName, ModuleFile, ProjectLayout, shown_path

#: The question whose answer is the paths of the modules that import a module.
IMPORTERS = "i:"
#: The question whose answer is what `from <module> import *` binds.
STAR_EXPORTS = "s:"
#: How many re-exports (`from .losses import f` in a package's `__init__`) a name is followed through.
MAX_REEXPORTS = 4
#: How many times each module of an import cycle may be analysed further for new seeds (bounds it).
MAX_ROUNDS_PER_MODULE = 6

#: Loads a module: the parsed file, analysed in the project through the view given; None when the
#: file cannot be read or parsed (it then takes no part).
Loader = Callable[[ModuleFile, "ModuleView"], "SourceFile | None"]
#: The text of a module (a notebook's cells joined), without analysing it; None when unreadable.
TextReader = Callable[[ModuleFile], "str | None"]
#: The imports in a module's text.
ImportParser = Callable[[ModuleFile, str], "list[ImportedName] | None"]


@dataclass(eq=False)
class _Unit:
    module: ModuleFile
    file: SourceFile | None = None
    loaded: bool = False
    #: qualname -> the seed, joined over every caller that traces it
    seeds: dict[str, Seed] = field(default_factory=dict)
    #: set while its analysis is being built: questions that reach it then are not answered
    building: bool = False
    #: the seeds it gives, once known for its final seeds: (target module, seed) pairs
    gives: "list[tuple[str, Seed]] | None" = None


class Project:
    def __init__(self, layout: ProjectLayout, load: Loader, read_text: TextReader, parse_imports: ImportParser,
                 index: ProjectIndex | None = None) -> None:
        self.layout = layout
        self._load = load
        self._read_text = read_text
        self._parse_imports = parse_imports
        self.index = index if index is not None else ProjectIndex(None, "")
        self._units: dict[str, _Unit] = {}
        #: told (groups settled, groups to settle) as `settle` goes, for a progress line
        self.progress: Callable[[int, int], None] | None = None
        self._entries: dict[str, dict | None] = {}
        #: (module path, question) -> its answer in this run
        self._answers: dict[tuple[str, str], Any] = {}
        #: module path -> the questions its analysis asked, with their answers
        self._asked: dict[str, dict[tuple[str, str], Any]] = {}
        self._asked_lists: dict[str, list[list]] = {}
        #: questions being answered: a question met again is not known
        self._answering: set[tuple[str, str]] = set()
        #: (module path, question) -> the function a name reaches (`f:`/`m:` questions) in this run
        self._functions: dict[tuple[str, str], ExternalFunction] = {}
        #: module name -> the paths of the modules that import it (for `_importers_of`), and how
        #: many modules the layout had when it was made (a file added later is looked at again)
        self._importers: dict[str, set[str]] | None = None
        #: path -> the variable and attribute names its code mentions (None: unreadable), per run
        self._names_mentioned: dict[str, frozenset[str] | None] = {}
        self._importers_made_for = 0

    # -- modules ------------------------------------------------------------------------------
    def view(self, module: ModuleFile) -> "ModuleView":
        return ModuleView(self, module)

    def unit(self, name: str) -> _Unit | None:
        module = self.layout.by_name.get(name)
        return self._unit_of(module) if module is not None else None

    def _unit_of(self, module: ModuleFile) -> _Unit:
        key = module.path if module.notebook else module.name
        unit = self._units.get(key)
        if unit is None:
            unit = self._units[key] = _Unit(module)
        return unit

    def file(self, module: ModuleFile) -> SourceFile | None:
        """The module's file, loaded (parsed, analysed in the project) on first use."""
        unit = self._unit_of(module)
        if not unit.loaded:
            unit.loaded = True
            unit.file = self._load(module, self.view(module))
        return unit.file

    def traced(self, name: str) -> TracedFunctions | None:
        """A module's traced functions; None when it cannot be loaded or is being built."""
        unit = self.unit(name)
        if unit is None or unit.building:
            return None
        return self._traced_of(unit.module)

    def _traced_of(self, module: ModuleFile) -> TracedFunctions | None:
        unit = self._unit_of(module)
        file = self.file(module)
        if file is None or unit.building:
            return None
        if TracedFunctions not in file._facts:
            unit.building = True
            try:
                file.fact(TracedFunctions)
            finally:
                unit.building = False
        return file.fact(TracedFunctions)

    # -- what the index knows of each module ----------------------------------------------------
    def _entry(self, module: ModuleFile) -> dict | None:
        """The module's index entry (text hash, imports): read from the index while the file is
        unchanged, else from the file."""
        if module.path in self._entries:
            return self._entries[module.path]
        entry = self.index.entry(module.path)
        if entry is None or "imports" not in entry or "hash" not in entry:
            text = self._read_text(module)
            if text is None:
                entry = None
            else:
                entry = self.index.start(module.path, content_hash(text))
                imports = self._parse_imports(module, text) if "import" in text else None
                entry["imports"] = sorted(self.layout.imported_modules(module, imports or ()))
        self._entries[module.path] = entry
        return entry

    def imports(self, module: ModuleFile) -> set[str]:
        entry = self._entry(module)
        return set(entry["imports"]) if entry is not None else set()

    def context_key(self, module: ModuleFile) -> str:
        """The module's text and the seeds it receives (known once its importers are settled):
        what its analysis depends on besides the answers it asks for."""
        entry = self._entry(module)
        return combined([entry["hash"] if entry is not None else "unreadable",
                         seeds_key(list(self._unit_of(module).seeds.values()))])

    # -- seeds to a fixed point -----------------------------------------------------------------
    def settle(self, reported: Iterable[ModuleFile], replay_only: bool = False) -> bool:
        """Gives the modules reported every seed their importers give them: the importers are taken
        in order (importers first, an import cycle as one), each replayed from the index where its
        context is unchanged, else analysed (and recorded). `replay_only`: analyse nothing; False
        when that was not enough (some importer changed)."""
        reported = list(reported)
        needed = self._importers_of(reported)
        inside = {m.path for m in needed}
        analysed_anyway = {m.path for m in reported}
        groups = self._importer_first_groups(needed)
        for done, group in enumerate(groups):
            if self.progress is not None:
                self.progress(done, len(groups))
            if len(group) == 1 and group[0].name not in self.imports(group[0]):
                module = group[0]
                unit = self._unit_of(module)
                if replay_only and module.path in analysed_anyway:
                    continue  # what a reported module receives is asked, not what it gives
                if unit.gives is None:
                    context = self.context_key(module)
                    stored = None if module.path in analysed_anyway and not replay_only else \
                        self.index.seeds(module.path, context)
                    if stored is not None and self.still_true(stored["deps"]):
                        unit.gives = [seed_from_json(item) for item in stored["gives"]]
                    elif not unit.seeds and not self._may_trace(module):
                        # nothing traces in it, nor is given to trace: it gives nothing (asked
                        # after the index, which spares reading the text of a module it knows)
                        unit.gives = []
                    elif replay_only:
                        return False
                    else:
                        unit.gives = self._analyse(module)
                        if self._entry(module) is not None:
                            self.index.record_seeds(module.path, context, {
                                "gives": [seed_to_json(target, seed) for target, seed in unit.gives],
                                "deps": self.asked_by(module)})
                for target, seed in unit.gives:
                    self._give(target, seed, inside)
                continue
            if not self._replay_cycle(group, inside, replay_only):
                if replay_only:
                    return False
                self._settle_cycle(group, inside)
        if self.progress is not None:
            self.progress(len(groups), len(groups))
        return True

    def _replay_cycle(self, group: list[ModuleFile], inside: set[str], replay_only: bool) -> bool:
        """Modules that import one another, settled from the index: what each received and gave
        when the group was last settled with these texts and these seeds from outside it, while
        every answer that settling asked for is the same. False when the index cannot tell and
        `replay_only`; otherwise the group is settled and recorded."""
        units = [self._unit_of(m) for m in group]
        if all(unit.gives is not None for unit in units):  # settled earlier in this run
            for unit in units:
                for target, seed in unit.gives:
                    self._give(target, seed, inside)
            return True
        if any(self._entry(m) is None for m in group):
            return False
        context = combined(["cycle", *(self.context_key(m) for m in group)])
        owner = group[0].path
        # replayed even when a member is reported: it is analysed for its check with what it
        # receives, and the others need not be (a large cycle is much of a project)
        stored = self.index.seeds(owner, context)
        members = stored.get("members") if stored is not None else None
        if isinstance(members, dict) and set(members) == {m.path for m in group} and self.still_true(stored["deps"]):
            for module, unit in zip(group, units):
                received, gives = members[module.path]
                unit.seeds = {seed.qualname: seed for seed in (seed_from_json(item)[1] for item in received)}
                unit.gives = [seed_from_json(item) for item in gives]
                if unit.file is not None and TracedFunctions in unit.file._facts:
                    # analysed already (a question reached it) with fewer seeds: given the rest
                    unit.file.fact(TracedFunctions).add_seeds(list(unit.seeds.values()))
            for unit in units:
                for target, seed in unit.gives:
                    self._give(target, seed, inside)
            return True
        if replay_only:
            return False
        self._settle_cycle(group, inside)
        if any(unit.gives is None for unit in units):
            return True  # stopped by MAX_ROUNDS_PER_MODULE: what its earlier rounds gave is not kept
        deps = [dep for module in group for dep in self.asked_by(module)]
        self.index.record_seeds(owner, context, {
            "gives": [], "deps": deps,
            "members": {module.path: [[seed_to_json("", seed) for seed in unit.seeds.values()],
                                      [seed_to_json(target, seed) for target, seed in unit.gives or ()]]
                        for module, unit in zip(group, units)}})
        return True

    def _may_trace(self, module: ModuleFile) -> bool:
        """Whether a module can trace anything of its own: it mentions JAX or a library built on it
        (a module that does not, and is given no seed, is checked alone and gives no seed)."""
        text = self._read_text(module)
        return text is not None and may_use_jax(text)

    def _analyse(self, module: ModuleFile) -> list[tuple[str, Seed]]:
        """The seeds a module gives, from its analysis with the seeds it has received."""
        traced = self._traced_of(module)
        if traced is None:
            return []
        unit = self._unit_of(module)
        if unit.seeds:
            traced.add_seeds(list(unit.seeds.values()))
        return [(external.ref.module, seed) for external, seed in traced.outgoing_seeds()]

    def _settle_cycle(self, group: list[ModuleFile], inside: set[str]) -> None:
        """Modules that import one another: analysed in turn until none gains a seed."""
        members = {m.name for m in group}
        queue = deque(group)
        queued = {m.path for m in group}
        rounds: dict[str, int] = {}
        while queue:
            module = queue.popleft()
            queued.discard(module.path)
            if rounds.get(module.path, 0) >= MAX_ROUNDS_PER_MODULE:
                continue
            rounds[module.path] = rounds.get(module.path, 0) + 1
            gives = self._analyse(module)
            self._unit_of(module).gives = gives
            for target, seed in gives:
                if self._give(target, seed, inside) and target in members:
                    member = self.layout.by_name[target]
                    if member.path not in queued:
                        queued.add(member.path)
                        queue.append(member)

    def _give(self, target: str, seed: Seed, inside: set[str]) -> bool:
        """Adds a seed to a module that a reported module depends on; whether it grew."""
        module = self.layout.by_name.get(target)
        if module is None or module.path not in inside:
            return False  # a module no reported module imports, directly or not: nothing to tell
        unit = self._unit_of(module)
        before = unit.seeds.get(seed.qualname)
        after = seed if before is None else before.joined(seed)
        unit.seeds[seed.qualname] = after
        if after != before:
            unit.gives = None  # what it gives must be found again
            return True
        return False

    def _importers_of(self, reported: list[ModuleFile]) -> list[ModuleFile]:
        """The reported modules and every project module that imports one of them, transitively."""
        importers = self._importers
        if importers is None or self._importers_made_for != len(self.layout.by_path):
            importers = {}
            for module in self.layout.by_path.values():
                for imported in self.imports(module):
                    importers.setdefault(imported, set()).add(module.path)
            # asked once per file by a warm run: the import graph of the run's texts, made once
            self._importers, self._importers_made_for = importers, len(self.layout.by_path)
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

    def _importer_first_groups(self, modules: list[ModuleFile]) -> list[list[ModuleFile]]:
        """The modules' import cycles (strongly connected components; most modules are one alone),
        importers before the modules they import (Tarjan's algorithm, without recursion)."""
        by_name = {m.name: m for m in modules if not m.notebook}
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        on_stack: set[str] = set()
        stack: list[ModuleFile] = []
        groups: list[list[ModuleFile]] = []

        def successors(module: ModuleFile) -> list[ModuleFile]:
            return [by_name[n] for n in sorted(self.imports(module)) if n in by_name]

        for root in sorted(modules, key=lambda m: m.path):
            if root.path in index:
                continue
            work = [(root, iter(successors(root)))]
            index[root.path] = low[root.path] = len(index)
            stack.append(root)
            on_stack.add(root.path)
            while work:
                module, pending = work[-1]
                advanced = False
                for nxt in pending:
                    if nxt.path not in index:
                        index[nxt.path] = low[nxt.path] = len(index)
                        stack.append(nxt)
                        on_stack.add(nxt.path)
                        work.append((nxt, iter(successors(nxt))))
                        advanced = True
                        break
                    if nxt.path in on_stack:
                        low[module.path] = min(low[module.path], index[nxt.path])
                if advanced:
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent.path] = min(low[parent.path], low[module.path])
                if low[module.path] == index[module.path]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member.path)
                        group.append(member)
                        if member is module:
                            break
                    groups.append(sorted(group, key=lambda m: m.path))
        groups.reverse()  # Tarjan gives the imported first
        return groups

    def importers_first(self, modules: list[ModuleFile]) -> list[ModuleFile]:
        return [m for group in self._importer_first_groups(modules) for m in group]

    # -- questions from stand-ins ---------------------------------------------------------------
    # Each question about a module's functions has a name (`f:losses.clipped_loss` for the function
    # a name reaches, `r:clipped_loss:SIGNATURE` for what a call returns, `k:` for the keys it
    # consumes, `a:` whether it returns an array, `j:` whether it returns a jitted function, `w:`
    # what its decorator makes of a call, `s:` what a star import of the module binds, `v:` the
    # integer a configuration object gives, `v:Config:bare:num_steps`) and a JSON answer. The index
    # records each answer with the answers its computation could have used (every question its
    # module's analysis had asked by then); a recorded answer stands while its module's text and
    # those answers are unchanged, else it is computed again.

    def function_at(self, asker: ModuleFile, dotted: str, depth: int = 0, bound: bool = False) -> ExternalFunction | None:
        """The function `dotted` reaches; `bound`: a method of the class it names, called on an
        instance (`self` passed implicitly)."""
        owner = self._defining_module(asker, dotted, depth)
        if owner is None:
            return None
        module, name = owner
        question = f"{'m' if bound else 'f'}:{name}:{depth}"
        data = self.ask(asker, module, question)
        if not data:
            return None
        found = self._functions.get((module.path, question))
        if found is None:  # an answer from the index: its parameters are parsed back once
            found = ExternalFunction(FunctionRef(data[0], data[1]), _parameters(data[2]), bound)
            self._functions[(module.path, question)] = found
        return found

    def _defining_module(self, asker: ModuleFile, dotted: str, depth: int) -> tuple[ModuleFile, str] | None:
        """The project module a dotted name is found in (the longest prefix that names one) and the
        name within it; None when that is the asker itself (its own analysis answers for its own
        names), no module of the project, or reached through more re-exports than are followed."""
        if depth > MAX_REEXPORTS:
            return None
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = self.layout.find(asker, ".".join(parts[:cut]))
            if module is None:
                continue
            if module.name == asker.name and not asker.notebook:
                return None
            return module, ".".join(parts[cut:])
        return None

    def pytree_attributes(self, asker: ModuleFile, dotted: str, depth: int = 0) -> tuple[tuple[str, Kind], ...] | None:
        """The attributes of an instance of the class `dotted` names, where it is a dataclass pytree
        of another module of the project (`ProjectView.pytree_attributes`)."""
        owner = self._defining_module(asker, dotted, depth)
        if owner is None:
            return None
        module, name = owner
        data = self.ask(asker, module, f"c:{name}:{depth}")
        return tuple((field, Kind(kind)) for field, kind in data) if data is not None else None

    def configured(self, asker: ModuleFile, dotted: str, how: str, field: str,
                   depth: int = 0) -> ConfiguredInteger | None:
        """The integer `field` of the object `dotted` names in another module of the project gives
        (`ProjectView.configured`)."""
        owner = self._defining_module(asker, dotted, depth)
        if owner is None:
            return None
        module, name = owner
        return ConfiguredInteger.from_json(self.ask(asker, module, f"v:{name}:{how}:{field}"))

    def wrapper(self, asker: ModuleFile, ref: FunctionRef) -> str | None:
        return self._ask_ref(asker, ref, "w:" + ref.qualname)

    def star_exports(self, asker: ModuleFile, dotted: str) -> StarExports | None:
        """What `from dotted import *` binds, where `dotted` is a module of the project
        (`ModuleView.star_exports`); None for any other module, or one that cannot be read."""
        if f"{dotted}.".startswith(TABLE_PREFIXES):
            return None  # JAX's and NumPy's names are the table's, even in their own repositories
        module = self.layout.find(asker, dotted)
        if module is None or module.notebook or (module.name == asker.name and not asker.notebook):
            return None
        data = self.ask(asker, module, STAR_EXPORTS)
        if not isinstance(data, dict):
            return None
        return StarExports(dict(data["names"]), frozenset(data["maybe"]), bool(data["open"]))

    def returned(self, asker: ModuleFile, ref: FunctionRef, signature) -> Value | None:
        return value_from_json(self._ask_ref(asker, ref, f"r:{ref.qualname}:{signature_key(signature)}"))

    def key_uses(self, asker: ModuleFile, ref: FunctionRef) -> dict[str, KeyUse]:
        return key_uses_from_json(self._ask_ref(asker, ref, "k:" + ref.qualname) or {})

    def returns_array(self, asker: ModuleFile, ref: FunctionRef) -> bool:
        return bool(self._ask_ref(asker, ref, "a:" + ref.qualname))

    def returns_compiled(self, asker: ModuleFile, ref: FunctionRef) -> bool:
        return bool(self._ask_ref(asker, ref, "j:" + ref.qualname))

    def named_elsewhere(self, asker: ModuleFile, name: str) -> bool:
        """Whether another module of the project that imports `asker` mentions `name` (a plain name or
        an attribute): it may then call the function of that name, outside any trace (a test, a
        script). A notebook imports modules and nothing imports it: None names its functions."""
        if asker.notebook:
            return False
        for path in self.ask(asker, asker, IMPORTERS) or ():
            importer = self.layout.by_path.get(path)
            if importer is None or self.ask(asker, importer, "n:" + name) is not False:
                return True
        return False

    def _ask_ref(self, asker: ModuleFile, ref: FunctionRef, question: str):
        module = self.layout.by_name.get(ref.module)
        return self.ask(asker, module, question) if module is not None else None

    def ask(self, asker: ModuleFile | None, module: ModuleFile, question: str):
        """The answer (JSON) to a question about `module`'s functions, noted as asked by `asker`."""
        answer = self._current(module, question)
        if asker is not None:
            self._asked.setdefault(asker.path, {})[(module.path, question)] = answer
        return answer

    def asked_by(self, module: ModuleFile) -> list[list]:
        """What the module's analysis has asked so far, with the answers: [path, question, answer]
        (the same list while nothing more was asked: records made in a row share it)."""
        asked = self._asked.get(module.path, {})
        kept = self._asked_lists.get(module.path)
        if kept is None or len(kept) != len(asked):
            kept = self._asked_lists[module.path] = [[path, question, answer]
                                                     for (path, question), answer in asked.items()]
        return kept

    def still_true(self, asked: list[list]) -> bool:
        """Whether every recorded question still gets its recorded answer."""
        for path, question, answer in asked:
            module = self.layout.by_path.get(path)
            if module is None or self._current(module, question) != answer:
                return False
        return True

    def _current(self, module: ModuleFile, question: str):
        key = (module.path, question)
        if key in self._answers:
            return self._answers[key]
        if key in self._answering:
            return None  # a question met again while it is being answered: not known
        if question == IMPORTERS:  # the other modules' property: never kept in this module's entry
            answer = self._answers[key] = self._importer_paths(module)
            return answer
        self._answering.add(key)
        try:
            entry = self._entry(module)
            record = entry.get("answers", {}).get(question) if entry is not None else None
            if record is not None and self.still_true(record["deps"]):
                answer = record["a"]
            else:
                answer = self._compute(module, question)
                if entry is not None and key not in self._answers:
                    self.index.record_answer(module.path, question,
                                             {"a": answer, "deps": self.asked_by(module)})
        finally:
            self._answering.discard(key)
        self._answers[key] = answer
        return answer

    def _compute(self, module: ModuleFile, question: str):
        kind, _, rest = question.partition(":")
        if kind in ("f", "m"):
            attributes, _, depth = rest.rpartition(":")
            found = self._exported(module, attributes.split("."), int(depth), bound=kind == "m")
            if found is None:
                return None
            # the function itself, with its tree's parameters, for this run; its text for the index
            self._functions[(module.path, question)] = found
            return [found.ref.module, found.ref.qualname, parameters_code(found.params)]
        if kind == "r":
            qualname, _, signature = rest.partition(":")
            return value_to_json(self._returned(module, qualname, signature_from_key(signature)))
        if kind == "k":
            return key_uses_to_json(self._key_uses(module, rest))
        if kind == "a":
            return self._returns_array(module, rest)
        if kind == "j":
            return self._returns_compiled(module, rest)
        if kind == "c":
            name, _, depth = rest.rpartition(":")
            found = self._pytree_class_attributes(module, name, int(depth))
            return [[attribute, int(kind)] for attribute, kind in found] if found is not None else None
        if kind == "v":
            name, how, field = rest.split(":")
            return self._configured(module, name, how, field)
        if kind == "w":
            traced, function = self._function(module, rest)
            return traced._decorator_wrapper(function) if function is not None else None
        if kind == "n":
            return self._mentions(module, rest)
        if kind == "s":
            return self._module_exports(module)
        return None

    def _module_exports(self, module: ModuleFile) -> dict | None:
        """What `from <module> import *` binds (`semantic.exports`), each name's object named as the
        project names it; None when the module cannot be read, or when its own bindings are being
        recorded (star imports in a cycle)."""
        file = self.file(module)
        if file is None or file.module_scope.recorded is False:
            return None
        found = module_exports(file, module.name if module.is_package else None)
        names: dict[str, str | None] = {}
        for name, target in found.names.items():
            if target is None:
                names[name] = f"{module.name}.{name}"
            elif f"{target}.".startswith(TABLE_PREFIXES):
                names[name] = target
            else:  # a sibling imported as a script imports it (`from util import f`): its project name
                names[name] = self.layout.dotted_for(module, target)
        for name in found.unbound:  # a submodule `__all__` lists: the star import loads it
            submodule = f"{module.name}.{name}"
            names[name] = submodule if module.is_package and submodule in self.layout.by_name else None
        return {"names": names, "maybe": sorted(found.maybe), "open": found.open}

    def _importer_paths(self, module: ModuleFile) -> list[str]:
        """The paths of the project's modules (and notebooks) that import `module`, sorted."""
        self._importers_of([])  # builds the import graph of the run's texts
        return sorted(path for path in (self._importers or {}).get(module.name, ()) if path != module.path)

    def _mentions(self, module: ModuleFile, name: str) -> bool | None:
        """Whether the module's code mentions `name` as a variable or an attribute; None when its text
        cannot be read or parsed."""
        if module.path not in self._names_mentioned:
            text = self._read_text(module)
            try:
                tree = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError, RecursionError):
                tree = None
            self._names_mentioned[module.path] = None if tree is None else frozenset(
                node.id if isinstance(node, ast.Name) else node.attr
                for node in ast.walk(tree) if isinstance(node, (ast.Name, ast.Attribute)))
        mentioned = self._names_mentioned[module.path]
        return None if mentioned is None else name in mentioned

    def _function(self, module: ModuleFile, qualname: str):
        traced = self.traced(module.name)
        function = traced.local_function(qualname) if traced is not None else None
        return traced, function

    def _exported(self, module: ModuleFile, attributes: list[str], depth: int,
                  bound: bool = False) -> ExternalFunction | None:
        """The function `attributes` name in a module: read from its parsed file alone (no analysis
        of it is needed, so modules that import each other still see each other's functions)."""
        file = self.file(module)
        if file is None:
            return None
        scope = file.module_scope
        binding = scope.bindings.get(attributes[0])
        if binding is None and scope.star_imports:  # `from .losses import *` in `__init__`
            target = file.names.name(attributes[0], scope)
            return self.function_at(module, ".".join([target, *attributes[1:]]), depth + 1, bound) \
                if target is not None else None
        if binding is None or len(binding.nodes) != 1:
            return None
        node = binding.nodes[0]
        if binding.is_import_only:  # a re-export: `from .losses import clipped_loss` in `__init__`
            target = file.names.binding_target(binding, scope)
            if target is None:
                return None
            return self.function_at(module, ".".join([target, *attributes[1:]]), depth + 1, bound)
        if len(attributes) == 2 and isinstance(node, cst.ClassDef):
            # through its class, a static method (`Loss.compute(x)`); on an instance, a plain
            # method defined by the class itself (a base elsewhere, a metaclass or a decorator
            # could change what runs)
            method = Scope(node, scope).bindings.get(attributes[1])
            if method is None or len(method.nodes) != 1 or not isinstance(method.nodes[0], cst.FunctionDef):
                return None
            node = method.nodes[0]
            decorators = {file.names.qualified_name(d.decorator, scope) for d in node.decorators}
            if decorators != (set() if bound else {"builtins.staticmethod"}):
                return None
            if bound and not (node.params.posonly_params or node.params.params):
                return None  # no `self` to receive the instance
        elif bound or len(attributes) != 1:
            return None
        elif not isinstance(node, cst.FunctionDef):
            node = assigned_lambda(node, binding.statements[0])
            if node is None:
                return None
        return ExternalFunction(FunctionRef(module.name, ".".join(attributes)), node.params)

    def _pytree_class_attributes(self, module: ModuleFile, name: str, depth: int) -> tuple[tuple[str, Kind], ...] | None:
        """A class of the module (or one it re-exports) that is a dataclass pytree: its attributes."""
        file = self.file(module)
        if file is None or "." in name:
            return None
        binding = file.module_scope.bindings.get(name)
        if binding is None and file.module_scope.star_imports:  # `from .state import *` in `__init__`
            target = file.names.name(name, file.module_scope)
            return self.pytree_attributes(module, target, depth + 1) if target is not None else None
        if binding is None or len(binding.nodes) != 1:
            return None
        if binding.is_import_only:  # a re-export: `from .state import TrainState` in `__init__`
            target = file.names.binding_target(binding, file.module_scope)
            return self.pytree_attributes(module, target, depth + 1) if target is not None else None
        traced = self.traced(module.name)
        return traced.pytree_class_attributes(name) if traced is not None else None

    def _configured(self, module: ModuleFile, name: str, how: str, field: str) -> list | None:
        """What a module's top-level `name` gives as `field` (read, or called), with the place it
        is said named by the module's path."""
        file = self.file(module)
        if file is None or "." in name:
            return None
        found = ConfiguredIntegers.of(file).exported(name, how, field)
        if found is None:
            return None
        if found.path is None:
            found = ConfiguredInteger(found.value, found.what, found.line, shown_path(file.path), found.command_line)
        return found.to_json()

    def _returned(self, module: ModuleFile, qualname: str, signature) -> Value | None:
        traced, function = self._function(module, qualname)
        return traced.summaries.get(function, signature) if function is not None else None

    def _key_uses(self, module: ModuleFile, qualname: str) -> dict[str, KeyUse]:
        traced, function = self._function(module, qualname)
        if function is None:
            return {}
        facts = KeyFlowFacts.of(traced.ctx)
        uses = {}
        for param, consumption in facts.summary(function).consumed.items():
            innermost = consumption
            while innermost.via is not None:
                innermost = innermost.via
            if innermost.draw in ALIGNING_DRAWS:
                continue  # the same shuffle given to several arrays is often meant: not followed
            consumer = innermost.draw or facts.ctx.module.code_for_node(innermost.node.func)
            where = innermost.where or f"{shown_path(traced.ctx.path)}:{facts.line(innermost.node)}"
            uses[param] = KeyUse(consumption.certain, consumer, where, facts.returned_positions(function, param))
        return uses

    def _returns_array(self, module: ModuleFile, qualname: str) -> bool:
        traced, function = self._function(module, qualname)
        if not isinstance(function, cst.FunctionDef) or "." in qualname:
            return False
        return NameOrigins.of(traced.ctx).returns_arrays(function)

    def _returns_compiled(self, module: ModuleFile, qualname: str) -> bool:
        traced, function = self._function(module, qualname)
        if not isinstance(function, cst.FunctionDef) or "." in qualname:
            return False
        return Dispatch.of(traced.ctx).returns_compiled(function)

    def seeds_of(self, module: ModuleFile) -> list[Seed]:
        return list(self._unit_of(module).seeds.values())


_PARSED_PARAMETERS: dict[str, "cst.Parameters"] = {}


def _parameters(code: str) -> "cst.Parameters":
    """Parameters parsed back from their text, once per text (many functions share a signature)."""
    found = _PARSED_PARAMETERS.get(code)
    if found is None:
        found = _PARSED_PARAMETERS[code] = parameters_from_code(code)
    return found


class ModuleView:
    """The project as one module's analysis sees it (`jaxmodel.external.ProjectView`): what it asks
    is noted as asked by that module."""

    def __init__(self, project: Project, module: ModuleFile) -> None:
        self.project = project
        self.module_file = module
        self.module = module.name

    def function_at(self, dotted: str, bound: bool = False) -> ExternalFunction | None:
        return self.project.function_at(self.module_file, dotted, bound=bound)

    def returned(self, ref: FunctionRef, signature) -> Value | None:
        return self.project.returned(self.module_file, ref, signature)

    def wrapper(self, ref: FunctionRef) -> str | None:
        return self.project.wrapper(self.module_file, ref)

    def key_uses(self, ref: FunctionRef) -> dict[str, KeyUse]:
        return self.project.key_uses(self.module_file, ref)

    def returns_array(self, ref: FunctionRef) -> bool:
        return self.project.returns_array(self.module_file, ref)

    def returns_compiled(self, ref: FunctionRef) -> bool:
        return self.project.returns_compiled(self.module_file, ref)

    def pytree_attributes(self, dotted: str) -> tuple[tuple[str, Kind], ...] | None:
        return self.project.pytree_attributes(self.module_file, dotted)

    def star_exports(self, module: str) -> StarExports | None:
        return self.project.star_exports(self.module_file, module)

    def configured(self, dotted: str, how: str, field: str) -> ConfiguredInteger | None:
        return self.project.configured(self.module_file, dotted, how, field)

    def seeds(self) -> list[Seed]:
        return self.project.seeds_of(self.module_file)

    def named_elsewhere(self, name: str) -> bool:
        return self.project.named_elsewhere(self.module_file, name)
