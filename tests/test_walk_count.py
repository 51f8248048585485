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

from collections import Counter
from pathlib import Path

import pytest

from jaxlint.engine.files import check_file
from jaxlint.model.settings import Settings
from jaxlint.syntax import walk as plain_walk

from conftest import FIXTURES, ROOT, checked_by_default
from walk_counting import RULES, SEMANTIC, walks_counted

#: every fixture and example that parses (the JAX000 fixtures are there to fail parsing), notebooks too
FILES = sorted(p for p in [*FIXTURES.glob("*.py"), *(FIXTURES / "notebooks").glob("*.ipynb"),
                           *(ROOT / "examples").glob("*.py"), *(ROOT / "examples").glob("*.ipynb")]
               if not p.name.startswith("JAX000"))


@pytest.fixture
def module_walks() -> Counter:
    """Counts the walks whose root is a whole module, by kind (and caller, for any other walk)."""
    with walks_counted() as counts:
        yield counts


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_one_semantic_walk_and_the_rules_replay(path: Path) -> None:
    # `check_file` with the default settings (every rule but those selected by their full code
    # only), walks counted: the run test_examples and test_deliberate_keys read the findings of
    result, walks = checked_by_default(path)
    assert result.internal_error is None
    # a notebook is checked as one module made of its code cells
    assert walks == {SEMANTIC: 1, RULES: 1}


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
