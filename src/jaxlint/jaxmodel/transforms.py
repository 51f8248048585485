"""JAX's transforms and the libraries' versions of them: how each traces the function it is given
(its mode), which arguments of a lax call are traced bodies, and how a transform applied to a function
is recognised (a decorator, `jax.jit(f)`, `partial(jax.jit, ...)`, a lax body, a library's own
tracing of a method) with the parameters it traces."""
from __future__ import annotations

from typing import Iterable

import libcst as cst

from ..catalogue.frameworks import MODES as TRACING_MODES, load_frameworks


#: the framework table (catalogue/data/frameworks.toml): every list below is read from it
FRAMEWORKS = load_frameworks()
_TRANSFORMS = FRAMEWORKS.transforms.values()

#: transform -> mode. jit: traced abstractly, runs once per trace and is cached; lax: a lax body
#: (abstract, runs once per loop); vmap/abstract: traced abstractly; grad: evaluated on concrete values.
#: The lax-style calls that take their bodies among other arguments are `LAX_BODIES` instead.
MODES = {t.name: t.mode for t in _TRANSFORMS if t.mode != "call" and not t.body_positions}
#: lax control flow: which positional arguments (or keywords) are traced bodies.
LAX_BODIES = {t.name: (t.body_positions, t.body_keywords) for t in _TRANSFORMS if t.body_positions}
#: the branches among them (no loop: a key handed to one is not drawn from again and again)
LAX_BRANCHES = frozenset(t.name for t in _TRANSFORMS if t.branch)
#: lax loops: their bodies run again and again, every iteration (the branches and the associative scan
#: do not iterate one body).
LAX_LOOPS = frozenset(LAX_BODIES) - LAX_BRANCHES - {"jax.lax.associative_scan"}
#: Transforms whose wrapped function receives the arguments it is called with (`jax.jit(step)(state, key)`).
PASS_THROUGH = frozenset({name for name in MODES if name not in ("jax.make_jaxpr", "jax.eval_shape")})
#: Functions handed to these run on the host when the compiled code runs, not while JAX traces.
HOST_CALLBACKS = FRAMEWORKS.host_callbacks
#: the modes that trace abstractly: all but grad (concrete values) and call (no trace of its own)
ABSTRACT_MODES = TRACING_MODES - {"grad", "call"}
RUNS_ONCE_MODES = frozenset({"jit", "lax"})


#: `jax.tree.map` and its aliases (they call the function they are given once per leaf) -> how many
#: leading parameters of the mapped function are not leaves
TREE_MAPS = FRAMEWORKS.tree_maps
#: haiku's transforms -> how many leading arguments `apply` takes before the function's own
#: (`params, rng`; `params, state, rng`)
HAIKU_TRANSFORMS = FRAMEWORKS.haiku_transforms
#: flax.linen's module classes: `module.apply(variables, *args)` / `module.init(rngs, *args)` call a
#: method of the module (`__call__`, or `method=`) with `*args`
LINEN_MODULE_BASES = FRAMEWORKS.linen_module_bases
#: `apply`, `init`, ... -> how many leading arguments they take before the method's own
LINEN_APPLY_METHODS = FRAMEWORKS.linen_apply_methods
#: the keywords `apply`/`init` keep for themselves: the method never receives them
LINEN_APPLY_KEYWORDS = FRAMEWORKS.linen_apply_keywords
#: Decorators registering a class as a pytree with no leaves: its instances are static
STATIC_PYTREE_REGISTRATIONS = FRAMEWORKS.static_pytree_registrations
#: Decorators and bases that make a class a dataclass pytree: its annotated fields are leaves
PYTREE_DATACLASS_DECORATORS = FRAMEWORKS.pytree_dataclass_decorators
PYTREE_DATACLASS_BASES = FRAMEWORKS.pytree_dataclass_bases
#: A library's dataclass pytrees -> (their leaf fields, their static fields)
PYTREE_CLASS_FIELDS = FRAMEWORKS.pytree_class_fields
#: flax.nnx's base classes whose instances are pytrees: array and Variable attributes are leaves, the
#: others static
NNX_PYTREE_BASES = FRAMEWORKS.nnx_pytree_bases
#: flax.nnx Variable types (and `nnx.data`): attributes holding them are data, traced under jit
NNX_VARIABLES = FRAMEWORKS.nnx_variables
#: the attributes of an nnx Variable that read the array it holds (`param.value`)
NNX_VARIABLE_LEAVES = FRAMEWORKS.nnx_variable_leaves
#: NumPyro's MCMC kernels: `MCMC.run` traces the `sample` method of a subclass (`_apply_library_traces`)
NUMPYRO_KERNELS = FRAMEWORKS.numpyro_kernels
#: Library calls that trace the functions they are given (`NUTS(model)`, `diffrax.ODETerm(field)`)
LIBRARY_TRACES = FRAMEWORKS.library_traces
#: The library traces in which a NumPyro latent sample site gives a tracer
LATENT_SAMPLING = frozenset(name for name, trace in LIBRARY_TRACES.items() if trace.latent_samples)
#: NumPyro's sample statement
NUMPYRO_SAMPLE = frozenset({"numpyro.sample", "numpyro.primitives.sample"})


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
