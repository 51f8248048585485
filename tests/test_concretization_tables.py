"""JAX203's and JAX204's tables, checked against JAX: every listed call fails on a tracer as claimed."""
import math

import pytest

from jaxlint.rules.traced_concretization import (
    MATH_FUNCTIONS, NUMPY_CONVERTING, NUMPY_DISPATCHING, NUMPY_UFUNCS, SHAPE_ARGUMENTS,
)
from jaxlint.rules.value_dependent_shape import SIZED

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
np = pytest.importorskip("numpy")
jnp = jax.numpy

INTEGER_UFUNCS = {"invert", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                  "right_shift", "gcd", "lcm"}
M = np.eye(3) + 1.0
V = np.arange(1.0, 4.0)
#: how each non-ufunc NumPy function is called with a traced array `t` (a 3x3 matrix)
CALLS = {
    "asarray": lambda t: np.asarray(t), "array": lambda t: np.array(t), "asanyarray": lambda t: np.asanyarray(t),
    "ascontiguousarray": lambda t: np.ascontiguousarray(t), "copy": lambda t: np.copy(t),
    "where": lambda t: np.where(t > 0, t, 0.0), "clip": lambda t: np.clip(t, 0.0, 1.0), "dot": lambda t: np.dot(t, M),
    "vdot": lambda t: np.vdot(t, M), "inner": lambda t: np.inner(t, M), "outer": lambda t: np.outer(t, M),
    "einsum": lambda t: np.einsum("ij->i", t), "tensordot": lambda t: np.tensordot(t, M, 1),
    "kron": lambda t: np.kron(t, M), "cross": lambda t: np.cross(t, M),
    "concatenate": lambda t: np.concatenate([t, M]), "stack": lambda t: np.stack([t, M]),
    "hstack": lambda t: np.hstack([t, M]), "vstack": lambda t: np.vstack([t, M]), "dstack": lambda t: np.dstack([t, M]),
    "column_stack": lambda t: np.column_stack([t, M]), "append": lambda t: np.append(t, 1.0),
    "insert": lambda t: np.insert(t, 0, 1.0), "delete": lambda t: np.delete(t, 0), "pad": lambda t: np.pad(t, 1),
    "tile": lambda t: np.tile(t, 2), "broadcast_to": lambda t: np.broadcast_to(t, (2, 3, 3)),
    "expand_dims": lambda t: np.expand_dims(t, 0), "atleast_1d": lambda t: np.atleast_1d(t),
    "atleast_2d": lambda t: np.atleast_2d(t), "atleast_3d": lambda t: np.atleast_3d(t), "ravel": lambda t: np.ravel(t),
    "sort": lambda t: np.sort(t), "unique": lambda t: np.unique(t), "argwhere": lambda t: np.argwhere(t),
    "nonzero": lambda t: np.nonzero(t), "flatnonzero": lambda t: np.flatnonzero(t),
    "count_nonzero": lambda t: np.count_nonzero(t), "diff": lambda t: np.diff(t), "trace": lambda t: np.trace(t),
    "diag": lambda t: np.diag(t), "triu": lambda t: np.triu(t), "tril": lambda t: np.tril(t),
    "zeros_like": lambda t: np.zeros_like(t), "ones_like": lambda t: np.ones_like(t),
    "full_like": lambda t: np.full_like(t, 1.0), "empty_like": lambda t: np.empty_like(t),
    "median": lambda t: np.median(t), "percentile": lambda t: np.percentile(t, 50), "quantile": lambda t: np.quantile(t, 0.5),
    "average": lambda t: np.average(t), "nanmean": lambda t: np.nanmean(t), "nansum": lambda t: np.nansum(t),
    "nanmax": lambda t: np.nanmax(t), "nanmin": lambda t: np.nanmin(t), "nanstd": lambda t: np.nanstd(t),
    "nanvar": lambda t: np.nanvar(t), "allclose": lambda t: np.allclose(t, M), "isclose": lambda t: np.isclose(t, M),
    "histogram": lambda t: np.histogram(t), "interp": lambda t: np.interp(t, V, V),
    "polyval": lambda t: np.polyval(V, t), "nan_to_num": lambda t: np.nan_to_num(t), "cov": lambda t: np.cov(t),
    "corrcoef": lambda t: np.corrcoef(t), "ptp": lambda t: np.ptp(t), "convolve": lambda t: np.convolve(t[0], V),
    "correlate": lambda t: np.correlate(t[0], V), "roll": lambda t: np.roll(t, 1), "isin": lambda t: np.isin(t, V),
    "digitize": lambda t: np.digitize(t, V), "meshgrid": lambda t: np.meshgrid(t[0], V),
    **{n: (lambda t, n=n: getattr(np, n)(t[0, 0])) for n in (
        "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32", "bool_",
        "complex64", "complex128")},
    **{f"linalg.{n}": (lambda t, n=n: getattr(np.linalg, n)(t)) for n in (
        "norm", "inv", "det", "eig", "eigh", "eigvals", "eigvalsh", "svd", "qr", "cholesky", "pinv",
        "matrix_rank", "slogdet", "cond")},
    "linalg.solve": lambda t: np.linalg.solve(t, V), "linalg.lstsq": lambda t: np.linalg.lstsq(t, V),
    "linalg.matrix_power": lambda t: np.linalg.matrix_power(t, 2),
    **{f"fft.{n}": (lambda t, n=n: getattr(np.fft, n)(t)) for n in ("fft", "ifft", "rfft", "irfft", "fft2", "fftn")},
}


def raised(function, *args):
    try:
        function(*args)
    except Exception as exc:  # noqa: BLE001 - the class is the evidence
        return {cls.__name__ for cls in type(exc).__mro__}
    return set()


@pytest.mark.parametrize("name", sorted(NUMPY_UFUNCS))
def test_numpy_ufunc_converts_a_tracer(name):
    ufunc = getattr(np, name)
    assert isinstance(ufunc, np.ufunc)
    x = jnp.arange(1, 4) if name in INTEGER_UFUNCS else jnp.arange(1.0, 4.0)
    assert "TracerArrayConversionError" in raised(jax.jit(lambda t: ufunc(*[t] * ufunc.nin)), x)


def test_every_numpy_function_in_the_table_is_checked():
    assert set(CALLS) == set(NUMPY_CONVERTING)


@pytest.mark.parametrize("name", sorted(NUMPY_CONVERTING))
def test_numpy_function_converts_a_tracer(name):
    assert "TracerArrayConversionError" in raised(jax.jit(CALLS[name]), jnp.asarray(M))


@pytest.mark.parametrize("name", sorted(NUMPY_DISPATCHING))
def test_dispatching_numpy_function_works_on_a_tracer_but_not_on_a_list_of_them(name):
    function = getattr(np, name)
    assert raised(jax.jit(lambda t: function(t)), jnp.asarray(V)) == set()
    assert "TracerArrayConversionError" in raised(jax.jit(lambda t: function([t[0], t[1]])), jnp.asarray(V))


TWO_ARGUMENTS = {"atan2", "pow", "isclose", "copysign", "hypot", "fmod", "ldexp"}


@pytest.mark.parametrize("name", sorted(MATH_FUNCTIONS))
@pytest.mark.parametrize("transform", ["jit", "grad"])
def test_math_function_concretizes_under_jit_and_grad(name, transform):
    function = getattr(math, name)
    if name == "fsum":
        call = lambda s: s * function([s, s])
    elif name == "ldexp":
        call = lambda s: s * function(s, 2)
    elif name in TWO_ARGUMENTS:
        call = lambda s: s * function(s, s)
    else:
        call = lambda s: s * function(s)
    wrapped = jax.jit(call) if transform == "jit" else jax.grad(call)
    assert "ConcretizationTypeError" in raised(wrapped, jnp.float32(0.5))


KEY = jax.random.key(0)
SHAPE_CALLS = {
    "jax.numpy.zeros": lambda n: jnp.zeros(n), "jax.numpy.ones": lambda n: jnp.ones((n, 2)),
    "jax.numpy.empty": lambda n: jnp.empty(n), "jax.numpy.full": lambda n: jnp.full(n, 1.0),
    "numpy.zeros": lambda n: np.zeros(n), "numpy.ones": lambda n: np.ones(n), "numpy.empty": lambda n: np.empty(n),
    "numpy.full": lambda n: np.full(n, 1.0),
    "jax.numpy.eye": lambda n: jnp.eye(n), "jax.numpy.identity": lambda n: jnp.identity(n),
    "jax.numpy.tri": lambda n: jnp.tri(n), "jax.numpy.arange": lambda n: jnp.arange(n),
    "jax.numpy.linspace": lambda n: jnp.linspace(0.0, 1.0, n), "jax.numpy.logspace": lambda n: jnp.logspace(0.0, 1.0, n),
    "jax.numpy.geomspace": lambda n: jnp.geomspace(1.0, 2.0, n),
    "jax.numpy.reshape": lambda n: jnp.reshape(jnp.ones(4), (n, -1)),
    "jax.numpy.broadcast_to": lambda n: jnp.broadcast_to(jnp.ones(2), (n, 2)),
    "jax.numpy.tile": lambda n: jnp.tile(jnp.ones(2), n),
    "jax.numpy.zeros_like": lambda n: jnp.zeros_like(jnp.ones(2), shape=(n,)),
    "jax.numpy.ones_like": lambda n: jnp.ones_like(jnp.ones(2), shape=(n,)),
    "jax.numpy.empty_like": lambda n: jnp.empty_like(jnp.ones(2), shape=(n,)),
    "jax.numpy.full_like": lambda n: jnp.full_like(jnp.ones(2), 1.0, shape=(n,)),
    **{f"jax.random.{name}": (lambda n, name=name: getattr(jax.random, name)(KEY, (n,))) for name in (
        "normal", "uniform", "gumbel", "exponential", "laplace", "cauchy", "logistic", "rademacher", "bits")},
    "jax.random.randint": lambda n: jax.random.randint(KEY, (n,), 0, 3),
    "jax.random.bernoulli": lambda n: jax.random.bernoulli(KEY, 0.5, (n,)),
    "jax.random.truncated_normal": lambda n: jax.random.truncated_normal(KEY, -1.0, 1.0, (n,)),
    "jax.random.categorical": lambda n: jax.random.categorical(KEY, jnp.zeros(3), -1, (n,)),
    "jax.random.split": lambda n: jax.random.split(KEY, n),
    "jax.lax.full": lambda n: jax.lax.full((n, 2), 0.0),
    "jax.lax.full_like": lambda n: jax.lax.full_like(jnp.ones(2), 0.0, shape=(n,)),
    "jax.lax.broadcast": lambda n: jax.lax.broadcast(jnp.ones(2), (n,)),
    "jax.lax.broadcast_in_dim": lambda n: jax.lax.broadcast_in_dim(jnp.ones(2), (n, 2), (1,)),
    "jax.lax.iota": lambda n: jax.lax.iota(jnp.int32, n),
    "jax.lax.broadcasted_iota": lambda n: jax.lax.broadcasted_iota(jnp.int32, (n, 2), 0),
    "jax.lax.reshape": lambda n: jax.lax.reshape(jnp.ones(4), (n, 2)),
    "jax.lax.dynamic_slice": lambda n: jax.lax.dynamic_slice(jnp.ones(4), (0,), (n,)),
    "jax.lax.dynamic_slice_in_dim": lambda n: jax.lax.dynamic_slice_in_dim(jnp.ones(4), 0, n),
    "jax.lax.slice": lambda n: jax.lax.slice(jnp.ones(4), (0,), (n,)),
    "jax.lax.slice_in_dim": lambda n: jax.lax.slice_in_dim(jnp.ones(4), 0, n),
    "jax.lax.pad": lambda n: jax.lax.pad(jnp.ones(2), 0.0, [(n, 0, 0)]),
    "jax.lax.top_k": lambda n: jax.lax.top_k(jnp.ones(4), n),
}


def test_every_shape_function_is_checked():
    assert set(SHAPE_CALLS) == set(SHAPE_ARGUMENTS)


@pytest.mark.parametrize("name", sorted(SHAPE_ARGUMENTS))
def test_traced_shape_argument_fails_under_jit(name):
    assert "TypeError" in raised(jax.jit(SHAPE_CALLS[name]), 2)  # ConcretizationTypeError is a TypeError
    assert raised(SHAPE_CALLS[name], 2) == set()  # the same call with a concrete size works


@pytest.mark.parametrize("name", sorted(SIZED))
def test_value_sized_function_needs_size_under_jit(name):
    function = getattr(jnp, name.split(".")[-1])
    args = (lambda t: (t, t)) if name.endswith("1d") else (lambda t: (t,))
    assert "ConcretizationTypeError" in raised(jax.jit(lambda t: function(*args(t))), jnp.arange(4))
    assert raised(jax.jit(lambda t: function(*args(t), size=4)), jnp.arange(4)) == set()
