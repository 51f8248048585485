"""JAX403: a Python list or tuple passed where a `jax.numpy`/`jax.nn`/`jax.scipy` function needs an array."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.name_origins import NameOrigins
from ..rulebase.rule import Rule


def _table(prefix: str, positions: tuple[int, ...], names: str) -> dict[str, tuple[int, ...]]:
    return {f"{prefix}{name}": positions for name in names.split()}


#: Function -> the positional arguments that must be arrays (or scalars): each raises `TypeError`
#: for a list or tuple there in JAX 0.10.2 (tests/test_non_array_functions.py calls every one).
#: Functions built to take sequences (`array`, `asarray`, `stack`, `concatenate`, `block`, the
#: `*stack` family, `select`, `choose`, `lexsort`, `einsum`) and shape, axis, reps and pad-width
#: arguments are not in it.
ARRAY_ARGUMENTS: dict[str, tuple[int, ...]] = {
    **_table("jax.numpy.", (0,), """
        sum prod mean std var median max min amax amin argmax argmin all any cumsum cumprod nansum nanmean
        nanmax nanmin nanstd nanvar nanprod ptp count_nonzero
        abs absolute exp exp2 log log1p log2 log10 expm1 sqrt cbrt square sin cos tan arcsin arccos arctan
        sinh cosh tanh floor ceil round around rint trunc sign negative reciprocal isnan isinf isfinite
        logical_not clip real imag conj conjugate angle nan_to_num deg2rad rad2deg
        sort argsort unique nonzero argwhere ravel squeeze flip fliplr flipud diff diag diagonal trace tril triu
        transpose reshape expand_dims swapaxes moveaxis roll tile pad broadcast_to copy zeros_like ones_like
        empty_like full_like atleast_1d atleast_2d atleast_3d split astype rot90 quantile percentile histogram
    """),
    **_table("jax.numpy.", (0, 1), """
        add subtract multiply divide true_divide power maximum minimum mod remainder floor_divide arctan2 hypot
        equal not_equal less less_equal greater greater_equal logical_and logical_or logical_xor dot matmul
        inner outer vdot tensordot allclose isclose kron cross convolve correlate logaddexp searchsorted isin
        digitize intersect1d union1d setdiff1d take polyval
    """),
    **_table("jax.numpy.", (0, 1, 2), "where interp"),
    **_table("jax.numpy.linalg.", (0,), "norm inv det slogdet eigh eigvalsh eig svd qr cholesky pinv matrix_rank"),
    **_table("jax.numpy.linalg.", (0, 1), "solve"),
    **_table("jax.numpy.fft.", (0,), "fft ifft rfft irfft fft2 ifft2 fftn ifftn fftshift ifftshift"),
    **_table("jax.nn.", (0,), """
        relu relu6 gelu sigmoid silu swish elu celu selu leaky_relu softplus softmax log_softmax log_sigmoid
        logsumexp standardize hard_tanh mish glu
    """),
    **_table("jax.scipy.special.", (0,), "logsumexp expit logit erf erfc erfinv gammaln digamma softmax log_softmax"),
}


class NonArrayToJnp(Rule):
    code = "JAX403"

    def visit_Call(self, node: cst.Call) -> None:
        walk, analysis = self.walk, self.analysis
        callee = walk.qualified_name(node.func)
        positions = ARRAY_ARGUMENTS.get(callee) if callee is not None else None
        if positions is None:
            return
        positional = []
        for arg in node.args:
            if arg.keyword is not None:
                break
            if arg.star:
                return  # `f(*args)`: positions unknown from here
            positional.append(arg.value)
        origins = self.analysis.name_origins
        for index in positions:
            if index >= len(positional):
                break
            value = positional[index]
            what = self._sequence(value, origins)
            if what is None:
                continue
            written = analysis.module.code_for_node(node.func)
            hint = "`jnp.stack(...)` for a list of arrays, `jnp.asarray(...)` otherwise"
            self.report(value, (
                f"{what} passed to `{written}`, which needs an array: JAX does not convert lists and tuples "
                f"implicitly (TypeError: requires ndarray or scalar arguments); wrap it with {hint}"))

    def _sequence(self, value: cst.BaseExpression, origins: NameOrigins) -> str | None:
        walk, analysis = self.walk, self.analysis
        if type(value) is cst.List:
            return "a Python list"
        if type(value) is cst.Tuple:
            return "a Python tuple"
        if type(value) is cst.ListComp:
            return "a list comprehension"
        if type(value) is cst.GeneratorExp:
            return "a generator expression"
        if type(value) is cst.Name and origins.python_sequence(value, walk.scope):
            return f"`{value.value}`, a Python list or tuple,"
        if (type(value) is cst.Attribute and value.attr.value == "shape"
                and (analysis.value(value.value, at=walk).array_or_traced_argument or origins.certain_array(value.value, walk.scope))):
            return f"`{analysis.module.code_for_node(value)}` (a tuple of ints)"
        return None
