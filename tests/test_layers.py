"""The package is laid out in layers, each importing only the ones below it, with no import cycle;
and a rule only reads what the layers below it computed: it uses no private name of another module,
imports no other rule, and walks no tree itself.

Every import of a jaxlint module counts: module level, inside functions, under TYPE_CHECKING.
"""
from __future__ import annotations

import ast
import functools
from collections import deque
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


#: The nodes that hold statements (`body`, `orelse`, `finalbody`, a `try`'s handlers, a `match`'s
#: cases): an import is a statement, and no expression holds one (a lambda's body is an expression).
_HOLDING_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def _statements(tree: ast.Module):
    """Every statement of the tree, nested ones too, in `ast.walk`'s order (breadth first), without
    going through the expressions, which `ast.walk` visits by the hundred thousand in the package."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        todo.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, _HOLDING_STATEMENTS))
        yield node


@functools.lru_cache(maxsize=None)
def _tree(text: str, filename: str) -> ast.Module:
    """`ast.parse`, once per text: the rules' modules are read for their imports, their private names
    and their traversals (the checks here only read the trees)."""
    return ast.parse(text, filename)


def imports_of(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported jaxlint module, line) for every import in the file, wherever it stands."""
    tree = _tree(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "jaxlint":
                    found.append((_existing(alias.name), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            target = _resolved_from(module, path, node)
            if target.split(".")[0] != "jaxlint":
                continue
            for alias in node.names:  # `from jaxlint.engine import checker` imports a module
                submodule = f"{target}.{alias.name}"
                found.append((submodule if submodule in MODULES else _existing(target), node.lineno))
    return found


def _resolved_from(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The module an `ImportFrom` names, relative imports resolved against `module`."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


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


# -- what a rule may reach for ------------------------------------------------------------------
#: A rule reads facts the layers below it computed once per file, and reports. Two static checks
#: hold that: it uses no private name of another module (a helper two modules need is public, in
#: the lower layer that owns its concept), and it traverses no tree itself (the traversal belongs to
#: a fact of semantic/, jaxmodel/ or project/, asked through `ctx.fact(...)` or `X.of(ctx)`).
RULES = {module: path for module, path in MODULES.items() if layer_of(module) == "rules"}


def _shown(path: Path) -> Path:
    """How a failure names a file: from `src/`, or as given for a file outside the package."""
    return path.relative_to(SRC) if path.is_relative_to(SRC) else path


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(module: str, path: Path) -> list[str]:
    """What `module` takes that another jaxlint module keeps to itself: a name with a leading
    underscore imported from it (or a private module), or read as an attribute of a jaxlint module
    the file imports (`from ..jaxmodel import traced`, then `traced._collect`)."""
    tree = _tree(path.read_text(encoding="utf-8"), str(path))
    where = _shown(path)
    found = []
    module_aliases: dict[str, str] = {}  # local name -> the jaxlint module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolved_from(module, path, node)
            if target.split(".")[0] != "jaxlint":
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                private = [part for part in full.split(".") if _is_private(part)]
                if private:
                    found.append(f"{where}:{node.lineno}: imports `{alias.name}` from {target}: `{private[0]}` is "
                                 f"private to its module")
                elif full in MODULES:
                    module_aliases[alias.asname or alias.name] = full
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "jaxlint":
                    continue
                private = [part for part in alias.name.split(".") if _is_private(part)]
                if private:
                    found.append(f"{where}:{node.lineno}: imports {alias.name}: `{private[0]}` is private")
                elif alias.asname:
                    module_aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in module_aliases and _is_private(node.attr):
            found.append(f"{where}:{node.lineno}: reads `{node.value.id}.{node.attr}`: `{node.attr}` is private "
                         f"to {module_aliases[node.value.id]}")
    return found


def test_no_rule_uses_a_private_name_of_another_module():
    problems = [problem for module, path in RULES.items() for problem in private_imports(module, path)]
    assert not problems, (
        "rules use names other modules keep private:\n" + "\n".join(problems) + "\n"
        "Make the helper public (no leading underscore), defined once, in the layer below the rules that "
        "owns its concept (syntax/ for node helpers, semantic/ for bindings, jaxmodel/ for JAX knowledge), "
        "or ask a public fact of that layer; a rule's own helpers stay private to it.")


def test_no_rule_imports_another_rule():
    """Rules are independent of one another: what two rules share lives below them."""
    problems = [f"{MODULES[module].relative_to(SRC)}:{line}: {module} imports {target}"
                for module in RULES for target, line in GRAPH[module]
                if layer_of(target) == "rules" and target != module and target != "jaxlint.rules"]
    assert not problems, ("\n".join(problems) + "\nMove what they share into jaxmodel/ or semantic/ "
                                                "(or syntax/ for a node helper) and import it from there.")


def fact_builds(module: str, path: Path) -> list[str]:
    """Where a rule builds or fetches a fact itself (`Literals.of(...)`, a class of the semantic,
    JAX or project layer called) instead of reading it from `self.analysis`."""
    tree = _tree(path.read_text(encoding="utf-8"), str(path))
    imported_classes = {alias.asname or alias.name for node in _statements(tree) if isinstance(node, ast.ImportFrom)
                        for alias in node.names if alias.name[:1].isupper()
                        and layer_of(_resolved_from(module, path, node)) in ("semantic", "jaxmodel", "project")}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "of":
            found.append(f"{_shown(path)}:{node.lineno}: `.of(...)` builds a fact")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in imported_classes:
            found.append(f"{_shown(path)}:{node.lineno}: `{node.func.id}(...)` builds a fact")
        elif isinstance(node, ast.Name) and node.id == "ctx":
            found.append(f"{_shown(path)}:{node.lineno}: `ctx`: a rule reads `self.walk` and `self.analysis`")
    return found


def test_no_rule_builds_a_fact_itself():
    """A rule reads every fact through `self.analysis` (`FileAnalysis`), the one place they are built."""
    problems = [problem for module, path in RULES.items() for problem in fact_builds(module, path)]
    assert not problems, ("\n".join(problems) + "\nAdd an accessor to src/jaxlint/analysis.py (with its cost in "
                                                "its docstring) and read it from `self.analysis`.")


def test_the_fact_check_sees_each_way_of_building_one(tmp_path):
    rules = tmp_path / "jaxlint" / "rules"
    rules.mkdir(parents=True)
    rule = rules / "made_up.py"
    rule.write_text("from ..semantic.literals import Literals\n"
                    "def f(self, ctx):\n    Literals.of(ctx)\n    Literals(self.file)\n", encoding="utf-8")
    found = fact_builds("jaxlint.rules.made_up", rule)
    assert sorted(line.split(": ", 1)[1] for line in found) == [
        "`.of(...)` builds a fact", "`Literals(...)` builds a fact", "`ctx`: a rule reads `self.walk` and `self.analysis`"]


#: The walk primitives of `syntax.walk` and libcst's and `ast`'s own ways of visiting a tree: a rule
#: that calls one traverses a tree itself.
TRAVERSING_CALLS = frozenset({
    "walk", "children", "node_fields", "visit", "findall", "extractall", "iter_child_nodes", "iter_fields",
})
#: Attributes that enumerate a node's children (`CSTNode.children`; the enumerator table of `syntax.walk`).
TRAVERSING_ATTRIBUTES = frozenset({"children", "ENUMERATORS"})
#: Base classes of a visitor (libcst's, its matchers', `ast`'s): a rule is replayed, never a visitor.
VISITOR_BASES = frozenset({
    "CSTVisitor", "CSTTransformer", "BatchableCSTVisitor", "MatcherDecoratableVisitor",
    "MatcherDecoratableTransformer", "NodeVisitor", "NodeTransformer",
})
INSTEAD = ("ask a fact of semantic/, jaxmodel/ or project/ that answers the question (`ctx.fact(Fact)` or "
           "`Fact.of(ctx)`), moving this traversal into it, computed once per file")


def traversals(path: Path) -> list[str]:
    """Each place a rule module walks a tree itself, as `file:line: what`."""
    tree = _tree(path.read_text(encoding="utf-8"), str(path))
    where = _shown(path)
    found = []

    def add(node: ast.AST, what: str) -> None:
        found.append(f"{where}:{node.lineno}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "walk":
            names = sorted(a.name for a in node.names if a.name in TRAVERSING_CALLS | TRAVERSING_ATTRIBUTES)
            if names:
                add(node, f"imports the walk primitive(s) {', '.join(names)}")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in TRAVERSING_CALLS:
                add(node, f"calls `{name}(...)`, a traversal of a tree")
        elif isinstance(node, ast.Attribute) and node.attr in TRAVERSING_ATTRIBUTES and isinstance(node.ctx, ast.Load):
            add(node, f"reads `.{node.attr}` to go down a tree")
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
                if name in VISITOR_BASES:
                    add(node, f"`{node.name}` is a {name}: a walk of its own")
        if isinstance(node, ast.Attribute) and node.attr == "body" and _names_module(node.value):
            add(node, "reads the module's statements (`module.body`)")
        if isinstance(node, (ast.For, ast.AsyncFor)) and _mentions_body(node.iter):
            add(node, "loops over a `.body` (statements of a block)")
        elif isinstance(node, ast.comprehension) and _mentions_body(node.iter):
            add(node.iter, "a comprehension over a `.body` (statements of a block)")
        elif isinstance(node, ast.While):
            worklist = _worklist(node)
            if worklist:
                add(node, f"an explicit traversal: `while {worklist}` pops nodes and pushes more onto `{worklist}`")
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Name) \
                and node.iter.id in _grown(node.body) \
                and _reads_parts_of(node.body, {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}):
            add(node, f"an explicit traversal: a loop over `{node.iter.id}` that appends the parts of each item")
    return sorted(found, key=lambda problem: int(problem.split(":")[1]))


def _names_module(expr: ast.AST) -> bool:
    """`module`, `ctx.module`, `self.ctx.module`: the file's tree."""
    return (isinstance(expr, ast.Name) and expr.id == "module") or \
        (isinstance(expr, ast.Attribute) and expr.attr == "module")


def _mentions_body(expr: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "body" for n in ast.walk(expr))


def _grown(body: list[ast.stmt]) -> set[str]:
    """Names of lists a block pushes onto (`x.append(...)`, `x.extend(...)`, `x += ...`)."""
    grown = set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("append", "extend", "insert", "appendleft", "extendleft") \
                    and isinstance(node.func.value, ast.Name):
                grown.add(node.func.value.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                grown.add(node.target.id)
    return grown


def _worklist(loop: ast.While) -> str | None:
    """The list a `while` loop runs as a worklist down a tree: tested by the loop, popped in its body,
    pushed onto again, and the popped item's parts read (`node.children`, `target.elements`). A
    worklist over a graph the rule built itself (names to the names they call) reads no parts of
    what it pops, and is not a walk of the tree."""
    tested = {n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name)}
    popped: dict[str, set[str]] = {}  # worklist -> the names its popped items are bound to
    for statement in loop.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _pops(node.value):
                bound = {n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name)}
                popped.setdefault(_pops(node.value), set()).update(bound)
    grown = _grown(loop.body)
    for worklist in sorted(tested & grown & set(popped)):
        if _reads_parts_of(loop.body, popped[worklist]):
            return worklist
    return None


def _pops(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("pop", "popleft") and isinstance(func.value, ast.Name):
        return func.value.id
    return None


def _reads_parts_of(body: list[ast.stmt], names: set[str]) -> bool:
    return any(isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names
               for statement in body for node in ast.walk(statement))


def test_no_rule_traverses_a_tree_itself():
    problems = [problem for path in RULES.values() for problem in traversals(path)]
    assert not problems, (
        "rules walk the tree themselves:\n" + "\n".join(problems) + f"\nInstead, {INSTEAD}. A rule reads "
        "the replayed walk (`ctx.parent`, `ctx.ancestors`, `ctx.scope`) and facts, decides, and reports.")


@pytest.mark.parametrize("code, expected", [
    ("from ..syntax.walk import walk\nwalk(n, f, None)\n", ["imports the walk primitive(s) walk", "calls `walk(...)`"]),
    ("for s in self.ctx.module.body:\n    pass\n", ["module.body", "loops over a `.body`"]),
    ("ok = any(s is d for s in guard.body.body)\n", ["a comprehension over a `.body`"]),
    ("stack = [root]\nwhile stack:\n    node = stack.pop()\n    stack.extend(node.children)\n",
     ["an explicit traversal: `while stack`", "reads `.children`"]),
    ("queue = [root]\nfor node in queue:\n    queue.extend(node.elements)\n", ["a loop over `queue` that appends the parts"]),
    ("todo = [tree]\nwhile todo:\n    node, depth = todo.pop()\n    todo += [(e.value, depth) for e in node.elements]\n",
     ["an explicit traversal: `while todo`"]),
    # a closure over a graph of names the rule collected: no part of a node is read
    ("todo = list(entries)\nwhile todo:\n    for called in calls.get(todo.pop(), ()):\n        todo.append(called)\n", []),
    ("class V(cst.CSTVisitor):\n    pass\nnode.visit(V())\n", ["is a CSTVisitor", "calls `visit(...)`"]),
    ("for arg in call.args:\n    names.append(arg)\nwhile i > 0:\n    i -= 1\n", []),
])
def test_the_traversal_check_sees_each_kind(tmp_path, code, expected):
    """The check itself: each way of walking a tree is named, and ordinary loops are not."""
    rule = tmp_path / "some_rule.py"
    rule.write_text(code)
    found = traversals(rule)
    assert len(found) == len(expected), found
    for what in expected:
        assert any(what in problem for problem in found), (what, found)


def test_the_private_name_check_sees_imports_and_attributes(tmp_path):
    rule = tmp_path / "rule.py"
    rule.write_text("from .jit_in_loop import _short\nfrom ..jaxmodel import traced\nfrom ..rulebase.rule import Rule\n"
                    "traced._collect\ntraced.TracedFunctions\n")
    found = private_imports("jaxlint.rules.nested_jit", rule)
    assert len(found) == 2 and "`_short` from jaxlint.rules.jit_in_loop" in found[0] and "traced._collect" in found[1]
