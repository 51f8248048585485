"""JAX decides what JAX505 and JAX507 predict: static arguments are hashed at every call of the
wrapper, and a method jitted with `self` unbound traces the instance like any argument: each
transform of the tables in `jaxmodel/jit_signatures.py`, and each class of the JAX507 fixture, called."""
import importlib.util
from functools import partial

import pytest

from jaxlint.engine.files import check_file
from jaxlint.jaxmodel.jit_signatures import EVERY_ARGUMENT_TRACED, STATIC_HASHING
from jaxlint.model.settings import Settings

from conftest import FIXTURES

pytestmark = pytest.mark.jax

JAX507_FIXTURE = FIXTURES / "JAX507_jit_method_self.py"


def transform(name):
    import importlib
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize("name", sorted(STATIC_HASHING))
def test_every_static_hashing_transform_refuses_a_list_at_a_static_position(name):
    import jax.numpy as jnp
    keyword = "static_broadcasted_argnums" if name == "jax.pmap" else "static_argnums"
    wrapped = transform(name)(lambda x, shape: x, **{keyword: 1})
    wrapped(jnp.ones(1), (1, 2))
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        wrapped(jnp.ones(1), [1, 2])


@pytest.mark.parametrize("name", sorted(EVERY_ARGUMENT_TRACED))
def test_every_argument_traced_transform_refuses_an_object_that_is_not_a_pytree(name):
    import jax.numpy as jnp

    class Plain:
        pass

    with pytest.raises(TypeError, match="abstract array|not a valid JAX type"):
        transform(name)(lambda obj, x: x)(Plain(), jnp.ones(1))


def test_a_static_argument_is_hashed_whether_passed_by_position_or_keyword_but_not_as_a_default():
    import jax
    import jax.numpy as jnp

    @partial(jax.jit, static_argnums=1)
    def by_number(x, shape=[2]):
        return x

    @partial(jax.jit, static_argnames=("shape",))
    def by_name(x, shape=[2]):
        return x

    for f in (by_number, by_name):
        f(jnp.ones(1))  # the default list is never hashed
        for call in (lambda: f(jnp.ones(1), [2]), lambda: f(jnp.ones(1), shape=[2])):
            with pytest.raises(ValueError, match="Non-hashable static arguments"):
                call()
    import numpy as np
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        by_number(jnp.ones(1), np.array([2]))
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        by_number(jnp.ones(1), jnp.array(2))
    by_number(jnp.ones(1), np.int32(2))  # a NumPy scalar hashes


def test_flax_linen_modules_are_not_pytrees_and_equinox_modules_are():
    import equinox as eqx
    import flax.linen as nn
    import flax.nnx as nnx
    import jax
    import jax.numpy as jnp

    class Linen(nn.Module):
        features: int = 2

    class Equinox(eqx.Module):
        weight: jax.Array

    class Nnx(nnx.Module):
        def __init__(self):
            self.weight = nnx.Param(jnp.ones(2))

    linen = Linen()
    assert jax.tree_util.tree_leaves(linen) == [linen]  # one leaf: itself
    assert hash(linen) == hash(Linen())  # hashable: `static_argnums=0` works on it
    assert len(jax.tree_util.tree_leaves(Equinox(jnp.ones(2)))) == 1
    assert len(jax.tree_util.tree_leaves(Nnx())) == 1


def load(path):
    spec = importlib.util.spec_from_file_location(f"fixture_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_jax507_fixture_raises_exactly_for_the_classes_reported():
    import jax
    import jax.numpy as jnp
    fixture = load(JAX507_FIXTURE)
    x = jnp.ones(2)
    raising = {
        "Scaler": lambda: fixture.Scaler(2.0)(x),
        "Dense": lambda: fixture.Dense().normalise(x),
        "Base": lambda: fixture.Derived().shift(x),
        "Config": lambda: fixture.Config().apply(x),
        "Compared": lambda: fixture.Compared().apply(x),
        "Rollout": lambda: fixture.fast_step(fixture.Rollout(), x),
        "WithoutSelf": lambda: fixture.WithoutSelf().scale(x),
    }
    for name, call in raising.items():
        with pytest.raises((TypeError, ValueError)) as raised:
            call()
        expected = "Non-hashable static arguments" if name in ("Config", "Compared") else "abstract array"
        assert expected in str(raised.value), name
    working = [
        lambda: fixture.Module(x)(x), lambda: fixture.State(x).apply(x), lambda: fixture.Pair(x).apply(x),
        lambda: fixture.Registered(x).apply(x), lambda: fixture.RegisteredLater(x).apply(x),
        lambda: fixture.StaticSelf(2.0)(x), lambda: fixture.FrozenConfig().apply(x),
        lambda: fixture.Hashed().apply(x), lambda: fixture.BoundLater(2.0).fast(x),
        lambda: fixture.Helpers.double(x), lambda: fixture.PytreeChild().shift(x),
        lambda: fixture.Filtered(2.0)(x), lambda: fixture.RegistersItself(2.0).apply(x),
    ]
    for call in working:
        call()
    reported = {f.start.line for f in check_file(str(JAX507_FIXTURE), Settings()).findings if f.code == "JAX507"}
    assert len(reported) == len(raising)
    del jax


def test_a_static_self_keeps_the_attributes_it_was_compiled_with():
    import jax.numpy as jnp
    fixture = load(JAX507_FIXTURE)
    scaler = fixture.StaticSelf(2.0)
    assert float(scaler(jnp.ones(()))) == 2.0
    scaler.factor = 3.0
    assert float(scaler(jnp.ones(()))) == 2.0  # stale: the same instance hashes the same
