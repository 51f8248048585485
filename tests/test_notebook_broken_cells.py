"""A notebook cell that does not parse (an exercise's `squared_error = # your code here`) is a JAX000,
and the cells after it are checked with what it binds: what it keeps that parses, and the names its
broken statements assign, known to hold nothing in particular."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from jaxlint.engine.cell_recovery import UNKNOWN, recovered
from jaxlint.frontends.cli import main

from test_notebook_engine import notebook

IMPORTS = ("code", ["import jax\n", "import jax.numpy as jnp\n"])
#: a later cell with a bug that needs the imports and the key of the cells before it
LATER = ("code", ["a = jax.random.normal(key, (3,))\n", "b = jax.random.normal(key, (3,))\n",
                  "\n", "@jax.jit\n", "def loss(x):\n", "    if x.sum() > 0:\n",
                  "        return squared_error(x, a)\n", "    return x\n"])


def check(tmp_path, monkeypatch, cells) -> list[tuple[str, int, int, int]]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exercise.ipynb").write_text(notebook(cells))
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json", "exercise.ipynb"])
    assert result.exit_code in (0, 1), result.output
    return sorted((d["code"], d["cell"], d["line"], d["column"]) for d in json.loads(result.stdout))


def test_later_cells_see_what_a_broken_cell_binds(tmp_path, monkeypatch):
    exercise = check(tmp_path, monkeypatch, [
        IMPORTS, ("code", ["key = jax.random.key(0)\n", "squared_error = # your code here\n"]), LATER])
    filled = check(tmp_path, monkeypatch, [
        IMPORTS, ("code", ["key = jax.random.key(0)\n", "squared_error = lambda p, y: (p - y) ** 2\n"]), LATER])
    # the placeholder is a JAX000 at the comment that stands where the expression should be
    assert exercise == sorted([("JAX000", 1, 2, 17), *filled])
    assert {code for code, *_ in filled} == {"JAX101", "JAX201"}


def test_a_function_whose_body_does_not_parse_keeps_its_header_and_the_rest_of_its_body(tmp_path, monkeypatch):
    found = check(tmp_path, monkeypatch, [IMPORTS, ("code", [
        "@jax.jit\n", "def loss(x, y):\n", "    preds = # your code here\n", "    if preds.sum() > y:\n",
        "        return preds\n", "    return y\n"])])
    assert found == [("JAX000", 1, 3, 13), ("JAX201", 1, 4, 8)]


def test_what_a_broken_statement_assigns_is_not_guessed(tmp_path, monkeypatch):
    """`params` is bound, to nothing jaxlint knows: no finding about what it holds (a JAX401 for
    an item assignment would need it to be a JAX array)."""
    found = check(tmp_path, monkeypatch, [
        IMPORTS, ("code", ["params = # initialise with jnp.zeros\n"]), ("code", ["params[0] = 1.0\n"])])
    assert found == [("JAX000", 1, 1, 10)]


def test_a_broken_cell_alone_and_the_cells_without_imports(tmp_path, monkeypatch):
    """Before the cells could be joined, a broken cell made every cell be checked alone, and a
    later cell lost the imports of the first one (`np` is jax.numpy: JAX601, then JAX602)."""
    found = check(tmp_path, monkeypatch, [
        ("code", ["import jax.numpy as np\n"]), ("code", ["def f(:\n"]), ("code", ["y = np.clip(x, a_min=0)\n"])])
    assert [code for code, *_ in found] == ["JAX000", "JAX601", "JAX602"]


@pytest.mark.parametrize("source, expected", [
    ("x = # todo\ny = x + 1\n", f"x = {UNKNOWN}\ny = x + 1\n"),
    ("a, b = # todo\n", f"a, b = {UNKNOWN}\n"),
    ("w: int = # todo\n", f"w = {UNKNOWN}\n"),
    ("x[0] = # todo\nself.a = # todo\n", "pass\npass\n"),
    ("def f(x:\n    return x\nz = 1\n", f"f = {UNKNOWN}\npass\nz = 1\n"),
    ("result = f(\n    a,\n)\nbad =\n", f"result = f(\n    a,\n)\nbad = {UNKNOWN}\n"),
    ("for i in range(3)\n    print(i)\nq = 1\n", "pass\npass\nq = 1\n"),
    ("try:\n    a = 1\nexcept E:\n    b = \nfinally:\n    c = 3\n",
     f"try:\n    a = 1\nexcept E:\n    b = {UNKNOWN}\nfinally:\n    c = 3\n"),
    ("def f(x):\n    if x:\n        y = # todo\n    else:\n        y = 2\n    return y\n",
     f"def f(x):\n    if x:\n        y = {UNKNOWN}\n    else:\n        y = 2\n    return y\n"),
    ("class M(nn.Module):\n    def __call__(self, x):\n        x = # TODO\n        return x\n",
     f"class M(nn.Module):\n    def __call__(self, x):\n        x = {UNKNOWN}\n        return x\n"),
])
def test_recovery_keeps_every_line_in_its_place(source, expected):
    assert recovered(source) == expected


def test_a_colab_form_title_above_a_cell_magic_is_not_a_parse_error(tmp_path, monkeypatch):
    found = check(tmp_path, monkeypatch, [
        ("code", ["#@title Answer { display-mode: \"form\" }\n", "%%latex\n", "\\begin{aligned}\n",
                  "f'(x) & = 24x^3 -9 \\\\\n", "\\end{aligned}"]),
        ("code", ["# @title Setup\n", "\n", "%%capture\n", "!pip install jax\n"]),
        ("code", ["import jax.numpy as np\n"])])
    assert found == [("JAX601", 2, 1, 8)]


def test_the_editor_reports_what_the_command_line_reports(tmp_path, monkeypatch):
    from jaxlint.frontends.editor import BufferLinter

    cells = [IMPORTS, ("code", ["key = jax.random.key(0)\n", "squared_error = # your code here\n"]), LATER]
    command_line = check(tmp_path, monkeypatch, cells)
    editor = BufferLinter(str(tmp_path)).lint_cells(str(tmp_path / "exercise.ipynb"),
                                                    [(index, "".join(source)) for index, (_, source) in enumerate(cells)])
    assert sorted((f.code, f.cell, f.start.line, f.start.column) for f in editor.findings) == command_line
