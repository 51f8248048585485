"""JAX302 against JAX itself: a traced body that reads a reassigned global keeps the old value."""
import importlib.util

import pytest

from conftest import FIXTURES

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

PATH = FIXTURES / "JAX302_globals.py"


@pytest.fixture
def fixture():
    """A fresh copy of the fixture module for each test, so reassignments do not leak between tests."""
    spec = importlib.util.spec_from_file_location("fixture_JAX302_stale", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_jitted_read_of_reassigned_global_is_stale(fixture):
    w, g = jnp.float32(1.0), jnp.float32(1.0)
    assert float(fixture.sgd_update(w, g)) == pytest.approx(0.9)
    fixture.set_learning_rate(0.5)
    assert fixture.learning_rate == 0.5
    # The compiled code still holds 0.1: the change is ignored.
    assert float(fixture.sgd_update(w, g)) == pytest.approx(0.9)
    # Not traced: the same expression sees the new value.
    assert float(fixture.eager_update(w, g)) == pytest.approx(0.5)


def test_passing_the_value_as_an_argument_sees_the_new_value(fixture):
    w, g = jnp.float32(1.0), jnp.float32(1.0)
    assert float(fixture.sgd_update_arg(w, g, fixture.learning_rate)) == pytest.approx(0.9)
    fixture.set_learning_rate(0.5)
    assert float(fixture.sgd_update_arg(w, g, fixture.learning_rate)) == pytest.approx(0.5)


def test_augmented_assignment_through_global_is_ignored_after_tracing(fixture):
    logits = jnp.array([0.0, 1.0])
    before = fixture.sample_probs(logits)
    fixture.anneal()
    fixture.anneal()
    after = fixture.sample_probs(logits)
    assert jnp.allclose(before, after)
    assert not jnp.allclose(jax.nn.softmax(logits / fixture.temperature), before)


def test_lax_body_is_cached_even_outside_jit(fixture):
    w = jnp.float32(1.0)
    assert float(fixture.shrink(w, 1)) == pytest.approx(0.75)  # noise_scale is 0.25 after import
    fixture.noise_scale = 0.5
    assert float(fixture.shrink(w, 1)) == pytest.approx(0.75)


def test_helper_called_from_jit_is_stale(fixture):
    assert float(fixture.amplify(jnp.float32(1.0))) == pytest.approx(2.0, abs=1e-5)
    fixture.set_gain(10.0)
    assert float(fixture.amplify(jnp.float32(1.0))) == pytest.approx(2.0, abs=1e-5)


def test_grad_and_vmap_alone_see_the_new_value(fixture):
    w = jnp.ones(2)
    assert jnp.allclose(fixture.grad_of_scaled(w), 2.0)
    assert jnp.allclose(fixture.batched_gain(w), 2.0)
    fixture.set_gain(5.0)
    assert jnp.allclose(fixture.grad_of_scaled(w), 5.0)
    assert jnp.allclose(fixture.batched_gain(w), 5.0)


@pytest.mark.jax
def test_fresh_traces_see_current_values_and_kept_ones_go_stale(capfd):
    """JAX302_fresh_traces.py, run: what is not reported reads the value current when it runs; what is
    reported keeps the value it was traced with."""
    import runpy

    namespace = runpy.run_path(str(FIXTURES / "JAX302_fresh_traces.py"))
    assert float(namespace["variables2"][0]) == 2.0  # traced after `scale = 2.0`
    out = capfd.readouterr().out.split("\n")
    printed = [line for line in out if line.startswith("[")]
    # step: 1*1+0; hess of sum(a*offset) is zero; shifted: 1+3, 1+6; equilibrate prints nothing
    assert printed[0] == "[1. 1. 1.]" and printed[2] == "[4. 4. 4.]" and printed[4] == "[7. 7. 7.]"
    # add_bias and amplify: the second call still uses the value of the first trace (stale)
    assert printed[5:] == ["[1. 1. 1.]", "[1. 1. 1.]", "[2. 2. 2.]", "[2. 2. 2.]", "[2. 2. 2.]", "[[1. 1. 1.]]"]
    assert [line for line in out if line and not line.startswith("[")][-2:] == ["1.0", "1.0"]  # grad_fn: stale k


def test_lambdas_handed_to_lax_loops_are_traced_afresh_and_kept_ones_go_stale():
    """JAX302_notebook_lambdas.py, run: a statement that hands a new lambda to a `lax` loop traces
    it there, so running the statement again after the global changes sees the new value; a lambda
    kept in a variable is one function object, whose trace the loop reuses."""
    import runpy

    namespace = runpy.run_path(str(FIXTURES / "JAX302_notebook_lambdas.py"))
    assert float(namespace["position"]) == pytest.approx(6.0)  # 3 steps of 1.0, then 3 more: rate 10 unseen
    module = namespace["simulate"].__globals__
    correlations = namespace["correlations"]
    assert jnp.allclose(namespace["spread"], jnp.var(jnp.arange(3.0)) * correlations + 4.5)
    assert float(jnp.var(module["frame"])) == 0.0  # rebound after the statement ran
    again = module["lax"].map(lambda z: module["repeat_simulation"](r=z), correlations)
    assert jnp.allclose(again, 4.5)  # a new lambda: traced again, with the current frame


def test_code_that_needs_an_instance_sees_what_the_constructor_set_up():
    """JAX302_constructor_setup.py, run: the constructor sets the global before any method runs, and
    a method jitted with `self` static is traced again for each instance. A second instance with
    another value leaves a top-level jitted function with the first one (the case the rule page
    says it does not follow outside the module)."""
    import runpy

    namespace = runpy.run_path(str(FIXTURES / "JAX302_constructor_setup.py"))
    trainer_class, ones = namespace["Trainer"], jnp.ones(3)
    first = trainer_class(2)
    assert float(first.metrics(ones)) == pytest.approx(2.0)
    assert jnp.allclose(first.train([ones])[0], 4.0)
    second = trainer_class(3)
    assert float(second.metrics(ones)) == pytest.approx(3.0)  # traced again: `self` is part of the key
    assert jnp.allclose(second.train([ones])[0], 4.0)  # `train_step` kept the first instance's setup
