"""The package is laid out in layers, each importing only the ones below it, with no import cycle.

Every import of a jaxlint module counts: module level, inside functions, under TYPE_CHECKING.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "jaxlint"

#: Lowest first. A module belongs to the layer of the first component below `jaxlint`
#: (`jaxlint.semantic.scopes` -> semantic); `jaxlint` itself holds only the version.
LAYERS = (
    "jaxlint",     # __version__
    "reading",     # reading regular files within a size limit, without blocking
    "model",       # plain values: findings, fixes, positions, severities, settings
    "catalogue",   # rule documentation (rules/*.toml), the deprecation table
    "syntax",      # libcst primitives: the fast walk, positions, text fixes, noqa comments
    "semantic",    # binding-level facts: scopes, names, literals, module state, containers
    "dataflow",    # a domain-independent flow interpreter
    "jaxmodel",    # JAX knowledge without rules: transforms, tracing, value kinds, keys, dispatch
    "project",     # the import graph of the checked tree, module summaries
    "analysis",    # typed access to all of the above for one file
    "rulebase",    # what a rule is written against: Rule, fixes, the walk state
    "rules",       # one module per rule
    "engine",      # the registry of rules, checking and fixing a file, notebooks
    "api",         # the one entry for front ends
    "runtime",     # runtime mode: confirms findings by running JAX
    "frontends",   # command line, runner, configuration, cache, output, flake8 plugin
    "__main__",    # `python -m jaxlint`
)
RANK = {name: index for index, name in enumerate(LAYERS)}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


MODULES = all_modules()


def layer_of(module: str) -> str:
    parts = module.split(".")
    return "jaxlint" if len(parts) == 1 else parts[1]


def imports_of(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported jaxlint module, line) for every import in the file, wherever it stands."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "jaxlint":
                    found.append((_existing(alias.name), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "jaxlint":
                continue
            for alias in node.names:  # `from jaxlint.engine import checker` imports a module
                submodule = f"{target}.{alias.name}"
                found.append((submodule if submodule in MODULES else _existing(target), node.lineno))
    return found


def _existing(name: str) -> str:
    """The module an import runs: `jaxlint.x.attr` is `jaxlint.x`."""
    while name not in MODULES and "." in name:
        name = name.rpartition(".")[0]
    return name


GRAPH = {module: imports_of(module, path) for module, path in MODULES.items()}


def test_every_module_is_in_a_known_layer():
    unknown = sorted({layer_of(m) for m in MODULES} - set(RANK))
    assert not unknown, f"place these packages in LAYERS (tests/test_layers.py): {unknown}"


def test_no_import_from_a_lower_layer_to_a_higher_one():
    problems = []
    for module, imported in GRAPH.items():
        for target, line in imported:
            low, high = layer_of(module), layer_of(target)
            if RANK.get(high, -1) > RANK.get(low, -1):
                problems.append(f"{MODULES[module].relative_to(SRC)}:{line}: {module} (layer {low}) imports "
                                f"{target} (layer {high}, above it)")
    assert not problems, "\n".join(problems)


def test_no_import_cycle():
    edges = {m: sorted({t for t, _ in imported if t != m and t in MODULES}) for m, imported in GRAPH.items()}
    cycles = _cycles(edges)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join([*c, c[0]]) for c in cycles)


def _cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in edges[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_one_cycle(sorted(c), edges) for c in components]


def _one_cycle(component: list[str], edges: dict[str, list[str]]) -> list[str]:
    """A concrete cycle through the first module of a component (breadth-first back to it)."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for succ in edges[node]:
            if succ == start:
                return paths[node]
            if succ in members and succ not in paths:
                paths[succ] = paths[node] + [succ]
                queue.append(succ)
    return component


@pytest.mark.parametrize("import_line, importer, target, expected", [
    ("from ..model.finding import Finding", "jaxlint.engine.checker", "jaxlint.model.finding", True),
    ("from ..engine import checker", "jaxlint.rules.nested_jit", "jaxlint.engine.checker", False),
])
def test_the_layer_check_reads_relative_imports(tmp_path, import_line, importer, target, expected):
    """The check itself: a relative import resolves to the module it names, and an upward one is seen."""
    path = MODULES[importer]
    tree_module = tmp_path / path.name
    tree_module.write_text(import_line + "\n")
    (imported, _), = imports_of(importer, tree_module)
    assert imported == target
    assert (RANK[layer_of(importer)] >= RANK[layer_of(imported)]) is expected


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert _cycles({"a": ["b"], "b": []}) == []


#: A module is the size of one concept: past this, it holds several, and should be split by concept.
MAX_MODULE_LINES = 800


def test_no_module_is_over_the_size_of_one_concept():
    oversized = {name: lines for name, path in MODULES.items()
                 if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not oversized, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {oversized}"
