"""Valid Python nested deep or chained long is analysed, and a bug after it is still reported.

Each shape used to end in "internal error: JAX… failed: RecursionError" (exit 2, the file's findings
lost) or in a crash of libcst's native parser. The analysis of a file now runs on a thread with a
deep stack and a recursion limit to match; what is deeper still is skipped with a note, never an
internal error and never silence.
"""
from __future__ import annotations

import json
import sys
import threading
import time

import pytest

from jaxlint.api import NotAnalysed, lint_file, lint_source
from jaxlint.engine import checker
from jaxlint.frontends.flake8_plugin import JaxlintChecker
from jaxlint.model.settings import Settings
from jaxlint.rules.print_in_traced import PrintInTraced

BUG = "\n\n@jax.jit\ndef buggy(x):\n    print(x)\n    return x\n"


def jitted(body: str) -> str:
    return "import jax\n\n\n@jax.jit\ndef deep(x, c):\n" + body + "    return x\n" + BUG


SHAPES = {
    "500-term +": jitted("    y = " + " + ".join(["x"] * 500) + "\n"),
    "500-term and": jitted("    y = c and " + " and ".join(["c"] * 499) + "\n"),
    "500-branch elif": jitted("    if c == 0:\n        y = 0\n"
                              + "".join(f"    elif c == {i}:\n        y = {i}\n" for i in range(1, 500))),
    "600-call method chain": jitted("    y = x" + ".sum()" * 600 + "\n"),
    "600 conditional expressions": jitted("    y = " + "1 if c else " * 600 + "0\n"),
    "400 calls of calls": jitted("    y = g" + "(c)" * 400 + "\n"),
    "190 nested calls": jitted("    y = " + "g(" * 190 + "c" + ")" * 190 + "\n"),
    "600 nested nots": jitted("    y = " + "not " * 600 + "c\n"),
    # CPython keeps these flat; libcst nests one level per term, and its parser used to overflow
    # the process's stack (SIGSEGV) on them
    "10,000-term or": "import jax\n\ny = " + " or ".join(["a"] * 10_000) + "\n" + BUG,
    "4,000-part dotted import": "import jax\nimport " + ".".join(["a"] * 4000) + "\n" + BUG,
}


def _bug(source: str) -> tuple[str, int]:
    return "JAX301", source.splitlines().index("    print(x)") + 1


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_deep_valid_code_is_analysed_and_the_bug_after_it_reported(shape):
    source = SHAPES[shape]
    started = time.monotonic()
    findings = lint_source(source, "deep.py", Settings())
    assert time.monotonic() - started < 20
    assert _bug(source) in [(f.code, f.start.line) for f in findings]


def test_the_recursion_limit_and_the_threads_are_left_as_they_were():
    limit = sys.getrecursionlimit()
    lint_source(SHAPES["500-term +"], "deep.py", Settings())
    threads = threading.active_count()
    lint_source(SHAPES["500-branch elif"], "deep.py", Settings())
    assert sys.getrecursionlimit() == limit
    assert threading.active_count() == threads  # the analysis thread is reused, not one per file


def test_flake8_plugin_analyses_deep_code():
    source = SHAPES["600 conditional expressions"]
    found = [(line, text.split()[0]) for line, _, text, _ in
             JaxlintChecker(None, "deep.py", source.splitlines(keepends=True)).run()]
    assert (_bug(source)[1], "JAX301") in found


@pytest.mark.system
def test_parallel_workers_analyse_deep_code(tmp_path, run_cli):
    """The pool's worker processes (forked) start analysis threads of their own."""
    for index in range(17):  # the pool starts at 16 files
        (tmp_path / f"plain_{index}.py").write_text("import jax\n")
    (tmp_path / "deep.py").write_text(SHAPES["600-call method chain"])
    result = run_cli("check", "--no-cache", "--jobs", "2", "--output-format", "json", ".")
    assert result.returncode == 1, result.stderr
    assert [(f["path"], f["code"], f["line"]) for f in json.loads(result.stdout)] == [
        ("deep.py", *_bug(SHAPES["600-call method chain"]))]


def test_a_rule_that_still_hits_the_limit_is_skipped_with_a_note(monkeypatch, tmp_path):
    """The backstop: a rule that recurses past any limit loses its own findings, the others are kept,
    and the run says which rule was skipped: no internal error (exit 2), no silence."""
    def bottomless(self, node):
        return bottomless(self, node)

    monkeypatch.setattr(PrintInTraced, "visit_Call", bottomless, raising=False)
    source = "import jax\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        print(x)\n    return x\n"
    with pytest.raises(NotAnalysed) as raised:
        lint_source(source, "x.py", Settings())
    assert raised.value.reason == "JAX301 skipped: the code is nested too deeply for it"
    assert [(f.code, f.start.line) for f in raised.value.findings] == [("JAX201", 5)]
    path = tmp_path / "x.py"
    path.write_text(source)
    result = lint_file(str(path), Settings())
    assert result.internal_error is None and result.not_analysed == raised.value.reason
    assert [f.code for f in result.findings] == ["JAX201"]


def test_code_deeper_than_the_stack_allows_is_refused_before_libcst(monkeypatch):
    """libcst's native recursion cannot be caught: a chain it could not parse on the stack at hand is
    not handed to it (here the stack is made small; the real one takes chains of ~250,000 terms)."""
    monkeypatch.setattr(checker, "stack_depth_available", lambda: 8 << 20)
    source = "import jax\n\ny = " + " or ".join(["a"] * 20_000) + "\n" + BUG
    with pytest.raises(NotAnalysed) as raised:
        lint_source(source, "x.py", Settings())
    assert "levels deep, deeper than jaxlint's parser can go" in raised.value.reason
