"""A file is walked once, whatever the rules ask: to build its semantic model, whose recorded walk
the rules' handlers are then replayed over.

Every fact reads the `SemanticModel` (or walks a function body, a statement) instead of walking the
whole module for itself. Here the entry points of a walk are counted while each fixture and example
is checked with every rule enabled: `syntax.walk.walk`, `Walker.run` (the model's walk, or another),
`Walker.replay` (the rules' replay, or another), and libcst's own `Module.visit` (what
`MetadataWrapper` providers use). A fact that adds a whole-module walk of its own fails this test,
and so does a rules' walk that reads the tree again instead of replaying the model's.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from collections import Counter
from pathlib import Path

import libcst as cst
import pytest

import jaxlint
from jaxlint.engine.files import check_file
from jaxlint.model.settings import Settings
from jaxlint.rulebase.rule import Rule
from jaxlint.semantic import walk_state
from jaxlint.syntax import walk as plain_walk

from conftest import FIXTURES, ROOT

#: every fixture and example that parses (the JAX000 fixtures are there to fail parsing), notebooks too
FILES = sorted(p for p in [*FIXTURES.glob("*.py"), *(FIXTURES / "notebooks").glob("*.ipynb"),
                           *(ROOT / "examples").glob("*.py"), *(ROOT / "examples").glob("*.ipynb")]
               if not p.name.startswith("JAX000"))
SEMANTIC = "the semantic model's walk"
RULES = "the rules' replay of it"


def _import_analysis_modules() -> None:
    """Imports every module of the analysis, so that each name bound to `walk` can be swapped."""
    for info in pkgutil.walk_packages(jaxlint.__path__, "jaxlint."):
        if info.name.startswith(("jaxlint.runtime", "jaxlint.frontends")) or info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)


def _caller(depth: int = 2) -> str:
    """The function that called the counted entry point (`depth` frames above this one)."""
    frame = sys._getframe(depth)
    return f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"


def _walker_kind(walker: walk_state.Walker, how: str) -> str:
    owners = {handler.__self__ for table in (walker.visitors, walker.leavers)
              for handlers in table.values() for handler in handlers}
    if how == "run" and owners and all(type(owner).__module__ == "jaxlint.semantic.model" for owner in owners):
        return SEMANTIC
    if how == "replay" and owners and all(isinstance(owner, Rule) for owner in owners):
        return RULES
    return f"Walker.{how} of {sorted(type(owner).__name__ for owner in owners)} from {_caller(3)}"


@pytest.fixture
def module_walks(monkeypatch) -> Counter:
    """Counts the walks whose root is a whole module, by kind (and caller, for any other walk)."""
    _import_analysis_modules()
    counts: Counter = Counter()
    original_walk = plain_walk.walk

    def counting_walk(root, enter, leave):
        if isinstance(root, cst.Module):
            counts[f"walk from {_caller()}"] += 1
        return original_walk(root, enter, leave)

    for name, module in list(sys.modules.items()):
        if name.startswith("jaxlint") and getattr(module, "walk", None) is original_walk:
            monkeypatch.setattr(module, "walk", counting_walk)

    original_run = walk_state.Walker.run

    def counting_run(self, module, events=None):
        if isinstance(module, cst.Module):
            counts[_walker_kind(self, "run")] += 1
        return original_run(self, module, events)

    monkeypatch.setattr(walk_state.Walker, "run", counting_run)
    original_replay = walk_state.Walker.replay

    def counting_replay(self, events):
        counts[_walker_kind(self, "replay")] += 1
        return original_replay(self, events)

    monkeypatch.setattr(walk_state.Walker, "replay", counting_replay)
    original_visit = cst.Module.visit

    def counting_visit(self, visitor):
        counts[f"libcst visit from {_caller()}"] += 1
        return original_visit(self, visitor)

    monkeypatch.setattr(cst.Module, "visit", counting_visit)
    return counts


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_one_semantic_walk_and_the_rules_replay(path: Path, module_walks: Counter) -> None:
    result = check_file(str(path), Settings(select=("JAX",)))
    assert result.internal_error is None
    # a notebook is checked as one module made of its code cells
    assert dict(module_walks) == {SEMANTIC: 1, RULES: 1}


def test_a_fact_with_a_walk_of_its_own_is_counted(module_walks: Counter, monkeypatch) -> None:
    """The counting itself: a fact that walks the module for itself shows up as another walk."""
    from jaxlint.jaxmodel import traced

    original = traced.TracedFunctions._collect

    def collect_with_a_walk(self) -> None:
        plain_walk.walk(self.ctx.module, lambda node, field: True, lambda node: None)
        original(self)

    monkeypatch.setattr(traced.TracedFunctions, "_collect", collect_with_a_walk)
    check_file(str(ROOT / "examples" / "training.py"), Settings(select=("JAX",)))
    assert module_walks[SEMANTIC] == 1 and module_walks[RULES] == 1
    assert module_walks["walk from test_walk_count.py:collect_with_a_walk"] == 1


def test_a_rules_walk_over_the_tree_is_counted(module_walks: Counter, monkeypatch) -> None:
    """The counting itself: rules walking the tree again, not replaying the model's walk, is another walk."""
    from jaxlint.engine import checker

    monkeypatch.setattr(checker, "_recorded_walk", lambda file: None)
    result = check_file(str(ROOT / "examples" / "training.py"), Settings(select=("JAX",)))
    assert result.findings  # the findings do not depend on how the rules are walked
    assert RULES not in module_walks
    assert [kind for kind in module_walks if kind.startswith("Walker.run of [") and kind.endswith("checker.py:_run_rules")]
