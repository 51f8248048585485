"""JAX205: the unroll threshold is configurable, and JAX really does unroll a Python loop."""
import pytest

from jaxlint.model.settings import Settings
from jaxlint.engine.checker import check_source, enabled_rules

SOURCE = """
import jax
import jax.numpy as jnp

@jax.jit
def simulate(x):
    for _ in range(50):
        x = x + jnp.sin(x)
    return x
"""


def codes(settings):
    return [f.code for f in check_source(SOURCE, "example.py", settings, enabled_rules(settings, "example.py"))]


def test_default_threshold_leaves_a_50_iteration_loop_alone():
    assert "JAX205" not in codes(Settings())


def test_lower_threshold_reports_it():
    assert codes(Settings(loop_unroll_threshold=50)) == ["JAX205"]
    assert "JAX205" not in codes(Settings(loop_unroll_threshold=51))


CONFIGURED = """
import argparse
import dataclasses

import jax
import jax.numpy as jnp

@dataclasses.dataclass
class Config:
    num_steps: int = 120

parser = argparse.ArgumentParser()
parser.add_argument("--num-updates", "-u", type=int, default=150)
args = parser.parse_args()
config = Config()

@jax.jit
def simulate(x):
    for _ in range(config.num_steps):
        x = x + jnp.sin(x)
    for _ in range(10, args.num_updates):
        x = x + jnp.sin(x)
    return x
"""


def configured_findings(settings):
    return check_source(CONFIGURED, "example.py", settings, enabled_rules(settings, "example.py"))


def test_a_configured_bound_says_where_its_value_comes_from():
    first, second = configured_findings(Settings())
    assert "loop of 120 iterations (120 is the default of `Config.num_steps` at line 10)" in first.message
    assert "command line" not in first.message
    assert ("loop of 140 iterations (150 is the default of `--num-updates` at line 13, which the command line "
            "can change)") in second.message


def test_a_configured_bound_is_held_to_the_threshold():
    assert [f.start.line for f in configured_findings(Settings(loop_unroll_threshold=130))] == [21]
    assert configured_findings(Settings(loop_unroll_threshold=200)) == []


@pytest.mark.jax
def test_jax_unrolls_a_python_loop_but_not_fori_loop():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def python_loop(x):
        for _ in range(100):
            x = x + jnp.sin(x)
        return x

    def fori(x):
        return jax.lax.fori_loop(0, 100, lambda i, x: x + jnp.sin(x), x)

    unrolled = jax.make_jaxpr(jax.jit(python_loop))(jnp.ones(3))
    looped = jax.make_jaxpr(jax.jit(fori))(jnp.ones(3))
    inner = lambda closed: closed.jaxpr.eqns[0].params["jaxpr"].jaxpr.eqns  # the body of the pjit
    assert len(inner(unrolled)) >= 200  # a sin and an add per iteration
    assert len(inner(looped)) < 10
