"""No cap on how many traced functions a file has: the bug in the last of 250 is reported.

Only the first 200 traced functions of a file used to be analysed, so a bug in the 201st gave exit 0.
Each shape puts 250 traced functions before the one with the bug.
"""
from __future__ import annotations

import json

import pytest

from jaxlint.api import lint_source
from jaxlint.model.settings import Settings

COUNT = 250
HEAD = "import functools\n\nimport jax\nimport jax.numpy as jnp\n\n"
IF_TRACED = "    if x > 0:\n        return x\n    return -x\n"


def _decorated() -> str:
    parts = [f"@jax.jit\ndef f{i}(x):\n    return jnp.sin(x) * {i}\n\n" for i in range(COUNT)]
    return "".join(parts) + "@jax.jit\ndef last(x):\n" + IF_TRACED


def _wrapped() -> str:
    parts = [f"def f{i}(x):\n    return x + {i}\n\nf{i}_fast = jax.jit(f{i})\n\n" for i in range(COUNT)]
    return "".join(parts) + "def last(x):\n" + IF_TRACED + "\nlast_fast = jax.jit(last)\n"


def _call_chain() -> str:
    """A jitted function calling a helper that calls the next, 250 deep: the last one is traced too."""
    parts = [f"def f{i}(x):\n    return f{i + 1}(x) + 1\n\n" for i in range(COUNT)]
    return ("@jax.jit\ndef entry(x):\n    return f0(x)\n\n" + "".join(parts)
            + f"def f{COUNT}(x):\n" + IF_TRACED)


def _transforms() -> str:
    kinds = ["jax.vmap", "jax.grad", "jax.jit", "jax.checkpoint", "jax.value_and_grad"]
    parts = [f"@{kinds[i % len(kinds)]}\ndef f{i}(x):\n    return jnp.sum(x * {i})\n\n" for i in range(COUNT)]
    return "".join(parts) + "@jax.vmap\ndef last(x):\n" + IF_TRACED


def _methods() -> str:
    parts = [f"    @functools.partial(jax.jit, static_argnums=0)\n    def m{i}(self, x):\n        return x * {i}\n\n"
             for i in range(COUNT)]
    return ("class Model:\n" + "".join(parts) + "    @functools.partial(jax.jit, static_argnums=0)\n"
            "    def last(self, x):\n" + IF_TRACED.replace("\n    ", "\n        ").replace("    if", "        if", 1))


def _loop_bodies() -> str:
    parts = [f"def body{i}(i, x):\n    return x + i\n\n" for i in range(COUNT)]
    calls = "".join(f"    x = jax.lax.fori_loop(0, 3, body{i}, x)\n" for i in range(COUNT))
    return ("".join(parts) + "def body_last(i, x):\n    if x > 0:\n        return x\n    return -x\n\n"
            "def run(x):\n" + calls + "    return jax.lax.fori_loop(0, 3, body_last, x)\n")


SHAPES = {
    "decorated": _decorated,
    "wrapped after the def": _wrapped,
    "a call chain": _call_chain,
    "other transforms": _transforms,
    "methods": _methods,
    "lax loop bodies": _loop_bodies,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_bug_in_the_last_traced_function_is_reported(shape):
    source = HEAD + SHAPES[shape]()
    findings = lint_source(source, "many.py", Settings())
    lines = source.splitlines()
    last_if = max(i for i, line in enumerate(lines) if line.strip() == "if x > 0:") + 1
    assert ("JAX201", last_if) in [(f.code, f.start.line) for f in findings]


def test_the_key_reused_in_the_last_of_many_functions_is_reported():
    parts = [f"def draw{i}(key):\n    return jax.random.normal(key)\n\n" for i in range(COUNT)]
    source = HEAD + "".join(parts) + (
        "def last(key):\n    a = jax.random.normal(key)\n    b = jax.random.normal(key)\n    return a + b\n")
    findings = lint_source(source, "many.py", Settings())
    assert [(f.code, f.start.line) for f in findings] == [("JAX101", len(source.splitlines()) - 1)]


def test_exit_status_says_there_are_findings(tmp_path, cli):
    (tmp_path / "many.py").write_text(HEAD + _decorated())
    result = cli("check", "--no-cache", "--output-format", "json", "many.py")
    assert result.returncode == 1, result.stderr
    assert [f["code"] for f in json.loads(result.stdout)] == ["JAX201"]
