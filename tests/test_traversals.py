"""How often checking a file traverses it, counted by what really runs rather than by call sites.

A check walks the file once (the semantic model's walk), replays that walk to the rules, and runs
the flow interpreter once per (domain, function, entry state); nothing else may go over the
module's statements. Counted here while real files are checked:

* every iteration of the module's body: the parsed module is given a body that counts each
  iteration, whoever makes it (a `for` over `module.body`, `enumerate`, `list`, libcst's own
  visitors and code generation);
* every enumeration of the module's children (what any walk built on `syntax.walk` does first);
* the entry points of a walk (`syntax.walk.walk` from a module, `Walker.run`, `Walker.replay`,
  libcst's `Module.visit`: walk_counting.py);
* every run of the flow interpreter, by domain, root node and entry state.

A traversal added anywhere in the analysis shows up as a count of its own and fails the test.
"""
from __future__ import annotations

import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import libcst as cst
import pytest

from jaxlint.dataflow.interpreter import FlowInterpreter
from jaxlint.engine import parsing
from jaxlint.engine.files import check_file
from jaxlint.model.settings import Settings
from jaxlint.syntax.walk import ENUMERATORS

from conftest import ROOT
from walk_counting import RULES, SEMANTIC, walks_counted

EXAMPLES = [ROOT / "examples" / name for name in ("training.py", "sampler.py", "pipeline.py", "tracing.py", "clean.py")]
#: what a check of a file is allowed to count: the model's walk and the rules' replay of it
ALLOWED = {SEMANTIC: 1, RULES: 1}
#: libcst writing the module's code: the positions of reported nodes are read from it
POSITIONS = "code generation from positions.py"
#: where an iteration of the module's body is a flow interpreter running a module's statements
_INTERPRETER = "interpreter.py"
_CODE_GENERATION = "module.py:_codegen_impl"


def _caller(depth: int) -> str:
    frame = sys._getframe(depth)
    return f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"


def _code_generation_caller() -> str:
    """The module of jaxlint's that had libcst write the module's code."""
    frame = sys._getframe(3)
    while frame is not None and "jaxlint" not in frame.f_code.co_filename.replace("\\", "/").split("/"):
        frame = frame.f_back
    return Path(frame.f_code.co_filename).name if frame is not None else "outside jaxlint"


def traversals(counts: Counter) -> dict[str, int]:
    """The counts but the code generation for positions, which writes text rather than analysing."""
    return {kind: count for kind, count in counts.items() if kind != POSITIONS}


class CountingBody(tuple):
    """A module's statements that count each iteration over them, by the function that iterates."""

    counts: Counter

    def __iter__(self):
        caller = _caller(2)
        if caller == _CODE_GENERATION:
            self.counts[f"code generation from {_code_generation_caller()}"] += 1
        elif not caller.startswith(_INTERPRETER):
            self.counts[f"iteration of module.body from {caller}"] += 1
        return super().__iter__()


@contextmanager
def traversals_counted(monkeypatch) -> Iterator[tuple[Counter, Counter]]:
    """(traversals by kind and caller, flow interpreter runs by (domain, root, entry)) while the
    block runs."""
    runs: Counter = Counter()
    with walks_counted() as counts:
        body_type = type("CountingBody", (CountingBody,), {"counts": counts})
        original_parse = parsing.parse_module

        def parse_with_counting_body(text: str) -> cst.Module:
            module = original_parse(text)
            object.__setattr__(module, "body", body_type(module.body))  # the tree is otherwise the same
            return module

        def children_of_module(module: cst.Module):
            caller = _caller(2)
            # the model's walk is counted as such (`Walker.run`); any other enumeration is a traversal
            if caller != "walk_state.py:run":
                counts[f"children of the module from {caller}"] += 1
            return (("body", statement) for statement in tuple.__iter__(module.body))

        original_run = FlowInterpreter.run

        def counting_run(self, body, entry=None, path_state=None):
            signature = tuple(sorted((name, repr(value)) for name, value in (entry or {}).items()))
            # the trace a value flow runs under (jit's abstract values, a filtering transform's static
            # leaves) is part of where it starts: the same body under jit and under grad are two runs
            trace = (getattr(self.domain, "abstract", None), getattr(self.domain, "static_leaves", None))
            runs[(type(self.domain).__name__, id(body), signature, repr(path_state), trace)] += 1
            return original_run(self, body, entry, path_state)

        monkeypatch.setattr(parsing, "parse_module", parse_with_counting_body)
        monkeypatch.setitem(ENUMERATORS, cst.Module, children_of_module)
        monkeypatch.setattr(FlowInterpreter, "run", counting_run)
        try:
            yield counts, runs
        finally:
            monkeypatch.undo()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_a_check_walks_once_replays_once_and_runs_each_flow_once(path: Path, monkeypatch) -> None:
    with traversals_counted(monkeypatch) as (counts, runs):
        result = check_file(str(path), Settings())
    assert result.internal_error is None and result.findings or path.name == "clean.py"
    assert traversals(counts) == ALLOWED
    assert runs  # the flows ran, from the function bodies (and modules) the interpreter is given


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_each_flow_runs_once_per_domain_function_and_entry(path: Path, monkeypatch) -> None:
    """A traced function's flow and a call summary with the same entry are one run; so are a key
    summary's last run and the run that finds the function's reuses."""
    with traversals_counted(monkeypatch) as (_, runs):
        check_file(str(path), Settings())
    assert runs and {run: count for run, count in runs.items() if count > 1} == {}


def test_an_added_traversal_of_the_module_body_is_counted(monkeypatch) -> None:
    """The counting itself: a fact that loops over the module's statements is one more traversal."""
    from jaxlint.semantic import module_state

    original = module_state.ModuleState.compute

    def compute_with_a_loop(model):
        for _ in model.file.module.body:
            pass
        return original(model)

    monkeypatch.setattr(module_state.ModuleState, "compute", staticmethod(compute_with_a_loop))
    with traversals_counted(monkeypatch) as (counts, _):
        check_file(str(EXAMPLES[0]), Settings())
    assert counts.pop("iteration of module.body from test_traversals.py:compute_with_a_loop") == 1
    assert traversals(counts) == ALLOWED


def test_an_added_walk_of_the_module_is_counted(monkeypatch) -> None:
    """The counting itself: enumerating the module's children (any walk below `syntax.walk`) is counted."""
    from jaxlint.semantic import module_state
    from jaxlint.syntax.walk import children

    original = module_state.ModuleState.compute

    def compute_with_a_walk(model):
        list(children(model.file.module))
        return original(model)

    monkeypatch.setattr(module_state.ModuleState, "compute", staticmethod(compute_with_a_walk))
    with traversals_counted(monkeypatch) as (counts, _):
        check_file(str(EXAMPLES[0]), Settings())
    assert counts.pop("children of the module from walk.py:children") == 1
    assert traversals(counts) == ALLOWED
