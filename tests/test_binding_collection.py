"""A scope's bindings are the same whether or not the collector looks below statements that cannot
bind anything below themselves (`x = …`, `return …`, imports: no `:=` in the file)."""
from __future__ import annotations

from pathlib import Path

import pytest

from jaxlint.model.settings import Settings
from jaxlint.semantic import scopes
from jaxlint.semantic.model import SemanticModel
from jaxlint.semantic.source_file import SourceFile

from conftest import parsed

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "examples").glob("*.py"), *(ROOT / "tests" / "fixtures").glob("JAX1*.py"),
                  *(ROOT / "tests" / "fixtures").glob("JAX4*.py")])
WALRUS = '''\
import jax
def f(xs):
    y = [z := x for x in xs]
    assert (w := len(xs)) > 0
    with open(p := "a") as handle:
        return (v := 1), z, w, p, handle
'''


def _all_bindings(source: str) -> list[tuple[str, dict[str, list[str]], set[str], set[str]]]:
    module = parsed(source)  # libcst trees are immutable: both collections read one parse, shared with other tests
    file = SourceFile("t.py", source, module, Settings())
    model = SemanticModel.of(file)
    found = []
    for scope in (file.module_scope, *model.scopes.values()):
        scope.collected.clear()
        scope._bindings = None
        bindings = scope.bindings
        found.append((scope.kind, {name: [type(n).__name__ for n in b.nodes] + b.targets + sorted(b.fallbacks)
                                   for name, b in bindings.items()}, set(scope.globals), set(scope.nonlocals)))
    return found


@pytest.mark.parametrize("source", [*(p.read_text(encoding="utf-8") for p in SOURCES[:30]), WALRUS])
def test_looking_below_every_statement_binds_the_same(source, monkeypatch):
    pruned = _all_bindings(source)
    monkeypatch.setattr(scopes, "_NOTHING_BOUND_BELOW", frozenset())
    assert pruned == _all_bindings(source)


def test_walrus_targets_inside_statements_are_bound():
    kinds = _all_bindings(WALRUS)
    function = next(bindings for kind, bindings, _, _ in kinds if kind == "function")
    assert {"y", "w", "p", "v", "handle"} <= set(function)
