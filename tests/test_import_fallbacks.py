"""Import fallbacks: names resolve to what the `try` body imports when the handler only runs where that
import failed; other disagreements still resolve to nothing."""
import textwrap

import libcst as cst
import pytest

from jaxlint.semantic.names import NameResolver

from conftest import recorded_scope


def resolve(source: str, expression: str) -> str | None:
    module = cst.parse_module(textwrap.dedent(source))
    return NameResolver().qualified_name(cst.parse_expression(expression), recorded_scope(module))


@pytest.mark.parametrize("source, expression, expected", [
    ("try:\n    import jax.numpy as jnp\nexcept ImportError:\n    import numpy as jnp\n", "jnp.sum", "jax.numpy.sum"),
    ("try:\n    from jax import shard_map\nexcept (ImportError, AttributeError):\n"
     "    from jax.experimental.shard_map import shard_map\n", "shard_map", "jax.shard_map"),
    ("try:\n    from jax.random import key\nexcept ModuleNotFoundError as e:\n    key = None\n", "key", "jax.random.key"),
    # a fallback that itself falls back
    ("try:\n    from jax import shard_map\nexcept ImportError:\n    try:\n"
     "        from jax.experimental.shard_map import shard_map\n    except ImportError:\n"
     "        shard_map = None\n", "shard_map", "jax.shard_map"),
    # an `except` that is not about a missing module keeps the disagreement
    ("try:\n    import jax.numpy as xp\nexcept Exception:\n    import numpy as xp\n", "xp.sum", None),
    ("try:\n    import jax.numpy as xp\nexcept ImportError:\n    pass\nelse:\n    import numpy as xp\n", "xp.sum", None),
    # a name the handler binds but the body does not is not a fallback of anything
    ("try:\n    import jax\nexcept ImportError:\n    import numpy as xp\n", "xp.sum", "numpy.sum"),
    ("if GPU:\n    import jax.numpy as xp\nelse:\n    import numpy as xp\n", "xp.sum", None),
])
def test_import_fallbacks(source, expression, expected):
    assert resolve(source, expression) == expected
