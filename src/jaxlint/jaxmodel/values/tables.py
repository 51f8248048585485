"""What JAX's API says about values, as tables: static attributes and calls, array modules, boolean
functions, transforms and what their wrappers return."""
from __future__ import annotations

import libcst as cst

from ...catalogue.frameworks import load_frameworks

#: Attributes that are static even on a tracer.
STATIC_ATTRIBUTES = frozenset({
    "shape", "ndim", "dtype", "size", "sharding", "aval", "weak_type", "itemsize", "nbytes", "named_shape",
    "__class__", "__name__", "__qualname__", "__module__",
})
#: Attributes of an array that are arrays again.
ARRAY_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "at"})
#: Calls whose result is static whatever they are given.
#: Functions that only inspect dtypes: their result is static, and naming float64 there requests nothing.
DTYPE_QUERIES = frozenset({
    "jax.numpy.dtype", "jax.numpy.finfo", "jax.numpy.iinfo", "jax.numpy.issubdtype", "jax.numpy.promote_types",
    "jax.numpy.result_type", "jax.numpy.can_cast", "jax.numpy.isdtype", "jax.lax.dtype",
})
STATIC_CALLS = DTYPE_QUERIES | frozenset({
    "builtins.len", "builtins.isinstance", "builtins.issubclass", "builtins.callable", "builtins.type",
    "builtins.id", "builtins.hasattr", "builtins.repr", "builtins.str",
    "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.isscalar",
    "numpy.shape", "numpy.ndim", "numpy.size", "numpy.result_type", "numpy.dtype", "numpy.issubdtype",
    "jax.tree.structure", "jax.tree_util.tree_structure", "jax.eval_shape", "jax.typeof",
    "jax.core.get_aval", "jax.dtypes.issubdtype", "jax.dtypes.result_type", "jax.numpy.iscomplexobj",
    "jax.lax.axis_size", "jax.lax.broadcast_shapes", "jax.numpy.broadcast_shapes",
    "jax.device_count", "jax.local_device_count",
    "jax.process_count", "jax.process_index", "jax.devices", "jax.local_devices",
})
#: Conversions: their result is a concrete Python value (when they do not fail; JAX203 reports them).
CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool", "builtins.complex"})
#: Modules whose functions return JAX arrays.
ARRAY_MODULES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.", "jax.image.")
#: Functions of those modules that return booleans.
BOOL_FUNCTIONS = frozenset({
    "jax.numpy.isnan", "jax.numpy.isinf", "jax.numpy.isfinite", "jax.numpy.logical_and",
    "jax.numpy.logical_or", "jax.numpy.logical_not", "jax.numpy.logical_xor", "jax.numpy.greater",
    "jax.numpy.less", "jax.numpy.equal", "jax.numpy.not_equal", "jax.numpy.greater_equal",
    "jax.numpy.less_equal", "jax.numpy.isclose", "jax.numpy.isin", "jax.numpy.signbit",
})
#: lax control flow returns the pytree its bodies return, not one array.
LAX_CONTROL_FLOW = frozenset(f"jax.lax.{name}" for name in (
    "scan", "fori_loop", "while_loop", "cond", "switch", "map", "associative_scan", "custom_root",
    "custom_linear_solve", "platform_dependent"))
#: lax comparisons: boolean arrays.
LAX_COMPARISONS = frozenset(f"jax.lax.{name}" for name in ("eq", "ne", "lt", "le", "gt", "ge", "is_finite"))
#: Methods on a traced array whose result is a concrete Python value (JAX203 reports them).
CONCRETIZING_METHODS = frozenset({"item", "tolist", "__index__", "__bool__", "__float__", "__int__"})
TREE_FUNCTIONS = ("jax.tree.", "jax.tree_util.")
#: `leaves, treedef = jax.tree.flatten(tree)`: the leaves are the tree's, the structure is static.
TREE_FLATTENS = frozenset({"jax.tree.flatten", "jax.tree_util.tree_flatten", "jax.tree.flatten_with_path",
                           "jax.tree_util.tree_flatten_with_path"})
#: JAX's tracer class: `isinstance(x, Tracer)` is False exactly where `x` holds a concrete value.
TRACER_CLASSES = frozenset({"jax.core.Tracer", "jax._src.core.Tracer"})
#: Constructors of mutable references, which do support in-place assignment.
REFERENCE_CALLS = frozenset({"jax.new_ref", "jax.ref.new_ref", "jax.experimental.mutable_array"})

#: Bitwise operators, which keep boolean arrays boolean (`mask & other`, `~mask`).
BITWISE = (cst.BitAnd, cst.BitOr, cst.BitXor)

#: Lax collectives: of a Python constant they give a Python constant (`psum(1, axis)` is the axis size).
COLLECTIVES = frozenset({"jax.lax.psum", "jax.lax.pmean", "jax.lax.pmax", "jax.lax.pmin"})
#: Transforms whose wrapper, called, returns arrays: name -> what the call returns
#: ("grad": the gradients, a pytree like the input; "value_and_grad": (value, gradients);
#: "outputs": the wrapped function's outputs, a pytree of arrays), from the framework table.
TRANSFORM_WRAPPERS = {t.name: t.returns for t in load_frameworks().transforms.values() if t.returns}
#: Transforms applied and called at once: name -> the shape of what they return.
DIRECT_TRANSFORMS = {"jax.vjp": "vjp", "jax.jvp": "pair", "jax.linearize": "linearize"}
#: Transforms under which attributes of a traced argument may be Python values: those that trace
#: array leaves only (equinox's filtered transforms), and flax.nnx's, whose modules keep their
#: non-Variable attributes static (the framework table's [nnx]).
STATIC_LEAF_TRANSFORMS = tuple(sorted(load_frameworks().names(leaves="arrays"))) + ("flax.nnx.",)
#: Tuples longer than this are not followed element by element.
MAX_ITEMS = 8
#: Attributes a list, tuple or dict does not have: reading one shows a parameter is an array.
ARRAY_EVIDENCE_ATTRIBUTES = frozenset({
    "shape", "ndim", "dtype", "at", "astype", "reshape", "T", "ravel", "flatten", "squeeze", "transpose",
    "block_until_ready",
})
#: Methods a Python number, string, callable or container does not have: only an array (JAX's or
#: NumPy's) is read through one of these or the attributes above.
ARRAY_ONLY_ATTRIBUTES = ARRAY_EVIDENCE_ATTRIBUTES | {
    "max", "min", "sum", "mean", "std", "var", "prod", "argmax", "argmin", "cumsum", "clip", "item", "tolist"}
#: The methods of an array's `.at[...]` indexer that return an updated copy (`get` reads).
AT_UPDATES = frozenset({"set", "add", "subtract", "multiply", "mul", "divide", "power", "min", "max", "apply"})
