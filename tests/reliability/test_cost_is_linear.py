"""The cost of a file grows with its size, not with its size squared or exponentially with nesting.

`for` loops nested 20 deep in a jitted function took 98 s (each level doubled the key flow's work),
and a file of many functions spent most of its time walking the whole module again for every
function or message. Costs here are counted, not timed (the machine is shared): interpreter passes
with a cap that fails fast instead of hanging, and Python calls under cProfile for files of one size
and of four times that size.
"""
from __future__ import annotations

import cProfile
import pstats
import sys
import threading

import libcst as cst
import pytest

from jaxlint.api import lint_source
from jaxlint.dataflow.interpreter import FlowInterpreter
from jaxlint.dataflow.reaching import scope_facts
from jaxlint.jaxmodel.keys import facts as keys
from jaxlint.model.settings import Settings
from conftest import recorded_scope
from test_dataflow import Literals  # the interpreter tests' domain: sets of literals

BUG = "\n\n@jax.jit\ndef buggy(x):\n    print(x)\n    return x\n"


class _TooMuch(Exception):
    pass


def _counting(monkeypatch, owner, name: str, cap: int) -> list[int]:
    """Counts the calls of `owner.name`, failing past `cap` (an exponential cost never finishes)."""
    count = [0]
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        count[0] += 1
        if count[0] > cap:
            raise _TooMuch(f"{owner.__name__}.{name} called more than {cap} times")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return count


def _nested_loops(depth: int, innermost: str, per_level: str = "") -> str:
    lines = []
    for level in range(depth):
        indent = "    " * (level + 1)
        lines += [indent + part.format(level=level) for part in per_level.splitlines() if part]
        lines.append(indent + f"for i{level} in xs:")
    lines += ["    " * (depth + 1) + part for part in innermost.splitlines()]
    return "\n".join(lines) + "\n"


# -- loop nesting ---------------------------------------------------------------------------------
def test_key_flow_in_loops_nested_20_deep(monkeypatch):
    """The issue's case (98 s): each level used to run its body twice for every pass of the loop
    around it. The reuse in the innermost loop is still found, and the bug after the function."""
    loops = _counting(monkeypatch, FlowInterpreter, "_loop", cap=5000)
    runs = _counting(monkeypatch, keys.KeyFlowFacts, "_flow", cap=100)
    body = _nested_loops(20, "x = x + jax.random.normal(key)\nkey2, sub = jax.random.split(key2)")
    source = "import jax\n\n@jax.jit\ndef f(x, xs, key, key2):\n" + body + "    return x\n" + BUG
    findings = lint_source(source, "x.py", Settings())
    assert loops[0] < 1000  # every domain's runs together
    assert runs[0] >= 2  # the key domain ran (the module, the function)
    found = {(f.code, f.start.line) for f in findings}
    assert ("JAX101", source.splitlines().index("    " * 21 + "x = x + jax.random.normal(key)") + 1) in found
    assert ("JAX301", source.splitlines().index("    print(x)") + 1) in found


#: each level shifts values down a chain before its inner loop, so that every visit of a loop
#: brings new values and takes several passes to settle
SHIFT = "a = b\nb = c\nc = d\nd = {level}\n"


@pytest.mark.parametrize("depth", [12, 24])
def test_flow_interpreter_passes_grow_polynomially_with_nesting(monkeypatch, depth):
    blocks = _counting(monkeypatch, FlowInterpreter, "block", cap=20_000)
    source = "def f(xs):\n    a = b = c = d = 0\n" + _nested_loops(depth, "a = a", SHIFT)
    function = cst.parse_module(source).body[0]
    FlowInterpreter(Literals()).run(function)
    assert blocks[0] < 30 * depth * depth  # exponential: 2^depth (2^24 never finishes)


@pytest.mark.parametrize("depth", [12, 24])
def test_comprehension_passes_grow_polynomially_with_nesting(monkeypatch, depth):
    """Comprehensions are loops too: each level shifts values with `:=` round its own elements."""
    comprehensions = _counting(monkeypatch, FlowInterpreter, "_comprehension", cap=20_000)
    inner = "0"
    for level in range(depth):
        inner = f"[((a := b), (b := c), (c := d), (d := {level}), {inner}) for i{level} in xs]"
    function = cst.parse_module(f"def f(xs):\n    a = b = c = d = 0\n    return {inner}\n").body[0]
    result = FlowInterpreter(Literals()).run(function)
    assert comprehensions[0] < 30 * depth * depth
    assert result.returned is not None


@pytest.mark.parametrize("depth", [12, 24])
def test_reaching_bindings_passes_grow_polynomially_with_nesting(monkeypatch, depth):
    """A binding killed before each inner loop: every visit of every loop took two passes."""
    blocks = _counting(monkeypatch, FlowInterpreter, "block", cap=20_000)
    source = "a = 0\n" + _nested_loops(depth, "a = a", "a = {level}\n").replace("\n    ", "\n")[4:]
    module = cst.parse_module(source)
    facts = scope_facts(recorded_scope(module))
    assert blocks[0] < 30 * depth * depth
    assert len(facts.origins["a"]) == depth + 2  # the run did happen: `a = 0`, one per level, `a = a`


# -- file size and chain length -------------------------------------------------------------------
#: one unit of a big file: a jitted function reading a global reassigned later (JAX302 looks for its
#: uses in the module), a key drawn twice (JAX101 names a line), an item assignment (JAX401 asks
#: whether the file uses array references)
UNIT = '''
SCALE_{i} = 1.0


def step_{i}(x):
    return x * SCALE_{i}


step_{i} = jax.jit(step_{i})
SCALE_{i} = 2.0


def draw_{i}(key, x):
    a = jax.random.normal(key, (3,))
    b = jax.random.normal(key, (3,))
    y = jnp.zeros(3)
    y[0] = a
    return a + b + y
'''


def _calls(source: str) -> tuple[int, list]:
    """Python calls made while checking `source`, and the findings. A profiler follows only its own
    thread, so the check runs where it is enabled (jaxlint then stays on that thread): one with a
    deep stack, as jaxlint's own analysis thread has."""
    result = []

    def profiled():
        profile = cProfile.Profile()
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(20_000)
        profile.enable()
        try:
            findings = lint_source(source, "x.py", Settings())
        finally:
            profile.disable()
            sys.setrecursionlimit(limit)
        result.append((pstats.Stats(profile).total_calls, findings))

    previous = threading.stack_size(256 << 20)
    try:
        thread = threading.Thread(target=profiled)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    return result[0]


def test_a_file_four_times_longer_costs_about_four_times_more():
    head = "import jax\nimport jax.numpy as jnp\n"
    small, small_findings = _calls(head + "".join(UNIT.format(i=i) for i in range(15)) + BUG)
    large, large_findings = _calls(head + "".join(UNIT.format(i=i) for i in range(60)) + BUG)
    assert sorted({f.code for f in small_findings}) == ["JAX101", "JAX301", "JAX302", "JAX401"]
    assert len(large_findings) == 4 * (len(small_findings) - 1) + 1
    assert large / small < 5, (small, large)  # quadratic: about 16


@pytest.mark.parametrize("operator", ["and", "or"])
def test_a_boolean_chain_four_times_longer_costs_about_four_times_more(operator):
    def chain(terms: int) -> str:
        return ("import jax\n\n@jax.jit\ndef f(x, c):\n    y = c " + operator + " "
                + f" {operator} ".join(["c"] * terms) + "\n    return x\n" + BUG)

    small, _ = _calls(chain(400))
    large, findings = _calls(chain(1600))
    assert any(f.code == "JAX301" for f in findings)
    assert large / small < 5, (small, large)
