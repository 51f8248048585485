"""SARIF for a notebook: a region is a place in the file as stored, so a finding in a cell points at
the characters of that cell's source in the notebook's JSON text, whatever its formatting."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from jaxlint.engine.notebook_positions import NotebookPositions
from jaxlint.frontends.cli import main

CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Title \"quoted\"\n"]},
    {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [{"output_type": "stream", "text": ["x\n"]}],
     "source": ["import jax\n", "import jax.numpy as np\n"]},
    {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
     "source": "label = \"é\\\\\"\nkey = jax.random.key(0)\na = jax.random.normal(key)\nb = jax.random.normal(key)\n"},
]


@pytest.mark.parametrize("layout", ["indent-1", "indent-2-sorted", "one-line", "ascii"])
def test_a_sarif_region_points_at_the_cell_source_in_the_notebook_file(tmp_path, monkeypatch, layout):
    monkeypatch.chdir(tmp_path)
    options = {"indent-1": {"indent": 1}, "indent-2-sorted": {"indent": 2, "sort_keys": True}, "one-line": {},
               "ascii": {"indent": 1, "ensure_ascii": True}}[layout]
    text = json.dumps({"cells": CELLS, "metadata": {"kernelspec": {"language": "python"}}, "nbformat": 4,
                       "nbformat_minor": 5}, **{"ensure_ascii": False, **options})
    (tmp_path / "n.ipynb").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "sarif", "n.ipynb"])
    results = json.loads(result.stdout)["runs"][0]["results"]
    lines = text.split("\n")
    found = {}
    for item in results:
        region = item["locations"][0]["physicalLocation"]["region"]
        line = lines[region["startLine"] - 1]
        if region["endLine"] == region["startLine"]:
            found[item["ruleId"]] = line[region["startColumn"] - 1:region["endColumn"] - 1]
        assert item["properties"]["cell"] in (1, 2)
    # the span of each finding, read from the JSON text: the code the cell holds there
    assert found == {"JAX601": "jax.numpy as np", "JAX101": "jax.random.normal(key)"}
    reuse = next(item for item in results if item["ruleId"] == "JAX101")
    assert reuse["message"]["text"].startswith("cell 3, line 4: ")


def test_positions_past_the_end_of_a_line_and_of_cells_that_do_not_exist():
    text = json.dumps({"cells": [{"cell_type": "code", "source": ["a = 1\n", "b = 2"]}]}, indent=1)
    positions = NotebookPositions(text)
    line, column = positions.position(0, 1, 99)
    assert text.split("\n")[line - 1][column - 1:].startswith("\\n")  # the end of the line
    line, column = positions.position(0, 2, 6)
    assert text.split("\n")[line - 1][column - 1] == '"'  # the end of the source
    assert positions.position(3, 1, 1) is None
    assert NotebookPositions("{not json").position(0, 1, 1) is None
