"""The guard of the static tests (tests/jax_guard.py), run by pytest on small test suites of its own.

JAX is imported first by a marked test in each suite, so every check below is made with JAX
already in `sys.modules`: the guard must not depend on run order.
"""
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.jax  # the suites below import JAX (in their own process) to be realistic

GUARD = Path(__file__).with_name("jax_guard.py")
CONFTEST = """\
import jax_guard
from jax_guard import (  # noqa: F401
    pytest_collection_finish, pytest_ignore_collect, pytest_make_collect_report, pytest_runtest_logstart,
    pytest_runtest_makereport, pytest_runtest_setup, pytest_sessionfinish)

jax_guard.install()
"""
INI = "[pytest]\nmarkers =\n    jax: needs JAX\n    runtime: runtime mode\n"
HELPER = "import jax\n\nSCALE = 2\n"
FIRST = """\
import pytest


@pytest.mark.jax
def test_a_marked_test_imports_jax_first():
    import jax
    import helper
    assert helper.SCALE == 2
"""
LATER = """\
import importlib
import importlib.util

import pytest


def test_plain_import():
    import jax.numpy


def test_importorskip():
    pytest.importorskip("jax")


def test_import_module():
    importlib.import_module("jax.numpy")


def test_helper_that_imports_jax():
    from helper import SCALE


def test_asks_whether_jax_is_installed():
    assert importlib.util.find_spec("jax") is not None


def test_static():
    import json
    assert json.loads("1") == 1


@pytest.mark.runtime
def test_marked_runtime():
    import jax
"""
WHOLE_MODULE = """\
import pytest

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")


def test_in_a_marked_module():
    assert jax.numpy.ones(1).shape == (1,)
"""
UNMARKED_MODULE = """\
import pytest

jax = pytest.importorskip("jax")


def test_in_an_unmarked_module_that_imports_jax():
    pass
"""


def run_suite(tmp_path, files, *args):
    shutil.copy(GUARD, tmp_path / "jax_guard.py")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text(INI)
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-q", *args],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    outcomes = re.findall(r"^(PASSED|FAILED|ERROR|SKIPPED) \S+::(\w+)", result.stdout, re.M)
    return result, {test: outcome for outcome, test in outcomes}


def test_unmarked_tests_that_ask_for_jax_fail_whatever_ran_before(tmp_path):
    result, outcomes = run_suite(tmp_path, {"helper.py": HELPER, "test_1_first.py": FIRST, "test_2_later.py": LATER})
    assert outcomes == {
        "test_a_marked_test_imports_jax_first": "PASSED",
        "test_plain_import": "FAILED",
        "test_importorskip": "FAILED",  # failed, not skipped
        "test_import_module": "FAILED",
        "test_helper_that_imports_jax": "FAILED",  # helper was imported (and cached) by the first test
        "test_asks_whether_jax_is_installed": "FAILED",
        "test_static": "PASSED",
        "test_marked_runtime": "PASSED",
    }, result.stdout
    assert "is not marked" in result.stdout


def test_an_unmarked_module_importing_jax_fails_its_tests(tmp_path):
    result, outcomes = run_suite(tmp_path, {"test_module.py": UNMARKED_MODULE})
    assert outcomes == {"test_in_an_unmarked_module_that_imports_jax": "ERROR"}, result.stdout
    assert "imports JAX at module level" in result.stdout


def test_the_static_run_deselects_marked_tests_and_never_collects_marked_modules(tmp_path):
    files = {"helper.py": HELPER, "test_1_first.py": FIRST, "test_whole.py": WHOLE_MODULE,
             "test_static.py": "def test_static():\n    assert True\n"}
    result, outcomes = run_suite(tmp_path, files, "-m", "not jax and not runtime")
    assert result.returncode == 0, result.stdout + result.stderr
    assert outcomes == {"test_static": "PASSED"}
    assert "1 passed, 1 deselected" in result.stdout  # test_whole.py was not even collected
    full, outcomes = run_suite(tmp_path, files)
    assert full.returncode == 0 and outcomes == {
        "test_a_marked_test_imports_jax_first": "PASSED", "test_in_a_marked_module": "PASSED", "test_static": "PASSED"}


def test_a_static_run_that_imports_jax_fails_the_session(tmp_path):
    """The exact backstop: JAX in sys.modules at the end of a run of unmarked tests only."""
    # as an import from C code would: no import statement, no importlib call
    files = {"test_sneaky.py": "import sys\n\n\ndef test_sneaky():\n    sys.modules.setdefault('jax', object())\n"}
    result, outcomes = run_suite(tmp_path, files, "-m", "not jax and not runtime")
    assert outcomes == {"test_sneaky": "PASSED"}
    assert result.returncode == 1 and "but JAX was imported" in result.stdout
