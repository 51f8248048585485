"""IPython's magics that run Python (`%time`, `%timeit`, `%prun`, `%debug`, and the `%%` cells of
Python): their statements read by every rule, at their cell's lines and columns; fixes that keep the
magic; JAX504 where the figure printed is the dispatch (`%time`, `%%time`, `%timeit -n 1`)."""
import json
import shutil

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, expectations
from jaxlint.engine.magic_lines import FEW_LOOPS, cell_magic_timed, line_magic
from jaxlint.engine.notebook import Cell, NotebookError, mask, read_notebook, unmask
from jaxlint.engine.notebook_check import JoinedCells
from jaxlint.frontends.cli import main
from jaxlint.frontends.editor import BufferLinter
from jaxlint.model.finding import Edit, Finding, Fix, Position, Severity

TIMING = FIXTURES / "notebooks" / "timing_magics.ipynb"


def notebook(*sources):
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
                  for source in sources],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5,
    }, indent=1) + "\n"


def check(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args])


def findings_of(path, *options):
    return json.loads(check("--output-format", "json", *options, str(path)).stdout)


# -- reading a magic's line as IPython does ----------------------------------------------------------
@pytest.mark.parametrize("line, name, statement, timed", [
    ("%time y = f(x)", "time", "y = f(x)", True),
    ("%time --no-raise-error y = f(x)", "time", "y = f(x)", True),
    ("%time --no-raise y = f(x)", "time", "y = f(x)", True),  # argparse takes an unambiguous prefix
    ("%time -x", "time", "-x", True),  # not an option of %time: the statement
    ("%timeit f(x)", "timeit", "f(x)", False),  # IPython chooses the loop count: the queue fills
    ("%timeit -r 3 -q f(x)", "timeit", "f(x)", False),
    ("%timeit -n 1000 f(x)", "timeit", "f(x)", False),
    ("%timeit -n1 -r1 f(x)", "timeit", "f(x)", True),
    (f"%timeit -qn {FEW_LOOPS} f(x)", "timeit", "f(x)", True),
    ("%timeit -o -v result f(x)", "timeit", "f(x)", False),
    ("%prun -s cumulative -q f(x)", "prun", "f(x)", False),
    ("%debug f(x)", "debug", "f(x)", False),
    ("%debug --breakpoint m.py:3 f(x)", "debug", "f(x)", False),
    ("    %time y = f(x)", "time", "y = f(x)", True),
])
def test_where_the_statement_of_a_line_magic_starts(line, name, statement, timed):
    magic = line_magic(line)
    assert (magic.name, line[magic.start:], magic.timed) == (name, statement, timed)


@pytest.mark.parametrize("line", ["%timeit -x f()", "%timeit -n", "%prun -Z f()", "%matplotlib inline",
                                  "%timeitx f()", "%run script.py", "%memit f()"])
def test_magics_that_run_no_statement_of_their_line_or_fail(line):
    assert line_magic(line) is None


@pytest.mark.parametrize("line, timed", [("%%time", True), ("%%time --no-raise-error", True), ("%%timeit", False),
                                         ("%%timeit -n 3 -r 3", True), ("%%timeit -r 3 x = setup()", False),
                                         ("%%timeit -n 500", False), ("%%prun", False), ("%%capture out", False)])
def test_cell_magics_that_time_their_body_once_or_in_few_loops(line, timed):
    assert cell_magic_timed(line) is timed


def test_a_line_magic_is_replaced_by_its_statement_in_place():
    source = "import jax\n%time y = f(x)  # warm\nif ok:\n    %timeit -n 1 g()\n%prun -q h()\n"
    cell = Cell(0, mask(source), source)
    assert cell.source.split("\n")[1:5] == [
        "y = f(x)  # warm  # jaxlint-masked:1 %time timed", "if ok:", "    g()  # jaxlint-masked:3 %timeit timed",
        "h()  # jaxlint-masked:4 %prun"]
    # the statement's columns in the checked text, and how far they are from the cell's
    assert {n: (t.start, t.end, t.shift) for n, t in cell.translations.items()} == {
        1: (0, 16, 6), 3: (4, 7, 13), 4: (0, 3, 9)}
    assert unmask(cell, cell.source) == source


@pytest.mark.parametrize("source", [
    "%time f(a,\n      b)\n",  # a bracket its line does not close: IPython fails on it too
    "%time f(a) \\\n   + b\n",  # continued with a backslash: masked with its continuation
    "def g():\n    %time return f(x)\n",  # compiles only inside the cell: not a statement of its own
    "%time\n",
    "%timeit -x f()\n",
])
def test_a_magic_whose_statement_cannot_stand_alone_is_masked(source):
    masked = mask(source)
    assert Cell(0, masked, source).translations == {}
    assert [line.strip() for line in masked.split("\n") if "masked" in line][0].startswith("pass  # jaxlint-masked:")


def test_a_cell_magic_line_is_masked_and_named():
    assert mask("%%timeit -n 3 -r 3 data = setup()\nf(data)\n").split("\n")[:2] == [
        "pass  # jaxlint-masked:0 %%timeit timed", "f(data)"]
    assert mask("%%time\nf(x)\n").split("\n")[0] == "pass  # jaxlint-masked:0 %%time timed"
    assert mask("%%capture out\nf(x)\n").split("\n")[0] == "pass  # jaxlint-masked:0 %%capture"


def test_unmask_puts_a_fixed_statement_back_after_its_magic():
    original = "%time y = jax.tree_map(f, t)  # warm\r\nz = 1\r\n"
    cell = Cell(0, mask(original), original)
    fixed = cell.source.replace("tree_map", "tree.map")
    assert unmask(cell, fixed) == "%time y = jax.tree.map(f, t)  # warm\r\nz = 1\r\n"
    # a `# noqa` put after the marker, a line added above, a block re-indented
    fixed = "import jax\n" + cell.source.replace("timed", "timed  # noqa: JAX504")
    assert unmask(cell, fixed) == "import jax\n%time y = jax.tree_map(f, t)  # warm  # noqa: JAX504\r\nz = 1\r\n"
    with pytest.raises(NotebookError):
        unmask(cell, "y = jax.tree.map(f, t)\r\nz = 1\r\n")  # the marker is gone: the magic would be lost


# -- every rule reads the statements, at the cell's positions ----------------------------------------
def expected_in(path):
    found = set()
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] == "code":
            found |= {(index, line, code) for line, code in expectations("".join(cell["source"]))}
    return found


def test_the_timing_notebook_is_reported_exactly_at_its_expectations(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(TIMING, tmp_path / "timing.ipynb")
    found = {(d["cell"], d["line"], d["code"]) for d in findings_of("timing.ipynb")}
    assert found == expected_in(TIMING)


def test_positions_inside_a_magic_line_are_the_cells(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(TIMING, tmp_path / "timing.ipynb")
    data = findings_of("timing.ipynb")
    cells = [c for c in json.loads(TIMING.read_text())["cells"]]

    def spans(code):
        return [(d["cell"], d["line"], d["column"], d["end_line"], d["end_column"]) for d in data if d["code"] == code]

    def text(cell, line, column, end_column):
        return "".join(cells[cell]["source"]).split("\n")[line - 1][column - 1:end_column - 1]

    for cell, line, column, _, end_column in spans("JAX504") + spans("JAX101") + spans("JAX602"):
        assert text(cell, line, column, end_column) in (
            "step(x)", "step(z)", "jax.random.normal(key, (3,))", "jax.tree_map"), (cell, line, column)
    assert (2, 1, 11, 1, 18) in spans("JAX504")  # `%time y = step(x)`: `step(x)` from column 11
    assert (5, 2, 15, 2, 22) in spans("JAX504")  # indented under a `for`
    assert (6, 1, 33, 1, 40) in spans("JAX504")  # `%time for size in range(2): y = step(x)`
    assert spans("JAX602") == [(10, 1, 30, 1, 42)]


def test_fix_on_a_magic_line_keeps_the_magic(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "fix.ipynb"
    path.write_text(notebook("import jax\nimport jax.numpy as np\n",
                             "%prun -s cumulative y = jax.tree_map(np.abs, [1.0])  # profile\n"
                             "for i in range(2):\n    %time z = jax.tree_map(np.sin, [1.0])\n"))
    result = check("--fix", "fix.ipynb")
    assert "not applied" not in result.stderr, result.stderr
    sources = [c["source"] for c in json.loads(path.read_text())["cells"]]
    assert sources == ["import jax\nimport jax.numpy as jnp\n",
                       "%prun -s cumulative y = jax.tree.map(jnp.abs, [1.0])  # profile\n"
                       "for i in range(2):\n    %time z = jax.tree.map(jnp.sin, [1.0])\n"]
    fixes = [d["fix"]["edits"] for d in findings_of(path) if d.get("fix")]
    assert fixes == []


def test_fix_edits_on_a_magic_line_are_shown_at_the_cells_columns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "show.ipynb"
    path.write_text(notebook("import jax\n%time y = jax.tree_map(abs, [1.0])\n"))
    (finding,) = findings_of(path)
    assert finding["fix"]["edits"] == [{"line": 2, "column": 11, "end_line": 2, "end_column": 23,
                                        "content": "jax.tree.map", "cell": 0}]


def finding_with_edit(line, column, end_column, content="x"):
    return Finding("JAX602", "deprecated-api", Severity.WARNING, "m", "n.ipynb", Position(line, column),
                   Position(line, end_column), Fix("rename", (Edit(Position(line, column), Position(line, end_column),
                                                                   content),)))


def test_a_fix_that_would_change_a_magic_outside_its_statement_is_not_offered():
    source = "%time y = f(x)\n"
    joined = JoinedCells([Cell(0, mask(source), source)])
    inside, at_start = finding_with_edit(1, 5, 9, "g(x)"), finding_with_edit(1, 1, 2, "w")
    across, newline = finding_with_edit(1, 3, 20), finding_with_edit(1, 5, 5, "import os\n")
    kept = joined.fixable([inside, at_start, across, newline])
    assert [f.fix is not None for f in kept] == [True, True, False, False]
    assert joined.to_cell(inside).fix.edits[0].start == Position(1, 11)
    assert joined.to_cell(across).fix is None


def test_a_cell_that_fails_to_parse_keeps_the_columns_of_its_magics(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "broken.ipynb"
    path.write_text(notebook("import jax\n%time y = jax.tree_map(abs, [1.0])\n", "def f(:\n"))
    data = findings_of(path)
    # the parse error at the `:` of `def f(:`, in the cell (not at a column of the JSON text's line 1)
    assert sorted((d["code"], d["cell"], d["line"], d["column"]) for d in data) == [
        ("JAX000", 1, 1, 7), ("JAX602", 0, 2, 11)]


# -- the editor's front end: the same findings, and its actions keep the magic -------------------------
def test_the_editor_reports_what_the_command_line_reports(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(TIMING, tmp_path / "timing.ipynb")
    cells = [(index, "".join(cell["source"])) for index, cell in enumerate(json.loads(TIMING.read_text())["cells"])
             if cell["cell_type"] == "code"]
    editor = BufferLinter(str(tmp_path)).lint_cells(str(tmp_path / "timing.ipynb"), cells)
    command_line = findings_of("timing.ipynb")
    assert sorted((f.cell, f.start.line, f.start.column, f.end.column, f.code) for f in editor.findings) == sorted(
        (d["cell"], d["line"], d["column"], d["end_column"], d["code"]) for d in command_line)


def test_language_server_actions_on_a_magic_line(tmp_path):
    pytest.importorskip("pygls")
    from jaxlint.frontends.lsp_findings import Checked, FindingsView
    from lsp_client import apply_edits

    text = "import jax\nimport jax.numpy as jnp\n%time y = jax.tree_map(jnp.abs, [jnp.ones(3)])\n"
    path, uri = str(tmp_path / "n.ipynb"), (tmp_path / "n.ipynb").as_uri() + "#cell-a"
    linter = BufferLinter(str(tmp_path))
    (finding,) = linter.lint_cells(path, [(0, text)]).findings
    checked = Checked(1, path, {uri: text}, [finding], cell_uris={0: uri}, cells=[(0, text)], notebook=True)
    view = FindingsView(linter, "utf-16")
    actions = view.code_actions(checked, uri, view.range_of(finding, text), None)
    fix = next(a for a in actions if a.title.endswith("(JAX602)"))
    noqa = next(a for a in actions if a.title.startswith("Suppress JAX602"))

    def applied(action):
        edits = [{"range": {"start": {"line": e.range.start.line, "character": e.range.start.character},
                            "end": {"line": e.range.end.line, "character": e.range.end.character}},
                  "newText": e.new_text} for e in action.edit.changes[uri]]
        return apply_edits(text, edits)

    assert applied(fix).split("\n")[2] == "%time y = jax.tree.map(jnp.abs, [jnp.ones(3)])"
    assert applied(noqa).split("\n")[2] == "%time y = jax.tree_map(jnp.abs, [jnp.ones(3)])  # noqa: JAX602"


# -- the runtime planner goes back from cells to the joined module --------------------------------------
def test_positions_go_back_from_a_cell_to_the_joined_text():
    cells = [Cell(0, mask("import jax\n"), "import jax\n"), Cell(2, mask("%timeit -n 1 f(x)\n"), "%timeit -n 1 f(x)\n")]
    joined = JoinedCells(cells)
    assert joined.text.split("\n")[2].startswith("f(x)")
    assert joined.joined_position(2, Position(1, 14)) == Position(3, 1)
    assert joined.joined_position(2, Position(1, 1)) == Position(3, 1)  # the magic itself: its statement


def test_read_notebook_translates_every_code_cell():
    cells = read_notebook(TIMING.read_text())
    assert any(cell.translations for cell in cells)
    assert all("%time" not in line.split("#")[0] for cell in cells for line in cell.source.split("\n"))


def test_reading_a_cell_warns_of_nothing_in_its_code():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # a warning taken for an error would leave the magic masked
        assert mask('%time y = f("\\d")\nz = "\\d"\n').startswith('y = f("\\d")  # jaxlint-masked:0 %time')
