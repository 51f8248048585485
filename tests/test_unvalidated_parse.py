"""The checker's parse skips libcst's per-node validation, gives libcst's own tree, and leaves
validation on for every node made outside it."""
from __future__ import annotations

import threading
from pathlib import Path

import libcst as cst
import pytest

from jaxlint.engine import checker, parsing
from jaxlint.model.settings import Settings

from conftest import parsed

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "src" / "jaxlint" / "engine").glob("*.py"), *(ROOT / "examples").glob("*.py"),
                  *(ROOT / "tests" / "fixtures").glob("*.py")])
SOURCES = [path for path in SOURCES if "JAX000" not in path.name]
#: a node libcst's validation rejects when it is made
INVALID = lambda: cst.Name("")  # noqa: E731


def _validating() -> bool:
    try:
        INVALID()
    except cst.CSTValidationError:
        return True
    return False


def test_validation_can_be_skipped_with_the_installed_libcst():
    assert parsing._CAN_SKIP_VALIDATION


@pytest.mark.parametrize("path", SOURCES[:40], ids=lambda p: p.name)
def test_the_tree_is_libcsts_own(path: Path):
    text = path.read_text(encoding="utf-8")
    ours = parsing.parse_module(text)
    assert ours.deep_equals(parsed(text))  # libcst's own parse, validation on (shared by the tests that parse these files)
    assert ours.code == text


def test_validation_is_back_after_a_parse_and_after_a_parse_that_fails():
    parsing.parse_module("x = 1\n")
    assert _validating()
    with pytest.raises(cst.ParserSyntaxError):
        parsing.parse_module("f() = = 1\n")
    assert _validating()


def test_the_analysis_after_the_parse_runs_with_validation(monkeypatch):
    seen = []
    original = checker._walk

    def spy(*args, **kwargs):
        seen.append(_validating())
        return original(*args, **kwargs)

    monkeypatch.setattr(checker, "_walk", spy)
    settings = Settings()
    source = "import jax\n\n@jax.jit\ndef f(x):\n    print(x)\n    return x\n"
    findings = checker.check_source(source, "t.py", settings, checker.enabled_rules(settings, "t.py"))
    assert seen == [True]
    assert [f.code for f in findings] == ["JAX301"]


def test_parses_on_several_threads_at_once_leave_validation_on():
    text = (ROOT / "src" / "jaxlint" / "engine" / "checker.py").read_text(encoding="utf-8")
    expected = parsed(text)
    results: list[bool] = []
    start = threading.Barrier(4)

    def parse_some() -> None:
        start.wait(timeout=60)
        results.extend(parsing.parse_module(text).deep_equals(expected) for _ in range(3))

    threads = [threading.Thread(target=parse_some) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert results == [True] * 12
    assert _validating()
