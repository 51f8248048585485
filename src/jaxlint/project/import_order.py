"""The order in which a project's modules are settled: importers before the modules they import,
the modules of an import cycle together."""
from __future__ import annotations

from typing import Callable

from .layout import ModuleFile


def importer_first_groups(modules: list[ModuleFile],
                          imports: Callable[[ModuleFile], set[str]]) -> list[list[ModuleFile]]:
    """The modules' import cycles (strongly connected components; most modules are one alone),
    importers before the modules they import (Tarjan's algorithm, without recursion)."""
    by_name = {m.name: m for m in modules if not m.notebook}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[ModuleFile] = []
    groups: list[list[ModuleFile]] = []

    def successors(module: ModuleFile) -> list[ModuleFile]:
        return [by_name[n] for n in sorted(imports(module)) if n in by_name]

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
