"""CPython decides what parses, before libcst sees a file.

Text CPython rejects gets JAX000 with CPython's message and position and never reaches libcst, whose
native parser overflows its stack (SIGSEGV, the whole run gone) on a few thousand nested brackets.
Text CPython accepts is analysed, also where libcst's own tokenizer or grammar disagrees (rewritten
for it with every position kept), and otherwise gets a note, not a false JAX000.
"""
from __future__ import annotations

import ast
import json
import re
import time
import warnings

import pytest

from jaxlint.api import NotAnalysed, lint_file, lint_source
from jaxlint.engine import parsing
from jaxlint.frontends.flake8_plugin import JaxlintChecker
from jaxlint.frontends.output import render
from jaxlint.frontends.runner import RunOptions, run
from jaxlint.model.settings import Settings

#: a bug every test places after (or beside) the odd construct: it must still be reported
BUG = "\n\n@jax.jit\ndef buggy(x):\n    print(x)\n    return x\n"
HEAD = "import jax\n\n"

#: shapes CPython rejects and libcst's native parser dies on (each a few KB to 100 KB)
REJECTED = {
    "parentheses": "x = " + "(" * 1500 + "\n",
    "brackets": "x = " + "[" * 100_000 + "\n",
    "dict displays": "x = " + "{1:" * 5000 + "\n",
    "lambdas": "x = " + "lambda:" * 5000 + "\n",
    "nested calls": "x = " + "f(" * 3000 + "x" + ")" * 3000 + "\n",
}


def _cpython_error(source: str) -> tuple[str, int, int]:
    try:
        compile(source, "x.py", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc.msg, exc.lineno, exc.offset
    except (RecursionError, MemoryError):
        return "nested too deeply for Python's parser", 1, 1
    raise AssertionError("CPython accepts it")


def _bug_line(source: str) -> int:
    """The line of the bug's `print`, counted as Python counts lines (not as `str.splitlines`,
    which also breaks at form feeds)."""
    return re.split(r"\r\n|\r|\n", source).index("    print(x)") + 1


@pytest.mark.parametrize("shape", sorted(REJECTED))
def test_text_cpython_rejects_is_jax000_from_cpython_and_never_reaches_libcst(shape, monkeypatch):
    source = HEAD + REJECTED[shape] + BUG

    def crash(*args, **kwargs):
        raise AssertionError("libcst was handed text CPython rejects")

    monkeypatch.setattr(parsing.cst, "parse_module", crash)
    started = time.monotonic()
    findings = lint_source(source, "x.py", Settings())
    assert time.monotonic() - started < 5
    message, line, column = _cpython_error(source)
    assert [(f.code, f.message, f.start.line, f.start.column) for f in findings] == [
        ("JAX000", f"cannot parse: {message}", line, column)]


def test_cpython_decides_also_where_libcst_is_lenient():
    """libcst accepts an assignment to a call; CPython does not, and neither does jaxlint."""
    source = HEAD + "f() = 1\n" + BUG
    findings = lint_source(source, "x.py", Settings())
    assert [(f.code, f.start.line) for f in findings] == [("JAX000", 3)]
    assert "cannot assign to function call" in findings[0].message


def test_a_warning_under_error_filters_is_not_a_syntax_error():
    """`"\\d"` warns (an invalid escape) while compiling; with warnings made errors it is still Python."""
    source = HEAD + 'pattern = "\\d+"\n' + BUG
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        findings = lint_source(source, "x.py", Settings())
    assert [(f.code, f.start.line) for f in findings] == [("JAX301", _bug_line(source))]


def test_malformed_files_beside_good_ones_in_one_run(tmp_path, cli):
    """The run finishes, each malformed file gets its JAX000, the good file its finding."""
    for index, shape in enumerate(sorted(REJECTED)):
        (tmp_path / f"bad_{index}.py").write_text(HEAD + REJECTED[shape] + BUG)
    good = HEAD + BUG
    (tmp_path / "good.py").write_text(good)
    result = cli("check", "--no-cache", "--output-format", "json", ".")
    assert result.returncode == 1, result.stderr
    found = sorted((f["path"], f["code"]) for f in json.loads(result.stdout))
    assert found == sorted([*((f"bad_{i}.py", "JAX000") for i in range(len(REJECTED))), ("good.py", "JAX301")])


# -- valid Python libcst does not take as it is -------------------------------------------------
REWRITTEN = {
    # libcst: "unexpected end of file after a line continuation"; CPython accepts it
    "backslash and CRLF before the end": HEAD + BUG + "x = 1\n\\\r\n",
    # CPython starts the indentation count again after a form feed; libcst does not
    "form feed in an indentation": HEAD + "if True:\n  \x0c   if x:\n        y = 3\n" + BUG,
    # libcst's grammar takes at most 3,000 adjacent string literals
    "3,500 adjacent strings": HEAD + 's = (\n' + '    "a"  # part\n' * 3500 + ")\n" + BUG,
    "3,500 adjacent bytes": HEAD + "s = (" + " ".join(["b'a'"] * 3500) + ")\n" + BUG,
}


@pytest.mark.parametrize("shape", sorted(REWRITTEN))
def test_valid_python_libcst_rejects_is_analysed_with_positions_kept(shape):
    source = REWRITTEN[shape]
    findings = lint_source(source, "x.py", Settings())
    assert [(f.code, f.start.line, f.start.column) for f in findings] == [("JAX301", _bug_line(source), 5)]
    assert findings[0].fix is not None  # the fix does not touch a rewritten character


def test_a_fix_over_rewritten_text_is_dropped_and_the_finding_kept():
    """A `print` whose argument is a run of 3,500 strings: its fix would write the rewritten text."""
    source = HEAD + "@jax.jit\ndef f(x):\n    print(" + " ".join(['"a"'] * 3500) + ")\n    return x\n"
    findings = lint_source(source, "x.py", Settings())
    assert [(f.code, f.start.line, f.fix) for f in findings] == [("JAX301", 5, None)]


def test_valid_python_libcst_cannot_take_is_a_note_not_jax000(tmp_path, cli):
    """A tab after a backslash continuation (libcst: "expected INDENT"): not analysed, said so on
    stderr; no finding, so the exit status is that of the other files."""
    (tmp_path / "odd.py").write_text(HEAD + "if x:\n\\\n\tpass\n" + BUG)
    (tmp_path / "good.py").write_text(HEAD + BUG)
    result = cli("check", "--no-cache", "--output-format", "json", "odd.py", "good.py")
    assert result.returncode == 1, result.stderr
    assert [(f["path"], f["code"]) for f in json.loads(result.stdout)] == [("good.py", "JAX301")]
    assert "odd.py: not analysed: Python accepts it, but libcst" in result.stderr
    alone = run(RunOptions([str(tmp_path / "odd.py")], use_cache=False))
    assert not alone.fatal and alone.findings == []  # exit status 0
    assert [p.split(": ", 1)[1] for p in alone.problems] == [f"not analysed: {alone.results[0].not_analysed}"]


def test_the_api_and_flake8_say_not_analysed_without_a_finding(tmp_path):
    source = HEAD + "if x:\n\\\n\tpass\n" + BUG
    with pytest.raises(NotAnalysed) as raised:
        lint_source(source, "x.py", Settings())
    assert raised.value.findings == [] and "libcst" in raised.value.reason
    path = tmp_path / "odd.py"
    path.write_text(source)
    result = lint_file(str(path), Settings())
    assert result.findings == [] and result.internal_error is None and "libcst" in result.not_analysed
    assert list(JaxlintChecker(None, str(path), source.splitlines(keepends=True)).run()) == []


def test_noqa_after_a_form_feed_line_is_read_on_the_reported_line():
    """A page break (form feed on a line of its own) is no line break for Python: `str.splitlines`
    made every `# noqa` after one apply to the wrong line."""
    source = HEAD + "\x0c\n@jax.jit\ndef f(x):\n    print(x)  # noqa: JAX301\n    return x\n" + BUG
    findings = lint_source(source, "x.py", Settings())
    assert [(f.code, f.start.line) for f in findings] == [("JAX301", _bug_line(source))]


def test_notebook_cell_cpython_rejects_is_jax000_and_the_other_cells_are_checked(tmp_path):
    cells = [HEAD, REJECTED["parentheses"], HEAD + BUG]
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": source, "outputs": [],
                           "execution_count": None} for source in cells],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "book.ipynb"
    path.write_text(json.dumps(notebook))
    result = lint_file(str(path), Settings())
    assert sorted((f.code, f.cell) for f in result.findings) == [("JAX000", 1), ("JAX301", 2)]


def test_the_line_quoted_under_a_finding_after_a_form_feed_line_is_the_reported_one(tmp_path):
    path = tmp_path / "paged.py"
    path.write_text(HEAD + "\x0c\n" + BUG)
    findings = lint_source(path.read_text(), str(path), Settings())
    quoted = render(findings, "text", show_source=True).splitlines()[1]
    assert quoted == f"{findings[0].start.line:>5} |     print(x)"


def test_a_file_not_analysed_keeps_the_summary_from_reading_as_a_pass(tmp_path, cli):
    (tmp_path / "odd.py").write_text(HEAD + "if x:\n\\\n\tpass\n" + BUG)
    result = cli("check", "--no-cache", "odd.py")
    assert result.returncode == 0, result.stderr
    assert "All checks passed" not in result.stderr
    assert "No findings in 1 file, but 1 file was not fully analysed (see above)." in result.stderr


# -- CPython's verdict without its tree ------------------------------------------------------------
#: shapes of deep nesting, each a function of the depth
DEEP_SHAPES = {
    "unary": lambda n: "x = " + "-" * n + "1\n",
    "binary": lambda n: "x = " + "+".join(["a"] * n) + "\n",
    "power": lambda n: "x = " + "**".join(["a"] * n) + "\n",
    "calls": lambda n: "x = a" + "()" * n + "\n",
    "attributes": lambda n: "x = a" + ".b" * n + "\n",
    "lambdas": lambda n: "x = " + "lambda: " * n + "1\n",
    "conditionals": lambda n: "x = " + "a if b else " * n + "c\n",
    "annotation": lambda n: "def f(x: a" + ".b" * n + "): pass\n",
    "f-string": lambda n: "x = f'{a:{b" + ".c" * n + "}}'\n",
}


def _ast_limit(shape) -> int:
    """The deepest nesting of this shape CPython's AST takes, asked from this frame's depth."""
    low, high = 2000, 3200  # CPython 3.10-3.13 give up near 3,000 levels
    while low < high:
        middle = (low + high + 1) // 2
        if isinstance(parsing.python_tree(shape(middle), "x.py"), ast.Module):
            low = middle
        else:
            high = middle - 1
    return low


@pytest.mark.parametrize("name", sorted(DEEP_SHAPES))
def test_what_the_symbol_table_accepts_the_ast_accepts_too(name):
    shape = DEEP_SHAPES[name]
    limit = _ast_limit(shape)
    accepted = []
    for depth in range(limit - 6, limit + 4):
        if parsing.python_accepts(shape(depth), "x.py"):
            assert isinstance(parsing.python_tree(shape(depth), "x.py"), ast.Module), depth
            accepted.append(depth)
    if parsing.SYMTABLE_DECIDES_ACCEPTANCE:
        assert accepted and accepted[0] == limit - 6  # the quick verdict is the one given below the edge


@pytest.mark.parametrize("source", ["def f(x, x):\n    return x\n", "nonlocal x\n", "def f():\n    x = 1\n    global x\n"])
def test_valid_python_the_symbol_table_rejects_is_still_accepted(source):
    assert not parsing.python_accepts(source, "x.py")
    assert isinstance(parsing.python_tree(source, "x.py"), ast.Module)
    findings = lint_source(HEAD + source + BUG, "x.py", Settings())
    assert [f.code for f in findings] == ["JAX301"]


def test_a_valid_file_is_checked_without_cpythons_tree(monkeypatch):
    if not parsing.SYMTABLE_DECIDES_ACCEPTANCE:
        pytest.skip("the AST decides on this interpreter")
    from jaxlint.engine import checker

    made = []
    original = checker.python_tree
    monkeypatch.setattr(checker, "python_tree", lambda *args: made.append(args) or original(*args))
    findings = lint_source(HEAD + BUG, "x.py", Settings())
    assert [f.code for f in findings] == ["JAX301"] and made == []
    rejected = lint_source(HEAD + "def f(:\n" + BUG, "x.py", Settings())
    assert [f.code for f in rejected] == ["JAX000"] and len(made) == 1
