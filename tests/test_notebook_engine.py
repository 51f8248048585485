"""Notebooks through the engine and the CLI: findings per cell, fixes written back into the cells only."""
import ast
import json
import re
import shutil

import pytest
from click.testing import CliRunner

from jaxlint.frontends.cli import main

from conftest import FIXTURES


def notebook(cells, indent=1):
    nb = {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source,
             **({"execution_count": None, "outputs": []} if kind == "code" else {})}
            for kind, source in cells
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    return json.dumps(nb, indent=indent, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.fixture
def nb_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "explore.ipynb"
    path.write_text(notebook([
        ("markdown", ["# Exploring\n"]),
        ("code", ["%matplotlib inline\n", "import jax\n", "import jax.numpy as np\n"]),
        ("code", ["!pip install optax\n", "x = np.ones(3)\n", "y = jax.tree_map(np.abs, [x])\n"]),
        ("code", ["print(x)"]),
    ]))
    return path


def check(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args])


def test_findings_name_cell_and_line_in_cell(nb_path):
    data = json.loads(check("--output-format", "json", "explore.ipynb").stdout)
    found = [(d["code"], d["cell"], d["line"], d["column"]) for d in data]
    # Later cells see the imports of earlier ones: `np` in cell 2 is jax.numpy.
    assert found == [("JAX601", 1, 3, 8), ("JAX602", 2, 3, 5)]


def test_text_output_mentions_the_cell(nb_path):
    out = check("explore.ipynb").stdout
    assert "cell" in out.splitlines()[0] and "JAX601" in out.splitlines()[0]


def test_fix_rewrites_only_the_fixed_cells_and_keeps_everything_else(nb_path):
    before = json.loads(nb_path.read_text())
    before["cells"][3]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["[1. 1. 1.]\n"]}]
    before["metadata"]["custom"] = {"keep": True}
    nb_path.write_text(json.dumps(before, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    original_text = nb_path.read_text()

    result = check("--fix", "explore.ipynb")
    assert result.exit_code == 0, result.stdout + result.stderr
    after = json.loads(nb_path.read_text())
    assert after["cells"][1]["source"] == ["%matplotlib inline\n", "import jax\n", "import jax.numpy as jnp\n"]
    assert after["cells"][2]["source"] == ["!pip install optax\n", "x = jnp.ones(3)\n", "y = jax.tree.map(jnp.abs, [x])\n"]
    for index in (0, 3):
        assert after["cells"][index] == before["cells"][index]
    assert after["metadata"] == before["metadata"]
    # Formatting is Jupyter's own: re-serialising the result reproduces it byte for byte.
    assert nb_path.read_text() == json.dumps(after, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert nb_path.read_text() != original_text

    second = check("--fix", "explore.ipynb")
    assert second.exit_code == 0
    assert json.loads(nb_path.read_text()) == after


def test_a_broken_cell_does_not_hide_the_others(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.ipynb").write_text(notebook([
        ("code", ["import jax.numpy as np\n"]),
        ("code", ["def f(:\n"]),
    ]))
    data = json.loads(check("--output-format", "json", "b.ipynb").stdout)
    assert sorted((d["code"], d["cell"]) for d in data) == [("JAX000", 1), ("JAX601", 0)]


def test_bundled_fixture_notebook(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURES / "notebooks" / "training.ipynb", tmp_path / "training.ipynb")
    data = json.loads(check("--output-format", "json", "training.ipynb").stdout)
    assert any(d["code"] == "JAX601" and d["cell"] is not None for d in data)


def test_a_fix_that_cannot_be_written_back_is_refused_for_that_notebook_only(tmp_path, monkeypatch):
    from jaxlint.engine import notebook as nb

    def refuse(cell, fixed_source):
        raise nb.NotebookError(f"cell {cell.index}: a fix removed the IPython line 1; not writing fixes")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(nb, "unmask", refuse)
    broken = tmp_path / "broken.ipynb"
    broken.write_text(notebook([("code", ["%matplotlib inline\n", "import jax.numpy as np\n"])]))
    before = broken.read_text()
    (tmp_path / "other.py").write_text("import jax.numpy as np\n")

    result = check("--fix", "broken.ipynb", "other.py")
    assert broken.read_text() == before
    assert "broken.ipynb: fixes not applied: cell 0" in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert (tmp_path / "other.py").read_text() == "import jax.numpy as jnp\n"
    assert "JAX601" in result.stdout and result.exit_code == 1


def test_a_message_that_names_another_line_names_its_cell(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "draws.ipynb").write_text(notebook([
        ("markdown", ["# Draws\n"]),
        ("code", ["import jax\n", "key = jax.random.key(0)\n"]),
        ("code", ["noise = jax.random.normal(key, (3,))\n", "# the same key again\n",
                  "more = jax.random.uniform(key, (3,))\n"]),
    ]))
    data = json.loads(check("--output-format", "json", "--select", "JAX101", "draws.ipynb").stdout)
    assert [(d["cell"], d["line"]) for d in data] == [(2, 3)]
    assert "consumed at cell 3 (counted from 1), line 1 is used again" in data[0]["message"]
    # the first use is a related location too, in the notebook's own cells and lines
    assert data[0]["trace"] == [{"path": "draws.ipynb", "line": 1, "cell": 2,
                                 "message": "`key` is first consumed here"}]


def test_one_key_drawn_from_in_two_cells_is_reported_only_with_strict_key_reuse(tmp_path, monkeypatch):
    """Cells run one at a time, again and out of order (an exercise per cell, a draw repeated to show
    it is reproducible): which draw runs first, and whether both run, is not in the text."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "draws.ipynb").write_text(notebook([
        ("markdown", ["# Draws\n"]),
        ("code", ["import jax\n", "key = jax.random.key(0)\n"]),
        ("code", ["noise = jax.random.normal(key, (3,))\n"]),
        ("code", ["# the same key again\n", "more = jax.random.uniform(key, (3,))\n"]),
    ]))
    assert json.loads(check("--output-format", "json", "--select", "JAX101", "draws.ipynb").stdout) == []
    (tmp_path / "pyproject.toml").write_text("[tool.jaxlint]\nstrict-key-reuse = true\n")
    data = json.loads(check("--output-format", "json", "--select", "JAX101", "--no-cache", "draws.ipynb").stdout)
    assert [(d["cell"], d["line"]) for d in data] == [(3, 2)]
    assert "consumed at cell 3 (counted from 1), line 1 is used again" in data[0]["message"]


def _rebinding_notebook(tmp_path, monkeypatch):
    from jaxlint.engine.notebook import read_notebook

    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURES / "notebooks" / "rebinding.ipynb", tmp_path / "rebinding.ipynb")
    cells = read_notebook((tmp_path / "rebinding.ipynb").read_text())
    expected = sorted((cell.index, number, match.group(1))
                      for cell in cells for number, line in enumerate(cell.original.splitlines(), start=1)
                      for match in [re.search(r"# expect: (JAX\d{3})", line)] if match)
    return cells, expected


def test_names_are_judged_at_their_cell_and_line(tmp_path, monkeypatch):
    """A name rebound from NumPy to JAX (or from a list to an array) in a later cell: only the uses
    after the rebinding are reported."""
    cells, expected = _rebinding_notebook(tmp_path, monkeypatch)
    data = json.loads(check("--output-format", "json", "rebinding.ipynb").stdout)
    assert sorted((d["cell"], d["line"], d["code"]) for d in data) == expected and expected


@pytest.mark.jax
def test_jax_raises_only_at_the_reported_cells_and_lines(tmp_path, monkeypatch):
    """The cells run in order, statement by statement, as in a session: only the reported lines raise."""
    pytest.importorskip("jax")
    cells, expected = _rebinding_notebook(tmp_path, monkeypatch)
    namespace, raised = {}, set()
    for cell in cells:
        for statement in ast.parse(cell.source).body:
            try:
                exec(compile(ast.Module([statement], []), f"<cell {cell.index}>", "exec"), namespace)
            except TypeError:
                raised.add((cell.index, statement.lineno))
    assert raised == {(cell, line) for cell, line, _ in expected}


def test_a_cell_showing_an_updated_array_is_not_a_discarded_update(tmp_path, monkeypatch):
    # the last expression of a cell is displayed: `x.at[0].set(1.0)` there shows the new array
    monkeypatch.chdir(tmp_path)
    (tmp_path / "updates.ipynb").write_text(notebook([
        ("code", ["import jax.numpy as jnp\n", "x = jnp.zeros(3)\n", "x.at[0].set(1.0)\n"]),
        ("code", ["def clear(y):\n", "    y.at[0].set(0.0)\n", "    return y\n"]),
        # not the last statement, or ended by `;`: nothing is shown
        ("code", ["x.at[1].set(2.0)\n", "x.at[2].set(3.0);\n"]),
        ("code", ["x.at[1].set(4.0)\n", "# a comment after the last statement\n"]),
    ]))
    data = json.loads(check("--output-format", "json", "--select", "JAX404", "updates.ipynb").stdout)
    assert [(d["cell"], d["line"]) for d in data] == [(1, 2), (2, 1), (2, 2)]


def test_a_draw_from_an_earlier_cell_does_not_hide_two_draws_in_one_later_cell(tmp_path, monkeypatch):
    """Reuse across cells is left alone by default, but a cell that itself draws twice from the key
    draws the same bits twice whenever it runs: reported, against the cell's own first draw."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "draws.ipynb").write_text(notebook([
        ("code", ["import jax\n", "key = jax.random.key(0)\n", "x = jax.random.normal(key, (3,))\n"]),
        ("code", ["y = jax.random.normal(key, (3,))\n", "z = jax.random.uniform(key, (3,))\n"]),
        ("code", ["w = jax.random.normal(key, (3,))\n"]),
    ]))
    data = json.loads(check("--output-format", "json", "--select", "JAX101", "--no-cache", "draws.ipynb").stdout)
    assert [(d["cell"], d["line"]) for d in data] == [(1, 2)]
    assert "consumed at cell 2 (counted from 1), line 1 is used again" in data[0]["message"]


def test_a_compiled_call_shown_by_its_cell_is_no_warm_up(tmp_path, monkeypatch):
    """A compiled function's result thrown away is a warm-up, whose draws nobody sees; the last
    expression of a cell is shown. Cell after cell, the same key shows the same numbers: reported with
    `strict-key-reuse` (cells may run in any order), and in one cell when both results are seen."""
    monkeypatch.chdir(tmp_path)
    head = ["import jax\n", "\n", "@jax.jit\n", "def f(key):\n", "    return jax.random.normal(key, (3,))\n",
            "\n", "key = jax.random.key(0)\n"]
    (tmp_path / "shown.ipynb").write_text(notebook([
        ("code", head), ("code", ["f(key)\n"]), ("code", ["f(key)\n"]),
        ("code", ["f(key)\n", "f(key)\n"]),  # the first one is not shown: a warm-up
        ("code", ["y = f(key)\n", "y, f(key)\n"]),
    ]))
    data = json.loads(check("--output-format", "json", "--select", "JAX101", "shown.ipynb").stdout)
    assert [(d["cell"], d["line"]) for d in data] == [(4, 2)]
    (tmp_path / "pyproject.toml").write_text("[tool.jaxlint]\nstrict-key-reuse = true\n")
    data = json.loads(check("--output-format", "json", "--select", "JAX101", "shown.ipynb").stdout)
    assert [(d["cell"], d["line"]) for d in data] == [(2, 1), (3, 1), (3, 2), (4, 1), (4, 2)]
