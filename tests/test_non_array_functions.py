"""JAX403's function table, checked against JAX: each reported argument rejects a list, each allowed use takes one."""
import importlib
import warnings

import numpy as np
import pytest

from jaxlint.rules.non_array_to_jnp import ARRAY_ARGUMENTS

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = jax.numpy

VECTOR = np.array([0.25, 0.5], dtype=np.float32)
MATRIX = np.array([[2.0, 1.0], [1.0, 2.0]], dtype=np.float32)
INDICES = np.array([0, 1])
#: example arguments for functions that need more than one vector (arrays are replaced by lists in turn)
EXAMPLES = {
    "jax.numpy.reshape": (VECTOR, (2,)),
    "jax.numpy.expand_dims": (VECTOR, 0),
    "jax.numpy.swapaxes": (MATRIX, 0, 1),
    "jax.numpy.moveaxis": (MATRIX, 0, 1),
    "jax.numpy.roll": (VECTOR, 1),
    "jax.numpy.tile": (VECTOR, 2),
    "jax.numpy.pad": (VECTOR, 1),
    "jax.numpy.broadcast_to": (VECTOR, (2, 2)),
    "jax.numpy.full_like": (VECTOR, 1.0),
    "jax.numpy.split": (VECTOR, 2),
    "jax.numpy.astype": (VECTOR, np.float32),
    "jax.numpy.quantile": (VECTOR, 0.5),
    "jax.numpy.percentile": (VECTOR, 50.0),
    "jax.numpy.take": (VECTOR, INDICES),
    "jax.numpy.tensordot": (VECTOR, VECTOR, 1),
    "jax.numpy.cross": (np.ones(3, np.float32), np.ones(3, np.float32)),
    "jax.numpy.where": (VECTOR > 0.3, VECTOR, VECTOR),
    "jax.numpy.interp": (VECTOR, VECTOR, VECTOR),
    "jax.numpy.linalg.solve": (MATRIX, VECTOR),
}
MATRIX_FUNCTIONS = {"diagonal", "trace", "tril", "triu", "fliplr", "rot90", "fft2", "ifft2"}


def resolve(qualified):
    module_name, _, attribute = qualified.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


def example(qualified):
    if qualified in EXAMPLES:
        return EXAMPLES[qualified]
    positions = ARRAY_ARGUMENTS[qualified]
    short = qualified.rsplit(".", 1)[1]
    base = MATRIX if qualified.startswith("jax.numpy.linalg.") or short in MATRIX_FUNCTIONS else VECTOR
    return tuple(base for _ in range(max(positions) + 1))


CASES = [(name, position) for name, positions in sorted(ARRAY_ARGUMENTS.items()) for position in positions]


@pytest.mark.parametrize("name,position", CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_reported_argument_rejects_a_list(name, position):
    function = resolve(name)
    args = list(example(name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        function(*args)  # the example itself is valid
        args[position] = np.asarray(args[position]).tolist()
        with pytest.raises(TypeError):
            function(*args)


A = jnp.asarray(VECTOR)
M = jnp.asarray(MATRIX)
#: uses that take Python sequences and are not reported
ALLOWED = {
    "array": lambda: jnp.array([1.0, 2.0]),
    "asarray": lambda: jnp.asarray((1, 2)),
    "stack": lambda: jnp.stack([A, A]),
    "stack of scalars": lambda: jnp.stack((1.0, 2.0)),
    "concatenate": lambda: jnp.concatenate([A, A]),
    "vstack": lambda: jnp.vstack([A, A]),
    "hstack": lambda: jnp.hstack((A, A)),
    "dstack": lambda: jnp.dstack([A, A]),
    "column_stack": lambda: jnp.column_stack([A, A]),
    "block": lambda: jnp.block([[M, M]]),
    "select": lambda: jnp.select([A > 0.3], [A], 0.0),
    "choose": lambda: jnp.choose(jnp.array([0, 1]), [A, A]),
    "lexsort": lambda: jnp.lexsort([A, A]),
    "zeros shape": lambda: jnp.zeros([2, 3]),
    "ones shape": lambda: jnp.ones((2, 3)),
    "full shape": lambda: jnp.full([2], 1.0),
    "reshape shape": lambda: jnp.reshape(A, [2, 1]),
    "transpose axes": lambda: jnp.transpose(M, [1, 0]),
    "pad widths": lambda: jnp.pad(A, [(1, 1)]),
    "tile reps": lambda: jnp.tile(A, [2]),
    "broadcast_to shape": lambda: jnp.broadcast_to(A, [2, 2]),
    "expand_dims axes": lambda: jnp.expand_dims(A, (0, 1)),
    "moveaxis axes": lambda: jnp.moveaxis(M, [0, 1], [1, 0]),
    "roll shifts": lambda: jnp.roll(M, (1, 1), (0, 1)),
    "sum axes": lambda: jnp.sum(M, (0, 1)),
    "split points": lambda: jnp.split(jnp.ones(4), [1, 2]),
    "unravel_index shape": lambda: jnp.unravel_index(3, (2, 2)),
    "one_hot labels": lambda: jax.nn.one_hot([0, 1], 3),
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_sequence_taking_use_works(name):
    ALLOWED[name]()


def test_allowed_functions_are_not_in_the_table():
    for name in ("array", "asarray", "stack", "concatenate", "vstack", "hstack", "dstack", "column_stack", "block",
                 "select", "choose", "lexsort", "zeros", "ones", "full", "einsum"):
        assert f"jax.numpy.{name}" not in ARRAY_ARGUMENTS
    assert "jax.nn.one_hot" not in ARRAY_ARGUMENTS
