import functools
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

# Fixtures are inputs to the analyzer, not tests: `*_test.py` among them must not be collected (and imported).
collect_ignore = ["fixtures"]

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
EXPECT = re.compile(r"#.*\bexpect:\s*(JAX\d{3}(?:\s*,\s*JAX\d{3})*)")


@functools.lru_cache(maxsize=None)
def parsed(source: str):
    """libcst's module for `source`, parsed once per test run: parsing is the slow part of the tests
    that go over every fixture, and libcst trees are immutable, so they can be shared."""
    import libcst

    return libcst.parse_module(source)


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
