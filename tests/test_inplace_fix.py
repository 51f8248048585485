"""JAX401's fix: the fixed code runs under `jax.jit`, computes what the NumPy-style original meant, and is stable."""
import os
import shutil

import pytest

from jaxlint.model.settings import Settings
from jaxlint.engine.checker import check_source, enabled_rules
from jaxlint.engine.files import check_file

from conftest import FIXTURES

SOURCE = FIXTURES / "fixes" / "inplace.py"
GOLDEN = FIXTURES / "fixes" / "inplace.fixed.py"
#: function -> its argument (made by `argument`: NumPy is imported by the JAX tests only, not when
#: the static tests are collected); `view_of_rows` keeps its finding (its fix is not safe) and is not run
CASES = {
    "one_hot": "LABELS",
    "running_sum": "X",
    "update_slices": "X",
    "integer_ops": "X",
    "tuple_value": "X",
}


def argument(name):
    import numpy as np

    return {"X": np.array([0.5, 1.5, 2.5, 3.5], dtype=np.float32), "LABELS": np.array([0, 3, 1])}[CASES[name]]


def fixed_text(tmp_path):
    target = tmp_path / "inplace.py"
    shutil.copy(SOURCE, target)
    return check_file(str(target), Settings(), fix=True).fixed_text


def namespace(text, name):
    found = {}
    exec(compile(text, name, "exec"), found)
    return found


def test_fix_matches_golden_and_is_stable(tmp_path):
    text = fixed_text(tmp_path)
    assert text is not None
    if os.environ.get("JAXLINT_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
    compile(text, "inplace.fixed.py", "exec")
    settings = Settings()
    again = check_source(text, "inplace.py", settings, enabled_rules(settings, "inplace.py"))
    # What is left: the loop over rows, whose NumPy meaning (writing through a view) no rebinding keeps.
    assert [(f.code, f.start.line) for f in again] == [("JAX401", 45)]
    assert all(f.fix is None or f.fix.applicability.value != "safe" for f in again)
    second = tmp_path / "second.py"
    second.write_text(text)
    assert check_file(str(second), settings, fix=True).fixed_text is None


@pytest.mark.jax
@pytest.mark.parametrize("name", sorted(CASES))
def test_fixed_code_runs_under_jit_and_matches_numpy(name):
    import jax
    import numpy as np

    fixed = namespace(GOLDEN.read_text(), str(GOLDEN))
    # The original, run as the NumPy code it was written as: the same source with NumPy for jnp.
    numpy_source = SOURCE.read_text().replace("import jax.numpy as jnp", "import numpy as jnp")
    expected = namespace(numpy_source, "inplace_numpy.py")[name](argument(name).copy())
    got = jax.jit(fixed[name])(argument(name))
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)


@pytest.mark.jax
@pytest.mark.parametrize("name", sorted(CASES))
def test_original_fails_in_jax(name):
    original = namespace(SOURCE.read_text(), str(SOURCE))
    with pytest.raises(TypeError, match="immutable"):
        original[name](argument(name))
