"""JAX's transforms and the libraries' versions of them: how each traces the function it is given
(its mode), which arguments of a lax call are traced bodies, and how a transform applied to a function
is recognised (a decorator, `jax.jit(f)`, `partial(jax.jit, ...)`, a lax body, a library's own
tracing of a method) with the parameters it traces."""
from __future__ import annotations

from typing import Iterable

import libcst as cst

from .jax_names import JIT_FAMILY


#: transform -> mode. jit: traced abstractly, runs once per trace and is cached; lax: a lax body
#: (abstract, runs once per loop); vmap/abstract: traced abstractly; grad: evaluated on concrete values.
MODES = {
    **{name: "jit" for name in JIT_FAMILY},
    "jax.vmap": "vmap", "equinox.filter_vmap": "vmap", "flax.nnx.vmap": "vmap", "flax.linen.vmap": "vmap",
    "jax.grad": "grad", "jax.value_and_grad": "grad", "jax.jacfwd": "grad", "jax.jacrev": "grad",
    "jax.hessian": "grad", "equinox.filter_grad": "grad", "equinox.filter_value_and_grad": "grad",
    "flax.nnx.grad": "grad", "flax.nnx.value_and_grad": "grad",
    "jax.checkpoint": "abstract", "jax.remat": "abstract", "jax.ad_checkpoint.checkpoint": "abstract",
    "jax.shard_map": "abstract", "jax.experimental.shard_map.shard_map": "abstract",
    "jax.make_jaxpr": "abstract", "jax.eval_shape": "abstract", "flax.nnx.remat": "abstract",
    "flax.linen.remat": "abstract", "flax.linen.checkpoint": "abstract",
    # the libraries' own versions of JAX's transforms, which apply JAX's (checked in their sources)
    "flax.nnx.pmap": "jit", "flax.nnx.scan": "lax", "flax.nnx.eval_shape": "abstract", "flax.nnx.shard_map": "abstract",
    "haiku.vmap": "vmap", "haiku.grad": "grad", "haiku.value_and_grad": "grad", "haiku.remat": "abstract",
    "haiku.eval_shape": "abstract",
    "equinox.filter_jacfwd": "grad", "equinox.filter_jacrev": "grad", "equinox.filter_hessian": "grad",
    "equinox.filter_checkpoint": "abstract", "equinox.filter_eval_shape": "abstract",
    "equinox.filter_make_jaxpr": "abstract",
}
#: lax control flow: which positional arguments (or keywords) are traced bodies.
LAX_BODIES = {
    "jax.lax.scan": ((0,), ("f",)),
    "jax.lax.fori_loop": ((2,), ("body_fun",)),
    "jax.lax.while_loop": ((0, 1), ("cond_fun", "body_fun")),
    "jax.lax.cond": ((1, 2), ("true_fun", "false_fun")),
    "jax.lax.switch": ((1,), ("branches",)),
    "jax.lax.map": ((0,), ("f",)),
    "jax.lax.associative_scan": ((0,), ("fn",)),
    # Haiku's and flax.nnx's versions take the same arguments and run `jax.lax`'s
    "haiku.scan": ((0,), ("f",)),
    "haiku.fori_loop": ((2,), ("body_fun",)),
    "haiku.while_loop": ((0, 1), ("cond_fun", "body_fun")),
    "haiku.cond": ((1, 2), ("true_fun", "false_fun")),
    "haiku.switch": ((1,), ("branches",)),
    "haiku.map": ((0,), ("f",)),
    "flax.nnx.fori_loop": ((2,), ("body_fun",)),
    "flax.nnx.while_loop": ((0, 1), ("cond_fun", "body_fun")),
    "flax.nnx.cond": ((1, 2), ("true_fun", "false_fun")),
    "flax.nnx.switch": ((1,), ("branches",)),
}
#: the branches among them (no loop: a key handed to one is not drawn from again and again)
LAX_BRANCHES = frozenset(name for name in LAX_BODIES if name.endswith((".cond", ".switch")))
#: Functions handed to these run on the host when the compiled code runs, not while JAX traces.
HOST_CALLBACKS = frozenset({
    "jax.debug.callback", "jax.pure_callback", "jax.experimental.io_callback",
    "jax.experimental.host_callback.id_tap", "jax.experimental.host_callback.call",
    "jax.experimental.host_callback.id_print",
})
ABSTRACT_MODES = frozenset({"jit", "lax", "vmap", "abstract"})
RUNS_ONCE_MODES = frozenset({"jit", "lax"})


#: `jax.tree.map` and its aliases (they call the function they are given once per leaf) -> how many
#: leading parameters of the mapped function are not leaves
TREE_MAPS = {
    "jax.tree.map": 0, "jax.tree_util.tree_map": 0, "jax.tree_map": 0,
    "jax.tree.map_with_path": 1, "jax.tree_util.tree_map_with_path": 1,
}
#: haiku's transforms -> how many leading arguments `apply` takes before the function's own
#: (`params, rng`; `params, state, rng`)
HAIKU_TRANSFORMS = {"haiku.transform": 2, "haiku.transform_with_state": 3}
#: Decorators registering a class as a pytree with no leaves: its instances are static
STATIC_PYTREE_REGISTRATIONS = frozenset({"jax.tree_util.register_static"})
#: flax.nnx's base classes whose instances are pytrees: array and Variable attributes are leaves, the
#: others static
NNX_PYTREE_BASES = frozenset({"flax.nnx.Module", "flax.nnx.Pytree", "flax.nnx.Object"})
#: flax.nnx Variable types (and `nnx.data`): attributes holding them are data, traced under jit
NNX_VARIABLES = frozenset(f"flax.nnx.{name}" for name in (
    "Variable", "Param", "BatchStat", "Cache", "Intermediate", "Perturbation", "RngKey", "RngCount",
    "OptState", "OptArray", "OptVariable", "data"))
#: NumPyro's MCMC kernels: `MCMC.run` traces the `sample` method of a subclass (`_apply_library_traces`)
NUMPYRO_KERNELS = frozenset({
    "numpyro.infer.mcmc.MCMCKernel", *(f"numpyro.infer.{name}" for name in (
        "HMC", "NUTS", "SA", "BarkerMH", "AIES", "ESS", "HMCGibbs", "DiscreteHMCGibbs", "HMCECS", "MixedHMC")),
    "numpyro.infer.hmc.HMC", "numpyro.infer.hmc.NUTS", "numpyro.infer.sa.SA", "numpyro.infer.barker.BarkerMH",
    "numpyro.infer.ensemble.EnsembleSampler", "numpyro.infer.ensemble.AIES", "numpyro.infer.ensemble.ESS",
    "numpyro.infer.hmc_gibbs.HMCGibbs", "numpyro.infer.hmc_gibbs.DiscreteHMCGibbs", "numpyro.infer.hmc_gibbs.HMCECS",
    "numpyro.infer.mixed_hmc.MixedHMC",
})


def short_name(transform: str) -> str:
    """How a message writes a transform's qualified name: as users import it (`jax.jit` stays,
    `functools.partial` is `partial`, `equinox.filter_jit` is `eqx.filter_jit`)."""
    if transform.startswith("functools."):
        return transform.split(".", 1)[1]
    if transform.startswith("equinox."):
        return "eqx." + transform.split(".", 1)[1]
    return transform


def literal_keywords(args: Iterable[cst.Arg]) -> tuple[tuple[str, bool], ...]:
    """The keywords of a call bound to Python literals (`check=False`, `mode="fast"`), with their truthiness."""
    found = []
    for arg in args:
        truth = literal_truth(arg.value) if arg.keyword is not None else None
        if truth is not None:
            found.append((arg.keyword.value, truth))
    return tuple(found)


def literal_truth(node: cst.BaseExpression) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return node.value == "True"
    if isinstance(node, cst.Integer):
        return int(node.value, 0) != 0
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return bool(node.evaluated_value)
    return None


def is_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def int_literals(node: cst.BaseExpression | None) -> list[int]:
    if node is None:
        return []
    if isinstance(node, cst.Integer):
        return [int(node.value)]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return [-int(node.expression.value)]
    if isinstance(node, (cst.Tuple, cst.List)):
        return [n for e in node.elements for n in int_literals(e.value)]
    return []


def string_literals(node: cst.BaseExpression | None) -> list[str]:
    if node is None:
        return []
    if isinstance(node, cst.SimpleString):
        return [node.evaluated_value] if isinstance(node.evaluated_value, str) else []
    if isinstance(node, (cst.Tuple, cst.List)):
        return [s for e in node.elements for s in string_literals(e.value)]
    return []
