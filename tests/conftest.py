import functools
import gc
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import jax_guard
from jax_guard import (  # noqa: F401 - hooks, found by pytest in this module
    pytest_collection_finish, pytest_make_collect_report, pytest_runtest_logstart, pytest_runtest_makereport,
    pytest_runtest_setup, pytest_sessionfinish)

jax_guard.install()

# The cycle collector runs ten times less often than CPython's default (its youngest generation is
# collected after 7,000 net allocations instead of 700; the older ones at their usual ratios). A
# static run parses and walks large libcst trees outside the analyzer's own pause of the collector
# (`checker.cyclic_gc_paused`) and keeps many alive for the tests that share them (`parsed`,
# `checked_with_positions`): at the default rate the collector's passes over them were a sixth of
# the run's CPU. No test depends on the rate; test_gc_pause, which counts on the collector to run
# during an analysis it failed to pause, sets the default rate for its own tests.
_young, _middle, _old = gc.get_threshold()
gc.set_threshold(_young * 10, _middle, _old)

# Fixtures are inputs to the analyzer, not tests: `*_test.py` among them must not be collected (and imported).
collect_ignore = ["fixtures"]

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
EXPECT = re.compile(r"#.*\bexpect:\s*(JAX\d{3}(?:\s*,\s*JAX\d{3})*)")


def recorded_scope(module):
    """The module scope of a parsed module, its bindings recorded (by the walk of its semantic model,
    run at once: the scope asks its file for them, and the file is not kept here)."""
    from jaxlint.model.settings import Settings
    from jaxlint.semantic.model import SemanticModel
    from jaxlint.semantic.source_file import SourceFile

    file = SourceFile("t.py", "", module, Settings())
    SemanticModel.of(file)
    return file.module_scope


@functools.lru_cache(maxsize=None)
def parsed(source: str):
    """libcst's module for `source`, parsed once per test run: parsing is the slow part of the tests
    that go over every fixture, and libcst trees are immutable, so they can be shared."""
    import libcst

    return libcst.parse_module(source)


@functools.lru_cache(maxsize=None)
def checked_with_positions(path: Path):
    """`check_file` of a fixture or example as the fixture tests check it (JAX 0.4.30 targeted; a
    code off unless selected by its full code, JAX001, selected by its own fixtures), with every
    position the engine asked for on the way: (the file's result, [(module, nodes, spans)]).

    One run per file serves test_fixtures (the findings against the `# expect:` comments) and
    test_positions (each asked position against libcst's PositionProvider): the spies only record
    what `node_spans` and `statement_spans` answer, so the findings are those of a plain run."""
    from jaxlint.engine import checker
    from jaxlint.engine.files import check_file
    from jaxlint.model.settings import EXPLICIT_ONLY_CODES, Settings

    asked = []
    node_spans, statement_spans = checker.node_spans, checker.statement_spans

    def node_spans_spy(module, nodes):
        nodes = list(nodes)
        spans = node_spans(module, nodes)
        asked.append((module, nodes, spans))
        return spans

    def statement_spans_spy(module, nodes, text, statement_of):
        nodes = list(nodes)
        spans = statement_spans(module, nodes, text, statement_of)
        asked.append((module, nodes, spans))
        return spans

    opt_in = tuple(code for code in EXPLICIT_ONLY_CODES if path.name.startswith(code))
    settings = Settings(target_jax_version=(0, 4, 30), extend_select=opt_in)
    checker.node_spans, checker.statement_spans = node_spans_spy, statement_spans_spy
    try:
        result = check_file(str(path), settings)
    finally:
        checker.node_spans, checker.statement_spans = node_spans, statement_spans
    return result, asked


@functools.lru_cache(maxsize=None)
def checked_by_default(path: Path):
    """`check_file` of a file with the default settings (`select = ["JAX"]`), with the walks of its
    whole module counted on the way (walk_counting.py): (the file's result, {walk: count}).

    One run per file serves test_walk_count (one walk and one replay), test_examples and
    test_deliberate_keys (the findings): the counting only counts, so the findings are those of a
    plain run."""
    from jaxlint.engine.files import check_file
    from jaxlint.model.settings import Settings

    from walk_counting import walks_counted

    with walks_counted() as walks:
        result = check_file(str(path), Settings())
    return result, dict(walks)


def runtime_codes(*checks: str) -> frozenset[str]:
    """The codes whose catalogue entry's `[runtime]` check is one of `checks` (`"raises"`: the rules
    whose findings JAX turns into an exception while tracing)."""
    from jaxlint.catalogue.rule_docs import load_catalogue

    return frozenset(code for code, doc in load_catalogue().items() if doc.runtime.check in checks)


def expectations(text: str) -> list[tuple[int, str]]:
    """(line, code) pairs from `# expect: JAX101, JAX301` comments."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            found.extend((number, code.strip()) for code in match.group(1).split(","))
    return sorted(found)


@pytest.fixture
def run_cli(tmp_path):
    """Run the installed `jaxlint` entry point in a subprocess, as a user would."""

    def run(*args, cwd=None, env=None):
        full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
        full_env.pop("CI", None)
        if full_env.get("PYTHONPATH"):  # the subprocess runs elsewhere: `PYTHONPATH=src` must still reach it
            full_env["PYTHONPATH"] = os.pathsep.join(
                os.path.abspath(entry) for entry in full_env["PYTHONPATH"].split(os.pathsep) if entry)
        return subprocess.run([sys.executable, "-m", "jaxlint", *args], cwd=cwd or tmp_path,
                              capture_output=True, text=True, env=full_env, timeout=300)

    return run


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """`jaxlint` run in this process (click's runner): the quick form of `run_cli` for tests whose
    point is what the command reports, not that it runs as a program of its own."""
    from click.testing import CliRunner

    from jaxlint.frontends.cli import main

    def run(*args, cwd=None, env=None):
        monkeypatch.chdir(cwd or tmp_path)
        result = CliRunner().invoke(main, list(args), env={"NO_COLOR": "1", "CI": None, **(env or {})},
                                    catch_exceptions=False)
        return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)

    return run


#: Markers of tests left out of a `-m` selection that does not name them: the fuzz tests (about a
#: minute), the system tests (they start processes, send signals, build the wheel, run pre-commit)
#: and the ecosystem check (jaxlint over the real projects of ../shared/corpus). All run in the full
#: suite; the static run `-m "not jax and not runtime"` stays quick without them.
OPT_IN_MARKERS = ("fuzz", "system", "ecosystem")


def _left_out(config) -> list[str]:
    """The opt-in markers that the `-m` selection leaves out (none without a selection)."""
    selection = config.getoption("markexpr")
    if not selection:
        return []
    return [marker for marker in OPT_IN_MARKERS if not re.search(rf"\b{marker}\b", selection)]


@pytest.fixture(scope="session", autouse=True)
def _one_job_checked_in_this_process(request):
    """Where the selection leaves the system tests out (the static run), the command checks its
    files in this process when it runs one job, as it does where it cannot fork (a program that
    loaded JAX), instead of in one forked worker: the static run started some 160 of them from a
    process of a few hundred MB, a sixth of its CPU, most of it the kernel's copying and faulting
    in that process's pages. Several jobs still fork their workers (the tests of parallel runs
    compare them with one job). The full suite and `-m system` check every file in a forked
    worker, as a user's `jaxlint check` does, so every test still meets the worker processes
    there.

    What a worker settles dies with it: here the project sessions settled (and frozen out of the
    collector's sight) while the files were checked are closed once they are, so that nothing
    after the run finds them, nor walks their frozen objects each time a session asks how many
    objects are frozen."""
    if "system" not in _left_out(request.config):
        yield
        return
    from jaxlint.frontends import pool, runner

    forking, checking = pool.start_method, runner._check_all

    def check_all(files, check, jobs, progress):
        try:
            return checking(files, check, jobs, progress)
        finally:
            if max(1, min(jobs, len(files))) == 1:  # checked here, where a worker would have
                runner._drop_sessions()

    pool.start_method = lambda jobs: None if jobs == 1 else forking(jobs)
    runner._check_all = check_all
    try:
        yield
    finally:
        pool.start_method, runner._check_all = forking, checking


def pytest_ignore_collect(collection_path, config):
    if jax_guard.pytest_ignore_collect(collection_path, config):
        return True
    # A module marked as a whole with a left-out marker is not even imported: the fuzz module builds
    # hypothesmith's grammar (seconds) when it is.
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        left_out = _left_out(config)
        if left_out and jax_guard.module_markers(collection_path) & set(left_out):
            return True
    return None


def pytest_collection_modifyitems(config, items):
    for marker in _left_out(config):
        left_out = [item for item in items if item.get_closest_marker(marker) is not None]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item.get_closest_marker(marker) is None]
