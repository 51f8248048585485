"""JAX303 against JAX itself: outside state changed in a traced function leaks tracers or updates once.

JAX does not raise at the mutating line (so these are not fixture RUNTIME_CHECKS): a stored tracer
raises UnexpectedTracerError when it is used later, or `jax.checking_leaks()` reports it when the
trace ends; a plain Python update under `jit` happens once per trace, not once per call.
"""
import importlib.util

import pytest

from conftest import FIXTURES

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

PATH = FIXTURES / "JAX303_mutation.py"


@pytest.fixture
def fixture():
    spec = importlib.util.spec_from_file_location("fixture_JAX303_jax", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_leaked(value):
    """Using a tracer after its trace has ended raises UnexpectedTracerError."""
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jnp.sin(value)


def test_append_to_global_list_leaks_a_tracer(fixture):
    fixture.train_step(jnp.ones(3), jnp.ones(3))
    fixture.train_step(jnp.ones(3), jnp.ones(3))
    assert len(fixture.loss_history) == 1  # the body ran once, at trace time
    assert_leaked(fixture.loss_history[0])


def test_checking_leaks_reports_the_stored_tracer(fixture):
    with jax.checking_leaks():
        with pytest.raises(Exception, match="[Ll]eak"):
            fixture.train_step(jnp.ones(3), jnp.ones(3))


def test_global_counter_under_jit_counts_traces_not_calls(fixture):
    for value in (1.0, 2.0, 3.0):
        assert float(fixture.counted_double(jnp.float32(value))) == 2 * value
    assert fixture.trace_count == 1


def test_counter_in_outside_dict_counts_once(fixture):
    for _ in range(3):
        fixture.count_steps(jnp.float32(0.0))
    assert fixture.counts["steps"] == 1


def test_item_and_attribute_assignment_leak_tracers(fixture):
    fixture.record_best(jnp.float32(0.5))
    assert_leaked(fixture.best["loss"])
    fixture.set_scale(jnp.float32(2.0))
    assert_leaked(fixture.config.scale)


def test_clear_runs_only_at_trace_time(fixture):
    fixture.evict_then_square(jnp.float32(2.0))
    fixture.cache["stale"] = 1
    fixture.evict_then_square(jnp.float32(3.0))
    assert fixture.cache == {"stale": 1}


def test_nonlocal_accumulator_does_not_accumulate(fixture):
    add = fixture.make_accumulator()
    assert float(add(jnp.float32(1.0))) == 1.0
    # The compiled code adds x to the value `total` had at trace time (zero): nothing accumulates.
    assert float(add(jnp.float32(2.0))) == 2.0


def test_scan_body_leaks_its_carry(fixture):
    final, carries = fixture.scan_collect(jnp.arange(3.0))
    assert float(final) == 3.0
    assert len(carries) == 1  # traced once for the whole loop, not once per iteration
    assert_leaked(carries[0])


def test_grad_body_leaks_into_closed_over_dict(fixture):
    grads, aux = fixture.loss_with_aux(jnp.ones(2), jnp.ones(2))
    assert grads.shape == (2,)
    assert_leaked(aux["pred"])


def test_negatives_run_cleanly_and_count_every_call(fixture):
    assert jnp.allclose(fixture.stack_powers(jnp.float32(2.0)), jnp.array([1.0, 2.0, 4.0, 8.0]))
    assert jnp.allclose(fixture.collect_pair(jnp.float32(1.0)), jnp.array([2.0, 4.0]))
    assert float(fixture.build_namespace(jnp.float32(1.5))) == 3.0
    params = {"w": jnp.ones(2)}
    updated = fixture.apply_gradients(params, {"w": jnp.ones(2)})
    assert jnp.allclose(updated["w"], 0.9)
    assert float(fixture.lookup(jnp.float32(2.0))) == 2.0
    for value in (1.0, 2.0):
        fixture.observed(jnp.float32(value))
    jax.effects_barrier()
    assert [float(v) for v in fixture.recorded] == [1.0, 2.0]
    for _ in range(3):
        fixture.counted_grad(jnp.ones(2))
    assert fixture.grad_evaluations == 3  # grad alone runs the body on every call
    for _ in range(2):
        fixture.batched(jnp.ones(2))
    assert fixture.vmap_calls == ["called", "called"]  # vmap alone traces on every call
    fixture.eager_step(jnp.ones(3), jnp.ones(3))
    assert isinstance(fixture.loss_history[-1], float)
