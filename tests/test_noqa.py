import pytest

from jaxlint.syntax.noqa import suppressed


@pytest.mark.parametrize("line, code, expected", [
    ("import jax.numpy as np  # noqa", "JAX601", True),
    ("import jax.numpy as np  # noqa: JAX601", "JAX601", True),
    ("import jax.numpy as np  # noqa:JAX601,JAX301", "JAX601", True),
    ("import jax.numpy as np  # noqa: JAX301, JAX601", "JAX601", True),
    ("import jax.numpy as np  # NOQA: jax601", "JAX601", True),
    ("import jax.numpy as np  # noqa: JAX6", "JAX601", True),
    ("import jax.numpy as np  # noqa: JAX301", "JAX601", False),
    ("import jax.numpy as np  # noqa: E501", "JAX601", False),
    ("import jax.numpy as np", "JAX601", False),
])
def test_noqa_comments(line, code, expected):
    assert suppressed(code, [line], 1) is expected


def test_noqa_applies_only_to_its_own_line():
    lines = ["x = 1  # noqa", "import jax.numpy as np"]
    assert suppressed("JAX601", lines, 1)
    assert not suppressed("JAX601", lines, 2)
