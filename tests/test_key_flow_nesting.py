"""The key flow's loops run to a fixed point: twenty nested loops or comprehensions are analysed at
once, reuse found or not (running every loop body a fixed number of times took 2**20 runs)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import jaxlint

DEPTH = 20


def nested_loops(body: list[str]) -> str:
    source = "import jax\n\n\ndef f(key, x):\n"
    for depth in range(DEPTH):
        source += "    " * (depth + 1) + f"for _{depth} in range(2):\n"
    for line in body:
        source += "    " * (DEPTH + 1) + line + "\n"
    return source + "    return x\n"


def nested_comprehension() -> str:
    inner = "jax.random.normal(key)"
    for depth in range(DEPTH):
        inner = f"[{inner} for _{depth} in range(2)]"
    return f"import jax\n\n\ndef f(key):\n    return {inner}\n"


FILES = {
    "reused.py": nested_loops(["x = x + jax.random.normal(key)"]),
    "split.py": nested_loops(["key, sub = jax.random.split(key)", "x = x + jax.random.normal(sub)"]),
    "comprehension.py": nested_comprehension(),
}
ARGS = ("check", "--no-cache", "--jobs", "1", "--output-format", "json", *sorted(FILES))


def _assert_found(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 1, done.stderr
    found = sorted((f["path"], f["line"], f["code"]) for f in json.loads(done.stdout))
    assert found == [("comprehension.py", 5, "JAX101"), ("reused.py", DEPTH + 5, "JAX101")]


def test_deeply_nested_loops_and_comprehensions_are_analysed_at_once(tmp_path, cli):
    """The command in this process (click's runner); the test below runs it as a process of its own."""
    for name, source in FILES.items():
        (tmp_path / name).write_text(source)
    _assert_found(cli(*ARGS, cwd=tmp_path))


@pytest.mark.system  # a process of its own, stopped by the time limit if the analysis never ends
def test_deeply_nested_loops_and_comprehensions_are_analysed_at_once_by_the_command(tmp_path):
    for name, source in FILES.items():
        (tmp_path / name).write_text(source)
    # the jaxlint under test, whatever the working directory
    env = {**os.environ, "PYTHONPATH": str(Path(jaxlint.__file__).resolve().parents[1])}
    _assert_found(subprocess.run([sys.executable, "-m", "jaxlint", *ARGS], cwd=tmp_path, capture_output=True,
                                 text=True, timeout=60, env=env))
