"""Cost linear in a file's size and in its findings, and a notebook's cost that of the same code as a
file. The sizes are small enough to run in seconds; what is asserted is a count of the work done, or
a ratio of CPU times measured in the same test with a generous bound, never a time."""
from __future__ import annotations

import os
import time
import tracemalloc

import libcst as cst
import pytest

from jaxlint.engine.checker import check_source, enabled_rules
from jaxlint.engine.notebook_check import check_notebook_file
from jaxlint.model.settings import Settings
from jaxlint.semantic.model import SemanticModel
from jaxlint.semantic.source_file import SourceFile
from jaxlint.syntax import positions
from jaxlint.syntax.positions import node_spans, statement_spans

from scale_inputs import import_chain, jitted_functions, notebook, small_functions

SETTINGS = Settings()


def _check(source: str, path: str = "big.py") -> list:
    return check_source(source, path, SETTINGS, enabled_rules(SETTINGS, path))


def _check_notebook(text: str) -> list:
    return check_notebook_file(text, "big.ipynb", SETTINGS, enabled_rules(SETTINGS, "big.ipynb"), False).findings


class _CountingList(list):
    """A list that counts the items its iterations hand out (indexing it is not counted)."""

    handed_out = 0

    def __iter__(self):
        for item in list.__iter__(self):
            _CountingList.handed_out += 1
            yield item


@pytest.fixture
def model_scans(monkeypatch):
    """How many entries of the semantic model's whole-file records (every Name, every recorded
    node, the walk's events) were read by iterating them: a check that looks through the whole
    file for each finding reads a number that grows with the file's size times its findings."""
    built = SemanticModel.__init__

    def counting(self, file):
        built(self, file)
        self.names, self.sites, self.events = (_CountingList(self.names), _CountingList(self.sites),
                                               _CountingList(self.events))

    monkeypatch.setattr(SemanticModel, "__init__", counting)
    _CountingList.handed_out = 0

    def scanned(source: str) -> tuple[int, list]:
        _CountingList.handed_out = 0
        findings = _check(source)
        return _CountingList.handed_out, findings

    return scanned


def test_the_whole_file_is_read_a_fixed_number_of_times_whatever_its_findings(model_scans):
    small, small_findings = model_scans(jitted_functions(40))
    large, large_findings = model_scans(jitted_functions(80))
    assert len(small_findings) == 80 and len(large_findings) == 160  # one JAX201 and one JAX101 each
    assert {f.code for f in large_findings} == {"JAX101", "JAX201"}
    assert large <= 2.1 * small


class _CountingText(str):
    """The module's text, counting the characters its searches may look at."""

    looked_at = 0

    def find(self, sub, start=0, end=None):
        _CountingText.looked_at += len(self) - start
        return str.find(self, sub, start, end)

    def startswith(self, prefix, start=0, end=None):
        _CountingText.looked_at += len(prefix)
        return str.startswith(self, prefix, start, end)


def test_placing_the_statements_of_many_findings_reads_the_text_a_few_times():
    source = jitted_functions(200)
    module = cst.parse_module(source)
    model = SemanticModel.of(SourceFile("big.py", source, module, SETTINGS))
    calls = [site.node for site in model.sites if type(site.node) is cst.Call]
    _CountingText.looked_at = 0
    spans = statement_spans(module, calls, _CountingText(source), model.statements_holding(calls))
    assert spans == {key: span for key, span in node_spans(module, calls).items() if key in spans}
    assert all(id(call) in spans for call in calls)
    assert _CountingText.looked_at <= 2 * len(source)


def test_the_text_is_split_into_lines_once_per_file(monkeypatch):
    made = []
    original = positions._TextLines.__init__

    def counting(self, text):
        made.append(len(text))
        original(self, text)

    monkeypatch.setattr(positions._TextLines, "__init__", counting)
    assert len(_check(jitted_functions(30))) == 60
    assert len(made) == 1


def test_memory_grows_with_the_file_not_with_its_functions_squared():
    def peak(source: str) -> float:
        tracemalloc.start()
        try:
            _check(source)
            return tracemalloc.get_traced_memory()[1] / len(source)
        finally:
            tracemalloc.stop()

    _check(small_functions(10))
    assert peak(small_functions(3000)) <= 1.25 * peak(small_functions(1500))


def test_a_notebook_generates_its_code_a_fixed_number_of_times(monkeypatch):
    generated = []
    original = cst.Module._codegen_impl

    def counting(self, state, *args, **kwargs):
        generated.append(self)
        return original(self, state, *args, **kwargs)

    monkeypatch.setattr(cst.Module, "_codegen_impl", counting)
    counts = []
    for cells in (20, 40):
        generated.clear()
        findings = _check_notebook(notebook(cells))
        assert len(findings) == 3 * cells  # each cell: a JAX201 and a JAX101 in its function, a JAX101 of its draws
        counts.append(len(generated))
    assert counts[1] == counts[0] <= 3


def test_a_notebook_costs_about_twice_half_of_it():
    def cpu(text: str) -> float:
        started = time.process_time()
        _check_notebook(text)
        return time.process_time() - started

    half, whole = notebook(80), notebook(160)
    _check_notebook(half)
    assert cpu(whole) <= 3 * cpu(half)


def test_a_project_run_finds_each_module_a_fixed_number_of_times(tmp_path, monkeypatch):
    """A worker settles the project once for all its files: asked again with the same files for
    each of them, it does not look up the module of every file again (realpath and a stat each)."""
    from jaxlint.frontends import pool, runner
    from jaxlint.project.layout import ProjectLayout

    looked_up = []
    module_of = ProjectLayout.module_of
    monkeypatch.setattr(ProjectLayout, "module_of", lambda self, path: looked_up.append(path) or module_of(self, path))
    monkeypatch.setattr(pool, "start_method", lambda jobs: None)  # the worker's part in this process
    counts = []
    for modules in (20, 40):
        project = tmp_path / str(modules)
        project.mkdir()
        import_chain(project, modules)
        monkeypatch.chdir(project)
        runner._drop_sessions()
        looked_up.clear()
        outcome = runner.run(runner.RunOptions(paths=["."], use_cache=False, jobs=1))
        assert [(f.path, f.code) for f in outcome.findings] == [(os.path.join("chain", "m0.py"), "JAX201")]
        counts.append(len(looked_up))
    runner._drop_sessions()
    assert counts[1] <= 2.2 * counts[0]
