"""Functions that Flax, NumPyro, Haiku and Equinox trace for the code that hands them over: the
libraries themselves decide. Each fixture with a `LIBRARY_CHECKS` list names functions that run the
library on the fixture's code, and the exception JAX raises there (or None); the exception must come
from a line jaxlint reports, and every error jaxlint reports must be raised.

The libraries are not dependencies of jaxlint's tests: each fixture is skipped where its library is
not installed (the fixtures' findings are still checked by `test_fixtures.py`).
"""
import importlib.util

import pytest

from conftest import FIXTURES
from test_jax_agreement import agrees_with_jax

pytestmark = pytest.mark.jax

#: fixture -> the library it runs
LIBRARIES = {
    "JAX201_flax_initializers.py": "flax",
    "JAX201_linen_apply.py": "flax",
    "JAX201_nnx_called_modules.py": "flax",
    "JAX201_numpyro_kernels.py": "numpyro",
    "JAX201_haiku_transforms.py": "haiku",
    "JAX201_haiku_apply.py": "haiku",
    "JAX201_nnx_equinox_transforms.py": "equinox",
    "JAX203_equinox_filtered_arguments.py": "equinox",
}


def test_every_fixture_with_library_checks_is_listed():
    with_checks = {p.name for p in FIXTURES.glob("*.py") if "LIBRARY_CHECKS" in p.read_text(encoding="utf-8")}
    assert with_checks == set(LIBRARIES)


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_the_library_raises_exactly_where_jaxlint_reports(name):
    pytest.importorskip(LIBRARIES[name])
    if name == "JAX201_nnx_equinox_transforms.py":
        pytest.importorskip("flax")
    path = FIXTURES / name
    spec = importlib.util.spec_from_file_location(f"fixture_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    agrees_with_jax(path, module.LIBRARY_CHECKS)
