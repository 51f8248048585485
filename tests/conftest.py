import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import jax_guard
from jax_guard import (  # noqa: F401 - hooks, found by pytest in this module
    pytest_collection_finish, pytest_ignore_collect, pytest_make_collect_report, pytest_runtest_logstart,
    pytest_runtest_makereport, pytest_runtest_setup, pytest_sessionfinish)

jax_guard.install()

# Fixtures are inputs to the analyzer, not tests: `*_test.py` among them must not be collected (and imported).
collect_ignore = ["fixtures"]

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
EXPECT = re.compile(r"#.*\bexpect:\s*(JAX\d{3}(?:\s*,\s*JAX\d{3})*)")


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


#: Markers of tests left out of a `-m` selection that does not name them: the fuzz tests (about a
#: minute) and the system tests (they start processes, send signals, build the wheel, run pre-commit).
#: Both run in the full suite; the static run `-m "not jax and not runtime"` stays quick without them.
OPT_IN_MARKERS = ("fuzz", "system")


def pytest_collection_modifyitems(config, items):
    selection = config.getoption("markexpr")
    if not selection:
        return
    for marker in OPT_IN_MARKERS:
        if re.search(rf"\b{marker}\b", selection):
            continue
        left_out = [item for item in items if item.get_closest_marker(marker) is not None]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item.get_closest_marker(marker) is None]
