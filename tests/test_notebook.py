"""Reading notebooks: IPython lines masked without moving anything, sources written back exactly."""
import json

import libcst
import pytest

from jaxlint.notebook import Cell, NotebookError, mask, read_notebook, unmask, write_notebook


def nb(cells, indent=1, sort_keys=True, language="python"):
    data = {
        "cells": cells,
        "metadata": {"kernelspec": {"language": language, "name": "k"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    return json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False) + "\n"


def code(source):
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}


@pytest.mark.parametrize("line", [
    "%matplotlib inline", "!pip install jax", "files = !ls", "env = %env", "jnp.sum?", "jnp.sum??", "?jnp.sum",
])
def test_ipython_lines_are_masked_in_place(line):
    source = f"import jax\nif True:\n    {line}\nx = 1\n"
    masked = mask(source)
    assert masked.count("\n") == source.count("\n")
    assert masked.splitlines()[2].startswith("    pass")
    assert masked.splitlines()[3] == "x = 1"
    libcst.parse_module(masked)


@pytest.mark.parametrize("source", [
    's = """\n%not a magic\n!not a shell\n"""\n',
    "y = 1  # really?\n",
    "x = (a\n     % b)\n",
    "z = 10 % 3\n",
])
def test_python_that_looks_like_ipython_is_kept(source):
    assert mask(source) == source


def test_cell_magic_masks_a_foreign_body_but_not_a_python_one():
    bash = mask("%%bash\necho hi\nls -l\n")
    assert all(line.startswith("pass") or not line for line in bash.split("\n"))
    timed = mask("%%time\nx = 1\n")
    assert timed.split("\n")[1] == "x = 1" and timed.startswith("pass")


def test_unmask_restores_the_original_lines():
    original = "%matplotlib inline\nimport jax.numpy as np\n!ls\nnp.ones(3)"
    cell = Cell(0, mask(original), original)
    fixed = cell.source.replace("as np", "as jnp").replace("np.ones", "jnp.ones")
    assert unmask(cell, fixed) == "%matplotlib inline\nimport jax.numpy as jnp\n!ls\njnp.ones(3)"


def test_read_string_and_list_sources_and_skip_markdown():
    text = nb([{"cell_type": "markdown", "metadata": {}, "source": "# t"}, code("a = 1\n"), code(["b = 2\n", "c = 3"])])
    cells = read_notebook(text)
    assert [(c.index, c.original) for c in cells] == [(1, "a = 1\n"), (2, "b = 2\nc = 3")]


def test_non_python_kernel_has_no_cells():
    assert read_notebook(nb([code("x <- 1")], language="R")) == []


@pytest.mark.parametrize("text, fragment", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not an object"),
    ('{"metadata": {}}', "no list of cells"),
    ('{"cells": [{"cell_type": "code", "source": 3}]}', "neither a string nor a list"),
])
def test_malformed_notebooks(text, fragment):
    with pytest.raises(NotebookError) as info:
        read_notebook(text)
    assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("indent, sort_keys", [(1, True), (2, False), (4, True)])
def test_write_changes_only_the_given_cell(indent, sort_keys):
    cells = [code(["import jax.numpy as np\n", "np.ones(3)"]), code("print(1)\n")]
    cells[1]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["1\n"]}]
    text = nb(cells, indent=indent, sort_keys=sort_keys)
    written = write_notebook(text, {0: "import jax.numpy as jnp\njnp.ones(3)"})
    data, before = json.loads(written), json.loads(text)
    assert data["cells"][0]["source"] == ["import jax.numpy as jnp\n", "jnp.ones(3)"]
    assert data["cells"][1] == before["cells"][1] and data["metadata"] == before["metadata"]
    assert write_notebook(text, {}) == text


def test_unreproducible_formatting_is_refused():
    text = nb([code("x = 1\n")]).replace('"cells"', '"cells" ', 1)
    with pytest.raises(NotebookError):
        write_notebook(text, {0: "x = 2\n"})
