"""What JAX does with a donated argument, which JAX506 predicts: run on the CPU.

The fixture `JAX506_donated_buffers.py` runs its positives and negatives through JAX; these pin the
premises the rule's page states and its negatives rest on.
"""
import warnings

import pytest

pytestmark = pytest.mark.jax


@pytest.fixture(scope="module")
def jax():
    import jax
    return jax


def test_a_donated_array_is_deleted_and_keeps_its_metadata(jax):
    jnp = jax.numpy
    double = jax.jit(lambda x: x * 2, donate_argnums=0)
    x = jnp.ones(3)
    double(x)
    assert x.is_deleted()
    assert x.shape == (3,) and x.dtype == jnp.float32 and len(x) == 3 and isinstance(x, jax.Array)
    import numpy as np
    with pytest.raises(RuntimeError, match="Array has been deleted"):
        np.asarray(x)
    # an operation JAX has compiled before takes its fast path, which names the buffer instead
    with pytest.raises((RuntimeError, ValueError), match="deleted"):
        x + 1
    with pytest.raises(ValueError, match="deleted or donated"):
        double(x)


def test_every_leaf_of_a_donated_pytree_is_deleted(jax):
    jnp = jax.numpy
    scale = jax.jit(lambda tree: jax.tree.map(lambda v: v * 2, tree), donate_argnums=0)
    tree = {"w": jnp.ones(3), "b": jnp.zeros(2)}
    scale(tree)
    assert all(leaf.is_deleted() for leaf in tree.values())


def test_argnums_and_argnames_stand_for_each_other(jax):
    jnp = jax.numpy
    by_number = jax.jit(lambda x, y: x + y, donate_argnums=0)
    by_name = jax.jit(lambda x, y: x + y, donate_argnames="x")
    x, z = jnp.ones(3), jnp.ones(3)
    by_number(x=x, y=1.0)
    by_name(z, 1.0)
    assert x.is_deleted() and z.is_deleted()


def test_the_same_array_at_a_donated_and_another_position_raises(jax):
    jnp = jax.numpy
    multiply = jax.jit(lambda x, y: x * y, donate_argnums=0)
    x = jnp.ones(3)
    with pytest.raises(Exception, match="previously donated in the same call"):
        multiply(x, x)


def test_numpy_arrays_and_python_numbers_are_copied_not_deleted(jax):
    import numpy as np
    double = jax.jit(lambda x: x * 2, donate_argnums=0)
    host = np.ones(3, np.float32)
    double(host)
    double(3.0)
    assert (host + 1 == 2).all()


def test_nothing_is_donated_inside_a_trace(jax):
    jnp = jax.numpy
    double = jax.jit(lambda x: x * 2, donate_argnums=0)
    outer = jax.jit(lambda x: double(x) + x)
    x = jnp.ones(3)
    outer(x)
    assert not x.is_deleted()


def test_a_buffer_no_output_can_reuse_is_kept_with_a_warning(jax):
    jnp = jax.numpy
    total = jax.jit(lambda x: jnp.sum(x), donate_argnums=0)
    x = jnp.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        total(x)
    assert not x.is_deleted()
    assert any("donated buffers were not usable" in str(w.message) for w in caught)
