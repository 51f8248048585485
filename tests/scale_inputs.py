"""Generated inputs for the scale tests and `benchmarks/scale.py`: a large file with findings in
every function, a notebook of many cells, a project whose modules import each other in a chain."""
from __future__ import annotations

import json
from pathlib import Path

#: lines of `jitted_functions` per function
LINES_PER_FUNCTION = 9


def jitted_function(index: int) -> str:
    """A jitted function with one JAX201 (an `if` on a traced value) and one JAX101 (a key drawn from twice)."""
    return f'''

@jax.jit
def step_{index}(x, key):
    if x > 0:
        x = x + 1
    a = jax.random.normal(key, (3,))
    b = jax.random.uniform(key, (3,))
    return x + a + b
'''


def jitted_functions(count: int) -> str:
    """A module of `count` jitted functions: 2 findings each, about `LINES_PER_FUNCTION` lines each."""
    return "import jax\nimport jax.numpy as jnp\n" + "".join(jitted_function(i) for i in range(count))


def small_functions(count: int) -> str:
    """A module of `count` one-line functions that hand a key on: many names at the top level."""
    return "import jax\n\n" + "".join(f"def pass_{i}(key):\n    return key\n" for i in range(count))


def notebook_cell(index: int) -> str:
    """A cell drawing from the notebook's key (made in the first cell) and defining a jitted function."""
    return (f"x_{index} = jax.random.normal(key, (3,))\n"
            f"y_{index} = jax.random.uniform(key, (3,))\n"
            + jitted_function(index).lstrip("\n"))


def notebook(cells: int) -> str:
    """The JSON text of a notebook: an import cell, then `cells` cells of `notebook_cell`."""
    sources = ["import jax\nimport jax.numpy as jnp\n\nkey = jax.random.PRNGKey(0)\n"]
    sources += [notebook_cell(i) for i in range(cells)]
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": source} for source in sources],
        "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }, indent=1)


def import_chain(root: Path, modules: int, package: str = "chain") -> list[Path]:
    """`modules` modules in a package, each importing the one before it and handing a traced value
    down the chain: module k calls module k-1's function from a jitted function. Returns the files."""
    directory = root / package
    directory.mkdir(parents=True)
    (directory / "__init__.py").write_text("", encoding="utf-8")
    files = []
    for index in range(modules):
        if index == 0:
            body = ("import jax\n\n\ndef step_0(x):\n"
                    "    if x > 0:\n        return x + 1\n    return x\n")
        else:
            body = (f"import jax\n\nfrom {package}.m{index - 1} import step_{index - 1}\n\n\n"
                    f"def step_{index}(x):\n    return step_{index - 1}(x) * 2\n")
        if index == modules - 1:
            body += f"\n\nrun = jax.jit(step_{index})\n"
        path = directory / f"m{index}.py"
        path.write_text(body, encoding="utf-8")
        files.append(path)
    return files
