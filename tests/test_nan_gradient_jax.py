"""JAX405 against JAX itself: a `where` that masks a singular point of the function in one of its
branches gives a NaN gradient there, and each of the fixture's safe twins (the double `where`, a
clamp, a `relu` or `stop_gradient` on the way, data that is not differentiated, an aux output,
forward mode) gives a finite one."""
import importlib.util

import pytest

from conftest import FIXTURES

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

PATH = FIXTURES / "JAX405_nan_gradient_through_where.py"


def load():
    spec = importlib.util.spec_from_file_location("fixture_JAX405_jax", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECKS = load().GRADIENT_CHECKS


@pytest.mark.parametrize("index", range(len(CHECKS)))
def test_gradient_is_nan_exactly_where_predicted(index):
    differentiated, args, nan = CHECKS[index]
    leaves = jax.tree.leaves(differentiated(*args))
    assert any(bool(jnp.isnan(leaf).any()) for leaf in leaves) is nan


@pytest.mark.parametrize("singular, condition, point", [
    (jnp.sqrt, lambda x: x > 0, 0.0), (jnp.log, lambda x: x > 0, 0.0), (jnp.log2, lambda x: x > 0, 0.0),
    (jnp.log10, lambda x: x > 0, 0.0), (jnp.log1p, lambda x: x > -1, -1.0), (jnp.arccos, lambda x: x < 1, 1.0),
    (jnp.arcsin, lambda x: x > -1, -1.0), (jnp.arctanh, lambda x: x < 1, 1.0), (jax.lax.rsqrt, lambda x: x > 0, 0.0),
    (jnp.reciprocal, lambda x: x != 0, 0.0), (jnp.cbrt, lambda x: x != 0, 0.0), (lambda x: x ** -1, lambda x: x != 0, 0.0),
    (lambda x: x ** 0.5, lambda x: x > 0, 0.0), (lambda x: x ** 1.5, lambda x: x > 0, -1.0),
    (lambda x: 2.0 / x, lambda x: x > 1e-6, 0.0),
])
def test_every_singular_function_of_the_table_gives_nan_where_masked(singular, condition, point):
    gradient = jax.grad(lambda x: jnp.where(condition(x), singular(x), 0.0))(jnp.float32(point))
    assert jnp.isnan(gradient)
    safe = jax.grad(lambda x: jnp.where(condition(x), singular(jnp.where(condition(x), x, 0.5)), 0.0))
    assert jnp.isfinite(safe(jnp.float32(point)))


def test_a_fractional_power_above_one_is_smooth_at_zero():
    # `x ** 1.5` is NaN only below 0: the table masks the negatives, not 0 itself
    assert jax.grad(lambda x: jnp.where(x > 0, x ** 1.5, 0.0))(jnp.float32(0.0)) == 0.0
