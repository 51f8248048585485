"""Reading notebooks: IPython lines masked without moving anything, sources written back exactly."""
import json

import libcst
import pytest

from conftest import FIXTURES
from jaxlint.engine.notebook import Cell, NotebookError, mask, read_notebook, unmask, write_notebook

TRAINING = FIXTURES / "notebooks" / "training.ipynb"


def nb(cells, indent=1, sort_keys=True, language="python", ensure_ascii=False, end="\n"):
    data = {
        "cells": cells,
        "metadata": {"kernelspec": {"language": language, "name": "k"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    return json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii) + end


def code(source):
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}


def masked_lines(source):
    """0-based numbers of the lines that `mask` replaced."""
    return [n for n, (a, b) in enumerate(zip(source.split("\n"), mask(source).split("\n"))) if a != b]


# -- masking ------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", [
    "%matplotlib inline", "%load_ext autoreload", "!pip install jax", "files = !ls", "a, b = !cmd", "env = %env",
    "jnp.sum?", "jnp.sum??", "?jnp.sum", "??jnp.sum", "jnp.*sum*?",
])
def test_ipython_lines_are_masked_in_place(line):
    source = f"import jax\nif True:\n    {line}\nx = 1\n"
    masked = mask(source)
    assert masked.count("\n") == source.count("\n")
    assert masked.splitlines()[2].startswith("    pass  # ")
    assert masked.splitlines()[:2] == ["import jax", "if True:"] and masked.splitlines()[3] == "x = 1"
    libcst.parse_module(masked)  # the magic was the whole body of the `if`: the placeholder must be a statement


@pytest.mark.parametrize("source", [
    's = """\n%not a magic\n!not a shell\nwhat?\n"""\n',
    'def f():\n    """Doc.\n\n    %timeit f()\n    """\n',
    "y = 1  # really?\n",
    "x = (a\n     % b)\n",
    "y = 10 \\\n    % 3\n",
    "z = 10 % 3\n",
    "ok = a != b\n",
    'x = f"""\n%in an f-string {a}\n"""\n',
])
def test_python_that_looks_like_ipython_is_kept(source):
    assert mask(source) == source


def test_a_magic_after_python_that_looks_like_one_is_still_masked():
    # The `% b)` line closes the bracket: read as a magic, it would hide that and everything after.
    source = "x = (a\n     % b)\n%matplotlib inline\ns = '''\n%in a string\n'''\n!ls"
    assert masked_lines(source) == [2, 6]
    libcst.parse_module(mask(source))


def test_a_cell_with_a_syntax_error_is_still_masked_line_for_line():
    source = 'x = = 1\n%time f()\nt = """\n%inside an unterminated string\n'
    masked = mask(source)
    assert masked.count("\n") == source.count("\n")
    # Past the point where the tokenizer gives up, the line-based test decides.
    assert masked_lines(source) == [1, 3]


def test_a_magic_continued_with_a_backslash_is_masked_with_its_continuation():
    source = "if x:\n    !pip install \\\n        'jax[cpu]' \\\n  optax\ny = 1\n"
    masked = mask(source)
    assert masked_lines(source) == [1, 2, 3]
    assert all(line.startswith("    pass  # ") for line in masked.split("\n")[1:4])
    libcst.parse_module(masked)
    assert unmask(Cell(0, masked, source), masked) == source


def test_whole_cell_magic_masks_a_foreign_body():
    source = "%%bash\necho hi\n    if [ -n x ]; then ls; fi\n\nls -l\n"
    masked = mask(source)
    assert masked.count("\n") == source.count("\n")
    assert all(line.startswith("pass  # ") or not line for line in masked.split("\n"))
    libcst.parse_module(masked)  # the body's indentation is not carried over


def test_whole_cell_magic_after_leading_blank_lines():
    assert masked_lines("\n%%html\n<b>x</b>\n") == [1, 2]


def test_whole_cell_magic_under_a_colab_form_title():
    # Colab's `# @title` line stands above the magic; the LaTeX body is not Python.
    source = "# @title Answer (try it first!)\n%%latex\n\\begin{aligned}\nf(x) & = 6x^4 \\\\\n\\end{aligned}\n"
    masked = mask(source)
    assert masked_lines(source) == [0, 1, 2, 3, 4]
    libcst.parse_module(masked)


def test_a_comment_above_a_python_cell_magic_keeps_the_body():
    source = "# timing\n%%time\nfor i in range(3):\n    x = 1\n"
    assert masked_lines(source) == [1]
    libcst.parse_module(mask(source))


def test_a_comment_above_python_is_not_a_cell_magic():
    source = "# setup\nx = 1 % 2\n"
    assert mask(source) == source


@pytest.mark.parametrize("magic", ["%%time", "%%timeit -n 3", "%%capture out", "%%prun"])
def test_cell_magic_with_a_python_body_masks_only_its_line(magic):
    source = f"{magic}\nfor i in range(3):\n    %time f(i)\n    x = 1\n"
    masked = mask(source)
    assert masked_lines(source) == [0, 2]
    assert masked.split("\n")[1] == "for i in range(3):" and masked.split("\n")[3] == "    x = 1"
    libcst.parse_module(masked)


def test_crlf_line_endings_are_kept():
    source = "%matplotlib inline\r\nimport jax\r\n"
    masked = mask(source)
    assert masked.endswith("\r\nimport jax\r\n") and masked.count("\r\n") == 2
    libcst.parse_module(masked)


# -- unmasking ----------------------------------------------------------------------------------
SOURCES = [
    "%matplotlib inline\nimport jax.numpy as np\n!ls\nnp.ones(3)",
    "%%bash\necho hi\n  indented\n",
    "%%time\nif x:\n    %timeit f()\n",
    "%matplotlib inline\r\nx = 1\r\n",
    "!ls \\\n  -la\nx = 1",
    "no magic here\n",
]


@pytest.mark.parametrize("original", SOURCES)
def test_unmask_of_the_unchanged_source_is_the_original(original):
    assert unmask(Cell(0, mask(original), original), mask(original)) == original


def test_unmask_restores_the_original_lines_by_position():
    original = "%matplotlib inline\nimport jax.numpy as np\n!ls\nnp.ones(3)"
    cell = Cell(0, mask(original), original)
    fixed = cell.source.replace("as np", "as jnp").replace("np.ones", "jnp.ones")
    assert unmask(cell, fixed) == "%matplotlib inline\nimport jax.numpy as jnp\n!ls\njnp.ones(3)"


def test_unmask_finds_moved_placeholders_by_their_text():
    original = "%matplotlib inline\nimport jax\nif x:\n    !ls\ny = jax.tree_map(f, t)\n"
    cell = Cell(3, mask(original), original)
    lines = cell.source.split("\n")
    # A fix that adds a line and re-indents the block the shell escape is in.
    fixed = "\n".join([lines[0], "import jax.numpy as jnp", lines[1], lines[2], "    " + lines[3],
                       "y = jax.tree.map(f, t)", ""])
    assert unmask(cell, fixed) == (
        "%matplotlib inline\nimport jax.numpy as jnp\nimport jax\nif x:\n        !ls\ny = jax.tree.map(f, t)\n")


def test_unmask_refuses_when_a_fix_lost_an_ipython_line():
    original = "%matplotlib inline\nx = 1\n"
    cell = Cell(5, mask(original), original)
    with pytest.raises(NotebookError, match="cell 5"):
        unmask(cell, "x = 1\n")


def test_text_like_a_placeholder_in_the_cell_is_never_taken_for_one():
    original = "# pass  # jaxlint-masked:0\n%matplotlib inline\nx = 1\n"
    cell = Cell(0, mask(original), original)
    assert cell.source.split("\n")[:2] == ["# pass  # jaxlint-masked:0", "pass  # jaxlint-masked1:1"]
    fixed = "import jax\n" + cell.source  # one more line: placeholders are matched by text
    assert unmask(cell, fixed) == "import jax\n" + original


# -- reading ------------------------------------------------------------------------------------
def test_read_string_and_list_sources_and_skip_markdown():
    text = nb([{"cell_type": "markdown", "metadata": {}, "source": "# t"}, code("a = 1\n"), code(["b = 2\n", "c = 3"])])
    cells = read_notebook(text)
    assert [(c.index, c.original) for c in cells] == [(1, "a = 1\n"), (2, "b = 2\nc = 3")]
    assert [c.source for c in cells] == ["a = 1\n", "b = 2\nc = 3"]


def test_read_masks_the_code_cells():
    cells = read_notebook(nb([code(["%matplotlib inline\n", "x = 1\n"])]))
    assert cells[0].original == "%matplotlib inline\nx = 1\n"
    assert cells[0].source.startswith("pass  # ") and cells[0].source.endswith("\nx = 1\n")


@pytest.mark.parametrize("metadata", [
    {"kernelspec": {"language": "R", "name": "ir"}},
    {"language_info": {"name": "julia"}},
    {"kernelspec": {"language": "python"}, "language_info": {"name": "scala"}},
])
def test_non_python_kernel_has_no_cells(metadata):
    text = json.dumps({"cells": [code("x <- 1")], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})
    assert read_notebook(text) == []


@pytest.mark.parametrize("metadata", [
    {}, {"kernelspec": {"language": "python", "name": "python3"}, "language_info": {"name": "python"}},
    {"kernelspec": {"language": "Python"}}, {"kernelspec": "odd"}, {"language_info": {"name": "ipython3"}},
])
def test_python_or_unknown_kernels_are_read(metadata):
    text = json.dumps({"cells": [code("x = 1\n")], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})
    assert [c.source for c in read_notebook(text)] == ["x = 1\n"]


@pytest.mark.parametrize("text, fragment", [
    ("{not json", "not valid JSON"),
    ("", "not valid JSON"),
    ("[1, 2]", "not an object"),
    ('{"metadata": {}}', "no list of cells"),
    ('{"cells": {}}', "no list of cells"),
    ('{"worksheets": [], "nbformat": 3}', "nbformat 3"),
    ('{"cells": [3]}', "cell 0 is not a JSON object"),
    ('{"cells": [{"cell_type": "code", "source": 3}]}', "neither a string nor a list"),
    ('{"cells": [{"cell_type": "code", "source": ["a\\n", 1]}]}', "neither a string nor a list"),
])
def test_malformed_notebooks(text, fragment):
    with pytest.raises(NotebookError) as info:
        read_notebook(text)
    assert fragment in str(info.value) and "\n" not in str(info.value)


# -- writing ------------------------------------------------------------------------------------
FORMATS = [
    dict(indent=1, sort_keys=True),
    dict(indent=2, sort_keys=False),
    dict(indent=4, sort_keys=True, ensure_ascii=True),
    dict(indent="\t", sort_keys=False),
    dict(indent=None, sort_keys=False, end=""),
    dict(indent=1, sort_keys=True, end=""),
]


def sample_cells():
    cells = [code(["import jax.numpy as np\n", "np.ones(3)"]), code("print('é')\n"),
             {"cell_type": "markdown", "metadata": {"tags": ["ü"]}, "source": "héllo"}]
    cells[0]["metadata"] = {"z": 1, "a": 2}  # out of order: unsorted files must keep it
    cells[1]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["é\n"]},
                           {"data": {"image/png": "iVBORw0KGgo=\n", "text/plain": ["<Figure>"]},
                            "metadata": {}, "output_type": "display_data"}]
    return cells


@pytest.mark.parametrize("fmt", FORMATS)
def test_write_changes_only_the_given_cell(fmt):
    text = nb(sample_cells(), **fmt)
    written = write_notebook(text, {0: "import jax.numpy as jnp\njnp.ones(3)"})
    expected = json.loads(text)
    expected["cells"][0]["source"] = ["import jax.numpy as jnp\n", "jnp.ones(3)"]
    options = {"indent": 1, "sort_keys": True, "ensure_ascii": False, "end": "\n", **fmt}
    end = options.pop("end")
    assert written == json.dumps(expected, **options) + end
    assert written != text
    assert list(json.loads(written)["cells"][0]["metadata"]) == (["a", "z"] if options["sort_keys"] else ["z", "a"])
    assert write_notebook(text, {}) == text


def test_write_keeps_the_form_of_each_source():
    text = nb([code("a = 1\n"), code(["b = 2\n"]), code(["c = 3"])])
    written = json.loads(write_notebook(text, {0: "a = 10\nb = 1", 1: "x\ny\n", 2: ""}))
    assert [c["source"] for c in written["cells"]] == ["a = 10\nb = 1", ["x\n", "y\n"], []]


def test_write_splits_list_sources_only_at_newlines():
    text = nb([code(["a = 1"])])
    written = json.loads(write_notebook(text, {0: "s = '\x0c\u2028'\r\nt = 1"}))
    assert written["cells"][0]["source"] == ["s = '\x0c\u2028'\r\n", "t = 1"]


def test_write_keeps_a_byte_order_mark_and_crlf_layout():
    text = "\ufeff" + nb([code("a = 1\n")]).replace("\n", "\r\n")
    written = write_notebook(text, {0: "a = 2\n"})
    assert written == "\ufeff" + nb([code("a = 2\n")]).replace("\n", "\r\n")
    assert read_notebook(text)[0].original == "a = 1\n"


@pytest.mark.parametrize("change", [
    lambda t: t.replace('"cells"', '"cells" ', 1),         # stray space
    lambda t: t.replace('"nbformat_minor": 5', '"nbformat_minor": 5.50', 1),  # reads back as 5.5
    lambda t: t.replace('"nbformat_minor": 5', '"nbformat_minor": 5e0', 1),
    lambda t: t + "\n",                                     # two final newlines
    lambda t: t.replace("\n", "\r\n", 3),                   # mixed line endings
])
def test_unreproducible_formatting_is_refused(change):
    text = change(nb([code("x = 1\n")]))
    json.loads(text)
    with pytest.raises(NotebookError, match="cannot reproduce the notebook's JSON formatting"):
        write_notebook(text, {0: "x = 2\n"})


def test_write_refuses_a_cell_that_is_not_there():
    with pytest.raises(NotebookError, match="no cell 7"):
        write_notebook(nb([code("x = 1\n")]), {7: "x = 2\n"})


# -- the bundled notebook -----------------------------------------------------------------------
def test_bundled_training_notebook():
    text = TRAINING.read_text(encoding="utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"  # as Jupyter writes it
    assert data["cells"][0]["cell_type"] == "markdown"
    cells = read_notebook(text)
    assert cells[0].index == 1 and len(cells) == len(data["cells"]) - 1
    first = cells[0].source.split("\n")
    assert first[0].startswith("pass  # ") and first[1].startswith("pass  # ")  # %matplotlib, !pip
    assert any("import jax.numpy as np" in c.source and "np.zeros(" in c.source for c in cells)
    for cell in cells:
        libcst.parse_module(cell.source)
        assert unmask(cell, cell.source) == cell.original
    assert write_notebook(text, {}) == text
    setup = cells[0]
    fixed = setup.source.replace("import jax\n", "import jax\nimport optax\n")
    written = write_notebook(text, {setup.index: unmask(setup, fixed)})
    assert json.loads(written)["cells"][1]["source"][:4] == [
        "%matplotlib inline\n", "!pip install -q optax\n", "import jax\n", "import optax\n"]
    assert [c for i, c in enumerate(json.loads(written)["cells"]) if i != 1] == \
        [c for i, c in enumerate(data["cells"]) if i != 1]
