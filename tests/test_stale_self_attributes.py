"""JAX302 against JAX itself: a method traced with `self` fixed (a bound method given to `jax.jit`,
or `self` static) keeps the attributes it read at its first call; a traced `self` (a pytree argument)
and a wrapper made anew read the current ones. The classes are those of JAX302_self_attributes.py."""
import importlib.util

import pytest

from conftest import FIXTURES

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

PATH = FIXTURES / "JAX302_self_attributes.py"


@pytest.fixture(scope="module")
def fixture():
    spec = importlib.util.spec_from_file_location("fixture_JAX302_self", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bound_method_keeps_the_attributes_of_its_first_call(fixture):
    learner = fixture.Learner(scale=1.0)
    x = jnp.ones(3)
    first = learner.update(x)
    learner.train_step(x)
    assert not jnp.allclose(learner.weights, jnp.ones(3))
    # the weights and targets changed; the compiled update still computes with the first ones
    assert jnp.allclose(learner.update(x), first)
    assert not jnp.allclose(learner._update(x), first)


def test_static_self_keeps_the_attributes_of_its_first_call(fixture):
    critic = fixture.StaticCritic()
    reward, value = jnp.float32(1.0), jnp.float32(1.0)
    first = critic.td_target(reward, value)
    critic.target_params = jnp.full(2, 5.0)
    assert jnp.allclose(critic.td_target(reward, value), first)
    assert jnp.allclose(critic.td_target.__wrapped__(critic, reward, value), 1.0 + 0.99 * 5.0)


def test_gradient_of_a_static_self_method_keeps_the_first_target(fixture):
    learner = fixture.GradOfJitted()
    params = jnp.full(2, 3.0)
    first = learner.train(params)
    assert not jnp.allclose(learner.target, jnp.ones(2))
    assert jnp.allclose(learner.train(params), first)


def test_attribute_passed_as_an_argument_is_current(fixture):
    learner = fixture.ArgumentLearner()
    x = jnp.ones(3)
    first = learner.train_step(x)
    assert not jnp.allclose(learner.train_step(x), first)


def test_a_wrapper_made_anew_retraces_unless_another_is_alive(fixture):
    fresh = fixture.FreshWrapper()
    x = jnp.ones(3)
    first = fresh.train_step(x)
    assert not jnp.allclose(fresh.train_step(x), first)
    # a wrapper of the same bound method kept alive shares its cache entry: the new one is stale too
    kept = fixture.FreshWrapper()
    keep = jax.jit(kept._forward)
    before = keep(x)
    kept.weights = kept.weights * 3.0
    assert jnp.allclose(jax.jit(kept._forward)(x), before)


def test_a_wrapper_made_again_after_the_replacement_is_current(fixture):
    rejitted = fixture.Rejitted()
    x = jnp.ones(3)
    first = rejitted.train_step(x)
    assert not jnp.allclose(rejitted.train_step(x), first)
    assert jnp.allclose(rejitted.forward(x), x @ rejitted.weights)


def test_pytree_self_passed_traced_is_current(fixture):
    state = fixture.TracedState(jnp.ones(3))
    x = jnp.ones(3)
    first = state.predict(x)
    state.weights = jnp.full(3, 2.0)
    assert jnp.allclose(state.predict(x), 2.0 * first)


def test_static_self_hashed_by_value_changed_in_place_is_stale(fixture):
    obj = fixture.HashedByValue()
    assert float(obj.grow(jnp.float32(1.0))) == pytest.approx(1.0)
    assert obj.scale == 2.0
    # the hash now follows 2.0, and the entry made with the same object is still found
    assert float(obj.apply(jnp.float32(1.0))) == pytest.approx(1.0)
