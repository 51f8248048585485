"""A run that fills an empty cache does the work of a run without it: before analysing anything it
asks each file's context of the project index, and over a long import chain each such question
used to walk every importer of the file again (the cost grew with the square of the chain)."""
from __future__ import annotations

import pytest

from jaxlint.frontends import pool
from jaxlint.frontends.runner import RunOptions, run
from jaxlint.project import analysis



def make_chain(root, modules: int) -> None:
    """A chain of modules, each importing the next, the first jitted (as `benchmarks/cold_cache.py`)."""
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.jaxlint]\n", encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    for index in range(modules):
        last = index + 1 == modules
        imported = "" if last else f"from pkg.m{index + 1} import f{index + 1}\n"
        call = "    y = x\n" if last else f"    y = f{index + 1}(x)\n"
        jitted = "@jax.jit\n" if index == 0 else ""
        (root / "pkg" / f"m{index}.py").write_text(
            f"import jax\n{imported}\n\n{jitted}def f{index}(x):\n{call}    if y > 0:\n        return y\n    return -y\n",
            encoding="utf-8")


def modules_ordered(tmp_path, monkeypatch, modules: int, use_cache: bool) -> int:
    """How many modules the run put in importer-first order, summed over every time it did."""
    root = tmp_path / f"chain-{use_cache}"
    make_chain(root, modules)
    monkeypatch.chdir(root)
    monkeypatch.setattr(pool, "start_method", lambda jobs: None)  # in this process, to count
    counted = []
    order = analysis.importer_first_groups

    def counting(group, imports):
        counted.append(len(group))
        return order(group, imports)

    monkeypatch.setattr(analysis, "importer_first_groups", counting)
    outcome = run(RunOptions(paths=["."], use_cache=use_cache))
    assert len(outcome.findings) == modules  # one JAX201 per module of the chain, traced through it
    return sum(counted)


@pytest.mark.parametrize("modules", [40])
def test_a_cold_run_with_the_cache_orders_the_chain_about_as_often_as_one_without(tmp_path, monkeypatch, modules):
    without = modules_ordered(tmp_path, monkeypatch, modules, use_cache=False)
    cold = modules_ordered(tmp_path, monkeypatch, modules, use_cache=True)
    assert cold <= 2 * without + modules, (cold, without)
