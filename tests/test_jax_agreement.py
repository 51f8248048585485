"""JAX itself decides: every fixture's runtime checks raise exactly where jaxlint reports, and only there.

Each fixture with a `RUNTIME_CHECKS` list names functions, example arguments, and the exception JAX
raises (or None). The test imports the fixture, calls each function, and checks the exception class
and that the innermost frame of the fixture in the traceback is a line jaxlint reports.
"""
import ast
import importlib.util
import traceback

import pytest

from jaxlint.model.settings import Settings
from jaxlint.engine.files import check_file

from conftest import FIXTURES, expectations, runtime_codes

pytestmark = pytest.mark.jax

WITH_CHECKS = sorted(p for p in FIXTURES.glob("*.py") if "RUNTIME_CHECKS" in p.read_text(encoding="utf-8"))
#: Fixtures whose positives only the caller's trace makes traced (a method reading `self` attributes
#: of an object its caller builds under jit): runtime mode probes the flagged function on its own and
#: cannot reach them, so they are not RUNTIME_CHECKS (tests/test_runtime.py); JAX still decides here.
WITH_CALLER_CHECKS = sorted(p for p in FIXTURES.glob("*.py") if "CALLER_CHECKS" in p.read_text(encoding="utf-8"))


def load(path):
    spec = importlib.util.spec_from_file_location(f"fixture_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def raised_at(exc, path):
    """The last line of the fixture file in the exception's traceback."""
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == str(path)]
    cause = exc.__cause__ or exc.__context__
    if not lines and cause is not None:
        return raised_at(cause, path)
    return lines[-1] if lines else None


def names(exc_type):
    return {cls.__name__ for cls in exc_type.__mro__}


@pytest.mark.parametrize("path", WITH_CHECKS, ids=lambda p: p.name)
def test_jax_raises_exactly_where_jaxlint_reports(path):
    agrees_with_jax(path, load(path).RUNTIME_CHECKS)


@pytest.mark.parametrize("path", WITH_CALLER_CHECKS, ids=lambda p: p.name)
def test_jax_raises_exactly_where_jaxlint_reports_through_callers(path):
    agrees_with_jax(path, load(path).CALLER_CHECKS)


def agrees_with_jax(path, checks):
    reported = {line for line, code in expectations(path.read_text(encoding="utf-8"))}
    found = {(f.start.line, f.code) for f in check_file(str(path), Settings()).findings}
    assert {line for line, _ in found} == reported
    raising_lines = set()
    for function, args, expected in checks:
        try:
            function(*args)
        except Exception as exc:  # noqa: BLE001 - any exception is evidence here
            assert expected is not None, f"{function.__name__} raised {type(exc).__name__}: {exc}"
            assert expected in names(type(exc)), f"{function.__name__}: {type(exc).__name__}"
            line = raised_at(exc, path)
            assert line in reported, f"{function.__name__} raised at line {line}, not a reported line"
            raising_lines.add(line)
        else:
            assert expected is None, f"{function.__name__} did not raise {expected}"
    error_lines = {line for line, code in found if code in RAISING_RULES}
    assert error_lines <= raising_lines, f"reported but never raised by JAX: {sorted(error_lines - raising_lines)}"


#: Rules whose findings JAX turns into an exception (the others change behaviour without raising).
RAISING_RULES = runtime_codes("raises")


TOP_LEVEL = sorted(p for p in FIXTURES.glob("*.py") if "RUNTIME_TOP_LEVEL" in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", TOP_LEVEL, ids=lambda p: p.name)
def test_top_level_statements_raise_exactly_where_jaxlint_reports(path):
    """Script and notebook code: each top-level statement runs in turn in one namespace (a failing one
    does not stop the next, as in a session), and the raising ones are exactly the reported lines."""
    source = path.read_text(encoding="utf-8")
    found = {(f.start.line, f.code) for f in check_file(str(path), Settings()).findings}
    assert found == set(expectations(source))
    namespace = {"__name__": f"fixture_{path.stem}"}
    raised = {}
    for statement in ast.parse(source).body:
        try:
            exec(compile(ast.Module([statement], []), str(path), "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - any exception is evidence here
            raised[raised_at(exc, path)] = type(exc).__name__
    assert set(raised) == {line for line, code in found if code in RAISING_RULES}, raised
    assert set(raised.values()) <= {"TypeError", "AttributeError"}
