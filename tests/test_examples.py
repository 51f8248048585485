"""The bundled examples: every rule shows up in them, `clean.py` has no findings, and JAX agrees.

`jaxlint check examples/` is the first command in the README, so the examples are checked here
the way a user meets them: every registered rule is reported somewhere in `examples/` (a new rule
without an example fails), each example's docstring names exactly the rules it triggers,
`clean.py` is clean and runs, the other modules import quickly, and every finding that predicts an
exception is confirmed by JAX raising it at that line when the flagged function is traced with
small float32 inputs.
"""
import ast
import functools
import inspect
import json
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from jaxlint.catalogue.rule_docs import load_catalogue
from jaxlint.engine.registry import all_rules

from conftest import ROOT, checked_by_default
from test_jax_agreement import RAISING_RULES, load, names, raised_at

EXAMPLES = ROOT / "examples"
CLEAN = EXAMPLES / "clean.py"
FILES = sorted(p for p in EXAMPLES.iterdir() if p.suffix in {".py", ".ipynb"})
MODULES = [p for p in FILES if p.suffix == ".py"]
NOTEBOOKS = [p for p in FILES if p.suffix == ".ipynb"]
CODE = re.compile(r"\bJAX\d{3}\b")


def predicted(code: str, exc: BaseException) -> bool:
    """Whether `exc` is one that rule `code`'s catalogue entry says JAX raises (its `raises`: a class
    anywhere in the exception's MRO, with a message matching the entry's pattern where it gives one)."""
    return any(name in names(type(exc)) and (pattern is None or re.search(pattern, str(exc)))
               for name, pattern in load_catalogue()[code].runtime.raises)


@functools.cache  # collection (the parameters of the JAX test below) and the static tests share one run
def findings(path: Path):
    # `check_file` with the default settings: the run test_walk_count counts the walks of
    return tuple(checked_by_default(path)[0].findings)


@pytest.fixture(scope="module")
def all_findings():
    return {path.name: list(findings(path)) for path in FILES}


def test_every_registered_rule_is_reported_on_the_examples(all_findings):
    registered = set(all_rules()) - {"JAX000"}
    reported = {f.code for found in all_findings.values() for f in found}
    assert registered - reported == set(), "rules without an example in examples/"
    assert "JAX000" not in reported


def test_clean_example_has_no_findings(all_findings):
    assert all_findings["clean.py"] == []


def docstring(path: Path) -> str:
    """A module's docstring, or a notebook's first cell when it is markdown."""
    if path.suffix == ".ipynb":
        first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]
        return "".join(first["source"]) if first["cell_type"] == "markdown" else ""
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_docstring_says_what_the_example_shows(path, all_findings):
    text = docstring(path)
    assert f"jaxlint check examples/{path.name}" in text
    if path == CLEAN:
        assert "reports nothing" in text
        return
    found = {f.code for f in all_findings[path.name]}
    assert found, f"{path.name} shows no finding"
    # A code that is not registered yet (a rule being written) may be named ahead of it.
    named = set(CODE.findall(text)) & set(all_rules())
    assert named == found, "the docstring must name exactly the rules reported"


def enclosing_functions(path: Path) -> dict[int, list[ast.FunctionDef]]:
    """For each line, the chain of functions around it, outermost first."""
    chains: dict[int, list] = defaultdict(list)

    def visit(node, chain):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = [*chain, child]
                for line in range(child.lineno, child.end_lineno + 1):
                    chains[line] = inner
                visit(child, inner)
            else:
                visit(child, chain)

    visit(ast.parse(path.read_text(encoding="utf-8")), [])
    return chains


@pytest.mark.parametrize("path", [p for p in MODULES if p != CLEAN], ids=lambda p: p.name)
def test_flagged_functions_are_module_level(path, all_findings):
    # Runtime mode finds the flagged function by name in the imported module.
    chains = enclosing_functions(path)
    for finding in all_findings[path.name]:
        chain = chains.get(finding.start.line, [])
        assert len(chain) <= 1, f"{finding.code} at line {finding.start.line} is in a nested function"


@pytest.mark.jax
@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_example_imports_quickly_without_running_anything(path, capsys):
    start = time.perf_counter()
    load(path)
    assert time.perf_counter() - start < 2.0, "examples must not train or sample at import time"
    assert capsys.readouterr().out == ""


@pytest.mark.jax
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_cells_run_in_order(path, capsys):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    namespace = {"__name__": "__notebook__"}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), str(path), "exec"), namespace)  # noqa: S102
    assert capsys.readouterr().out  # the last cell prints the fitted parameters


@pytest.mark.jax
def test_clean_example_runs_as_a_script():
    result = subprocess.run([sys.executable, str(CLEAN)], capture_output=True, text=True, timeout=300,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "one training step" in result.stdout


def probe(parameter: inspect.Parameter, shape: tuple[int, ...]):
    """A small input for one parameter: a key for key-like names, 3 for `int`, else float32 `shape`."""
    import jax
    import jax.numpy as jnp

    if "key" in parameter.name or "rng" in parameter.name:
        return jax.random.key(0)
    if parameter.annotation is int:
        return 3
    return jnp.full(shape, 1.5, dtype=jnp.float32)


def error_findings():
    cases = []
    for path in MODULES:
        chains = enclosing_functions(path)
        for finding in findings(path):
            if finding.code in RAISING_RULES:
                chain = chains.get(finding.start.line, [])
                name = chain[0].name if chain else None
                cases.append(pytest.param(path, finding.start.line, finding.code, name,
                                          id=f"{path.name}:{finding.start.line}:{finding.code}"))
    return cases


@pytest.mark.jax
@pytest.mark.parametrize("path, line, code, name", error_findings())
def test_jax_raises_where_an_error_is_reported(path, line, code, name):
    import jax

    assert name is not None, "an error finding outside any function cannot be traced"
    function = getattr(load(path), name)
    python_function = inspect.unwrap(function)
    parameters = [p for p in inspect.signature(python_function).parameters.values()
                  if p.default is inspect.Parameter.empty]
    # A function that is not jitted itself is traced the way its callers trace it.
    traced = function if hasattr(function, "lower") else jax.jit(python_function)
    outcomes = []
    for shape in [(), (4,)]:  # a float32 scalar, then a small vector
        try:
            jax.block_until_ready(traced(*[probe(p, shape) for p in parameters]))
        except Exception as exc:  # noqa: BLE001 - any exception is evidence here
            if predicted(code, exc) and raised_at(exc, path) == line:
                return
            outcomes.append(f"{shape}: {type(exc).__name__} at line {raised_at(exc, path)}: {exc}")
        else:
            outcomes.append(f"{shape}: no exception")
    expected = [name for name, _ in load_catalogue()[code].runtime.raises]
    pytest.fail(f"{name} did not raise {expected} at line {line}: " + "; ".join(outcomes))
