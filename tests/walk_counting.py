"""Counting the walks of a whole module while files are checked (test_walk_count says why), for the
walk-count tests and for the run of each file with the default settings that conftest shares.

The entry points of a walk are counted: `syntax.walk.walk` (under every name a jaxlint module binds
it to), `Walker.run` (the model's walk, or another), `Walker.replay` (the rules' replay, or another)
and libcst's own `Module.visit` (what `MetadataWrapper` providers use).
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import libcst as cst

SEMANTIC = "the semantic model's walk"
RULES = "the rules' replay of it"
#: the modules of the semantic model's walk's visitors
_MODEL_MODULES = ("jaxlint.semantic.model", "jaxlint.semantic.bindings")


@functools.cache  # once a module is imported it stays in `sys.modules`
def import_analysis_modules() -> None:
    """Imports every module of the analysis, so that each name bound to `walk` can be swapped."""
    import jaxlint

    for info in pkgutil.walk_packages(jaxlint.__path__, "jaxlint."):
        if info.name.startswith(("jaxlint.runtime", "jaxlint.frontends")) or info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)


def _caller(depth: int = 2) -> str:
    """The function that called the counted entry point (`depth` frames above this one)."""
    frame = sys._getframe(depth)
    return f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"


def _walker_kind(walker, how: str) -> str:
    from jaxlint.rulebase.rule import Rule

    owners = {handler.__self__ for table in (walker.visitors, walker.leavers)
              for handlers in table.values() for handler in handlers}
    if how == "run" and owners and all(type(owner).__module__ in _MODEL_MODULES for owner in owners):
        return SEMANTIC
    if how == "replay" and owners and all(isinstance(owner, Rule) for owner in owners):
        return RULES
    return f"Walker.{how} of {sorted(type(owner).__name__ for owner in owners)} from {_caller(3)}"


@contextmanager
def walks_counted() -> Iterator[Counter]:
    """The walks whose root is a whole module, by kind (and caller, for any other walk), counted
    while the block runs; every entry point is put back after it."""
    from jaxlint.semantic import walk_state
    from jaxlint.syntax import walk as plain_walk

    import_analysis_modules()
    counts: Counter = Counter()
    original_walk = plain_walk.walk

    def counting_walk(root, enter, leave):
        if isinstance(root, cst.Module):
            counts[f"walk from {_caller()}"] += 1
        return original_walk(root, enter, leave)

    original_run = walk_state.Walker.run

    def counting_run(self, module, events=None):
        if isinstance(module, cst.Module):
            counts[_walker_kind(self, "run")] += 1
        return original_run(self, module, events)

    original_replay = walk_state.Walker.replay

    def counting_replay(self, events):
        counts[_walker_kind(self, "replay")] += 1
        return original_replay(self, events)

    original_visit = cst.Module.visit

    def counting_visit(self, visitor):
        counts[f"libcst visit from {_caller()}"] += 1
        return original_visit(self, visitor)

    swapped = [module for name, module in list(sys.modules.items())
               if name.startswith("jaxlint") and getattr(module, "walk", None) is original_walk]
    own_visit = "visit" in vars(cst.Module)  # else inherited from CSTNode, and inherited again after
    for module in swapped:
        module.walk = counting_walk
    walk_state.Walker.run, walk_state.Walker.replay = counting_run, counting_replay
    cst.Module.visit = counting_visit
    try:
        yield counts
    finally:
        for module in swapped:
            module.walk = original_walk
        walk_state.Walker.run, walk_state.Walker.replay = original_run, original_replay
        if own_visit:
            cst.Module.visit = original_visit
        else:
            del cst.Module.visit
