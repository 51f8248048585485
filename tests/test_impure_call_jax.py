"""JAX304 against JAX itself: a clock read inside a jitted function is frozen at trace time."""
import importlib.util
import itertools
import time
import types

import pytest

from conftest import FIXTURES

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

PATH = FIXTURES / "JAX304_impure.py"


@pytest.fixture
def fixture():
    spec = importlib.util.spec_from_file_location("fixture_JAX304_jax", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_time(monkeypatch, fixture, **replacements):
    """Give the fixture module its own `time`, with some functions replaced (JAX keeps the real one)."""
    namespace = types.SimpleNamespace(**{**vars(time), **replacements})
    monkeypatch.setattr(fixture, "time", namespace)


@pytest.fixture
def fake_clock(monkeypatch, fixture):
    """The fixture's `time.time` returns 1.0, 2.0, 3.0 …, and records each read."""
    reads = []
    ticks = itertools.count(1)

    def clock():
        reads.append(None)
        return float(next(ticks))

    fake_time(monkeypatch, fixture, time=clock)
    return reads


def test_time_in_jit_is_frozen(fixture, fake_clock):
    _, first = fixture.timestamped(jnp.float32(1.0))
    _, second = fixture.timestamped(jnp.float32(2.0))
    assert float(first) == float(second) == 1.0  # both calls return the trace-time reading
    assert len(fake_clock) == 1  # the clock was read once, while tracing


def test_passing_the_time_in_sees_every_reading(fixture, fake_clock):
    _, first = fixture.stamp_outside(jnp.float32(1.0))
    _, second = fixture.stamp_outside(jnp.float32(1.0))
    assert (float(first), float(second)) == (1.0, 2.0)


def test_lax_body_sleeps_once_per_loop_not_per_iteration(fixture, monkeypatch):
    sleeps = []
    fake_time(monkeypatch, fixture, sleep=sleeps.append)
    assert float(fixture.throttled(jnp.float32(0.0))) == sum(range(10))
    assert len(sleeps) == 1


def test_logger_in_jit_logs_once_and_callback_logs_every_call(fixture, caplog):
    with caplog.at_level("INFO", logger=fixture.logger.name):
        for _ in range(3):
            fixture.timed_matmul(jnp.ones((2, 2)), jnp.ones((2, 2)))
        assert len(caplog.records) == 1
        caplog.clear()
        for _ in range(3):
            fixture.logged_step(jnp.ones(2), jnp.ones(2))
        jax.effects_barrier()
        assert len(caplog.records) == 3
