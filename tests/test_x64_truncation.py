"""JAX402's premise, checked with JAX: without `jax_enable_x64`, 64-bit requests give 32 bits and a UserWarning."""
import importlib.util
import warnings

import numpy as np
import pytest

from conftest import FIXTURES

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(autouse=True)
def x64_off():
    if jax.config.jax_enable_x64:
        pytest.skip("64-bit mode is on in this process")


def test_float64_request_gives_float32_with_a_user_warning():
    with pytest.warns(UserWarning, match="Explicitly requested dtype float64"):
        assert jnp.zeros(3, dtype=jnp.float64).dtype == jnp.float32


@pytest.mark.parametrize("request_64", [
    lambda: jnp.zeros(2, dtype="int64"),
    lambda: jnp.array([1.0], np.float64),
    lambda: jnp.ones(2).astype(jnp.complex128),
    lambda: jax.random.normal(jax.random.key(0), (2,), dtype=jnp.float64),
    lambda: jnp.float64(0.1),
    lambda: jnp.arange(3, dtype=jnp.dtype("uint64")),
])
def test_every_form_the_rule_reports_is_narrowed(request_64):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert request_64().dtype.itemsize <= 4 or request_64().dtype == jnp.complex64


def test_enable_x64_context_gives_float64_and_false_does_not():
    with jax.enable_x64(True):
        assert jnp.zeros(2, dtype=jnp.float64).dtype == jnp.float64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with jax.enable_x64(False):
            assert jnp.zeros(2, dtype=jnp.float64).dtype == jnp.float32


def test_fixture_positives_really_get_32_bits():
    path = FIXTURES / "JAX402_x64.py"
    spec = importlib.util.spec_from_file_location("fixture_JAX402_x64", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    key = jax.random.key(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = [
            module.make_accumulator(2), module.token_ids([1, 2]), module.from_numpy_reference(np.ones(2)),
            module.to_double(jnp.ones(2)), module.noise(key, (2,)), module.spectrum(jnp.ones(2)),
            module.exact_scalar(), module.counters(2), module.forced_off(2),
        ]
    assert [str(r.dtype) for r in results] == [
        "float32", "int32", "float32", "float32", "float32", "complex64", "float32", "uint32", "int32"]


def test_parameter_default_positives_really_get_32_bits_and_the_negatives_what_they_ask():
    path = FIXTURES / "JAX402_x64_parameter_default.py"
    spec = importlib.util.spec_from_file_location("fixture_JAX402_x64_parameter_default", path)
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec.loader.exec_module(module)
        library = module.library_zeros(2)
    narrowed = [module.token_ids, module.accumulator, module.reference, module.noise, module.counts, library]
    assert [str(r.dtype) for r in narrowed] == ["int32", "float32", "float32", "float32", "uint32", "float32"]
    assert len([w for w in caught if "Explicitly requested dtype" in str(w.message)]) == len(narrowed)
    assert [str(r.dtype) for r in (module.a, module.b, *module.c[:1], module.c[2][0], module.c[3])] == [
        "float32", "bfloat16", "float32", "float32", "float16"]
    assert str(module.c[1].dtype) == "float64"  # NumPy keeps its 64 bits
