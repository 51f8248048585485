"""Failures the fuzz tests found, each reduced to the smallest program that showed it."""
from __future__ import annotations

import json

from jaxlint.api import PARSE_ERROR, encode_like, lint_file
from jaxlint.model.settings import Settings

from reliability.fuzz_checks import compiles, notebook_violations, python_violations

SETTINGS = Settings()


def _fixed(source: str) -> str:
    result = lint_file("fuzzed.py", SETTINGS, fix=True, data=source.encode("utf-8"))
    assert result.fix_refused is None and result.internal_error is None
    assert result.fixed_text is not None
    return result.fixed_text


def test_print_fix_gives_a_bare_generator_argument_its_own_parentheses():
    # `print(x for ...)`: the call's parentheses were the generator's; `jax.debug.print('{}', x for ...)`
    # does not compile, so the whole file was left unfixed ("the result would not parse")
    source = "import jax\n\n\n@jax.jit\ndef f(x):\n    print(x for _ in range(2))\n    return x\n"
    fixed = _fixed(source)
    assert "    jax.debug.print('{}', (x for _ in range(2)))\n" in fixed
    assert compiles(fixed) and python_violations(source.encode()) == []


def test_in_place_fix_parenthesizes_a_bare_yield_and_a_bare_tuple():
    # `x[0] = yield` gave `.set(yield)`, which does not compile; `x[1] += 1, 2` gave `.add(1, 2)`,
    # which compiles but passes 2 as a second argument instead of adding the tuple
    source = ("import jax.numpy as jnp\n\n\ndef g(n):\n    x = jnp.zeros(3)\n    x[0] = yield\n    x[1] += 1, 2\n"
              "    x[2] *= yield n\n    return x\n")
    fixed = _fixed(source)
    assert "    x = x.at[0].set((yield))\n" in fixed
    assert "    x = x.at[1].add((1, 2))\n" in fixed
    assert "    x = x.at[2].multiply((yield n))\n" in fixed
    assert compiles(fixed) and python_violations(source.encode()) == []


def test_keyword_rename_is_not_offered_when_the_new_keyword_is_already_there():
    # renaming `a_max=` to `max=` next to a `max=` repeats a keyword: a SyntaxError
    source = "import jax.numpy as jnp\n\ny = jnp.clip(x, 0, a_max=1, max=2)\nz = jnp.clip(x, a_max=1)\n"
    result = lint_file("fuzzed.py", SETTINGS, fix=True, data=source.encode())
    assert [(f.code, f.start.line, f.fix is None) for f in lint_file("fuzzed.py", SETTINGS, data=source.encode()).findings] == [
        ("JAX602", 3, True), ("JAX602", 4, False)]
    assert result.fixed_text == "import jax.numpy as jnp\n\ny = jnp.clip(x, 0, a_max=1, max=2)\nz = jnp.clip(x, max=1)\n"
    assert python_violations(source.encode()) == []


def test_a_coding_cookie_in_a_file_with_carriage_return_line_ends():
    # CPython ends lines at a lone `\r` when it looks for the cookie; reading lines at `\n` only,
    # the whole file was its first line, decoded as UTF-8: JAX000 "invalid or missing encoding
    # declaration" on a file that compiles, and no other finding
    source = "# -*- coding: latin-1 -*-\rimport jax.numpy as np\r\rNAME = 'caf\xe9'\ry = np.zeros(3)\r"
    data = source.encode("latin-1")
    assert compiles(data)
    result = lint_file("fuzzed.py", SETTINGS, fix=True, data=data)
    assert PARSE_ERROR not in {f.code for f in result.findings}
    assert result.fixed_text == source.replace("np", "jnp")
    assert encode_like(data, result.fixed_text, "fuzzed.py") == source.replace("np", "jnp").encode("latin-1")
    assert python_violations(data) == []


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": source} for source in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_notebook_fix_edits_are_placed_in_their_own_cells():
    # JAX601's fix renames `np` in every cell; its edits were all placed in the cell of the import,
    # at lines that cell does not have (negative ones for earlier cells)
    notebook = _notebook("import jax\nimport jax.numpy as np\n", "x = 1\n\ny = np.zeros(3)\n",
                         "%timeit np.ones(2)\nz = np.ones(2)\n")
    [finding] = lint_file("fuzzed.ipynb", SETTINGS, data=notebook.encode()).findings
    assert (finding.code, finding.cell, finding.start.line) == ("JAX601", 0, 2)
    edits = [(e.cell, e.start.line, e.start.column, e.end.column) for e in finding.fix.edits]
    # `%timeit np.ones(2)` runs Python: its `np` is renamed too, at its own column in the cell
    assert edits == [(0, 2, 21, 23), (1, 3, 5, 7), (2, 1, 9, 11), (2, 2, 5, 7)]
    assert [e["cell"] for e in finding.to_json()["fix"]["edits"]] == [0, 1, 2, 2]
    assert notebook_violations(notebook) == []
