"""The framework table (src/jaxlint/catalogue/data/frameworks.toml) says what JAX and the libraries on
it do with the functions they are given; these tests run the libraries and check each entry.

Each transform is applied to a probe body `body(x, n)` (x an array, n the Python int 3) and called
twice with the same arguments. What the body saw decides:

* mode: `call` — x is no tracer; `grad` — a tracer with a concrete value (Python control flow on it
  works); the others — an abstract tracer; `jit` besides — the second call does not run the body.
* leaves: `arrays` — n arrives as the Python int it was; `all` — n is traced, or the transform
  rejects an int leaf (differentiating or mapping one).

The libraries are in the test extra; where one is missing its entries are skipped.
"""
from __future__ import annotations

import dataclasses
import warnings

import pytest

from jaxlint.catalogue.deprecations import load_table
from jaxlint.catalogue.frameworks import TABLE, TableError, load_frameworks

from installed import resolve

pytestmark = pytest.mark.jax

FRAMEWORKS = load_frameworks()
LIBRARY_OF = {"equinox": "equinox", "flax": "flax", "haiku": "haiku", "numpyro": "numpyro", "jax": "jax"}


def library(name: str):
    return pytest.importorskip(LIBRARY_OF[name.split(".")[0]])


@dataclasses.dataclass
class Seen:
    traced: bool
    concrete: bool
    int_stays_int: bool


def observe(apply):
    """Runs `apply(body)` (which returns a function of no arguments) twice; what the body saw."""
    import jax.numpy as jnp
    from jax.core import Tracer

    seen: list[Seen] = []
    recording = False

    def body(x, n):
        if not recording:  # setting up (a Haiku or Flax init) runs the body too
            return x
        try:
            bool(jnp.sum(x) > 0)
            concrete = True
        except Exception:  # a tracer without a value: JAX refuses the conversion
            concrete = False
        seen.append(Seen(isinstance(x, Tracer), concrete, type(n) is int))
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call = apply(body)
            recording = True
            call()
            call()
        except (TypeError, ValueError, AttributeError) as error:
            rejected = ("real- or complex-valued", "real-valued inputs", "rank should be at least 1",
                        "no leading axis", "'int' object has no attribute 'shape'")
            if seen or not any(text in str(error) for text in rejected):
                raise
            return None, 0  # an int leaf rejected: it would have been traced
    return seen[0], len(seen)


# -- how each premise applies its transforms to the probe body -------------------------------------
def _jax():
    import jax
    import jax.numpy as jnp
    return jax, jnp


def _plain(transform):
    """`transform(body)(x, 3)`."""
    def apply(body):
        _, jnp = _jax()
        wrapped = transform(body)
        return lambda: wrapped(jnp.ones(3), 3)
    return apply


def _mapped(transform):
    """`transform(body)(x[None], 3)`: the array gets the mapped (device) axis."""
    def apply(body):
        _, jnp = _jax()
        wrapped = transform(body)
        return lambda: wrapped(jnp.ones((1, 3)), 3)
    return apply


def _differentiated(transform, total=True):
    """`transform(f)((x, 3))`: the int is a leaf of the differentiated argument."""
    def apply(body):
        _, jnp = _jax()
        wrapped = transform(lambda pair: body(*pair).sum() if total else body(*pair))
        return lambda: wrapped((jnp.ones(3), 3))
    return apply


def _given_function(transform):
    """`transform(body, x, 3)`: the function and its arguments in one call (eval_shape)."""
    def apply(body):
        _, jnp = _jax()
        return lambda: transform(body, jnp.ones(3), 3)
    return apply


def _staged(transform):
    """`jax.jit(transform(body))`: a transform that traces only where it is staged out."""
    def apply(body):
        jax, jnp = _jax()
        if getattr(transform, "__name__", "") == "shard_map":
            wrapped = transform(body, mesh=jax.make_mesh((1,), ("i",)), in_specs=(jax.P(), jax.P()),
                                out_specs=jax.P())
            jitted = jax.jit(wrapped, static_argnums=1)
            return lambda: jitted(jnp.ones(3), 3)
        # associative_scan: the body combines two slices of the elements, here (x, 3)
        jitted = jax.jit(lambda x: transform(lambda a, b: (body(*a), a[1]), (x, 3)))
        return lambda: jitted(jnp.ones(3))
    return apply


def _lax_body(name):
    """The body called by a lax-style loop or branch, with the pair (x, 3) as its operand or carry."""
    def apply(body):
        _, jnp = _jax()
        transform = resolve(name)
        pair = (jnp.ones(3), 3)
        short = name.rsplit(".", 1)[1]
        if short == "scan":
            return lambda: transform(lambda carry, _: (carry, body(*carry)), pair, None, length=4)
        if short == "fori_loop":
            return lambda: transform(0, 4, lambda i, carry: (body(*carry), carry[1]), pair)
        if short == "while_loop":
            return lambda: transform(lambda carry: False, lambda carry: (body(*carry), carry[1]), pair)
        if short == "cond":
            return lambda: transform(jnp.array(True), lambda c: body(*c), lambda c: c[0], pair)
        if short == "switch":
            return lambda: transform(jnp.array(0), [lambda c: body(*c), lambda c: c[0]], pair)
        if short == "map":
            return lambda: transform(lambda c: body(*c), (jnp.ones((2, 3)), 3))
        raise AssertionError(f"no probe for {name}")
    return apply


def _nnx_scan(name):
    def apply(body):
        _, jnp = _jax()
        scanned = resolve(name)(lambda carry, _: (carry, body(*carry)), length=4)
        return lambda: scanned((jnp.ones(3), 3), None)
    return apply


def _inside_haiku(apply):
    """Runs a probe under `hk.transform`, where Haiku's own transforms must be called."""
    def run(body):
        import haiku as hk
        jax, _ = _jax()
        transformed = hk.without_apply_rng(hk.transform(lambda: apply(body)()))
        return lambda: transformed.apply({})
    return run


def _haiku_body(name):
    transform = resolve(name)
    short = name.rsplit(".", 1)[1]
    if short == "vmap":
        return _inside_haiku(_mapped(lambda f: transform(f, split_rng=False)))
    if short in ("grad", "value_and_grad"):
        return _inside_haiku(_differentiated(transform))
    if short == "remat":
        return _inside_haiku(_plain(transform))
    if short == "eval_shape":
        return _inside_haiku(_given_function(transform))
    return _inside_haiku(_lax_body(name))


def _linen(name):
    """A Linen lifted transform applied to a module whose `__call__` is the probe body."""
    def apply(body):
        import flax.linen as nn
        jax, jnp = _jax()
        transform = resolve(name)

        class Probe(nn.Module):
            def __call__(self, x, n):
                return body(x, n)

        if name.endswith("vmap"):
            lifted = transform(Probe, variable_axes={}, split_rngs={})
            x = jnp.ones((1, 3))
        else:
            lifted = transform(Probe)
            x = jnp.ones(3)
        module = lifted()
        return lambda: module.apply({}, x, 3)
    return apply


def _custom_derivative(name):
    def apply(body):
        _, jnp = _jax()
        wrapped = resolve(name)(body)
        if name.endswith("jvp"):
            wrapped.defjvp(lambda primals, tangents: (wrapped(*primals), tangents[0]))
        else:
            wrapped.defvjp(lambda x, n: (wrapped(x, n), None), lambda residual, g: (g, None))
        return lambda: wrapped(jnp.ones(3), 3)
    return apply


def _appliers():
    return {
        "jit": lambda name: _plain(resolve(name)),
        "pmap": lambda name: _mapped(lambda f: resolve(name)(f, in_axes=(0, None))),
        "equinox_filter_jit": lambda name: _plain(resolve(name)),
        "equinox_filter_pmap": lambda name: _mapped(resolve(name)),
        "nnx_jit": lambda name: _plain(resolve(name)),
        "nnx_pmap": lambda name: _mapped(lambda f: resolve(name)(f, in_axes=(0, None))),
        "linen_jit": _linen, "linen_vmap": _linen, "linen_remat": _linen,
        "vmap": lambda name: _mapped(resolve(name)),
        "equinox_filter_vmap": lambda name: _mapped(resolve(name)),
        "nnx_vmap": lambda name: _mapped(resolve(name)),
        "haiku_vmap": _haiku_body, "haiku_grad": _haiku_body, "haiku_remat": _haiku_body,
        "haiku_eval_shape": _haiku_body, "haiku_control_flow": _haiku_body,
        "grad": lambda name: _differentiated(resolve(name)),
        "value_and_grad": lambda name: _differentiated(resolve(name)),
        "jacobians": lambda name: _differentiated(resolve(name), total=not name.endswith(("jacfwd", "jacrev"))),
        "equinox_filter_grad": lambda name: _differentiated(resolve(name)),
        "equinox_filter_jacobians": lambda name: _differentiated(resolve(name), total=name.endswith("hessian")),
        "nnx_grad": lambda name: _differentiated(resolve(name)),
        "checkpoint": lambda name: _plain(resolve(name)),
        "equinox_filter_checkpoint": lambda name: _plain(resolve(name)),
        "nnx_remat": lambda name: _plain(resolve(name)),
        "shard_map": lambda name: _staged(resolve(name)),
        "nnx_shard_map": lambda name: _staged(resolve(name)),
        "make_jaxpr": lambda name: _plain(resolve(name)),
        "equinox_filter_make_jaxpr": lambda name: _plain(resolve(name)),
        "eval_shape": lambda name: _given_function(resolve(name)),
        "equinox_filter_eval_shape": lambda name: _given_function(resolve(name)),
        "nnx_eval_shape": lambda name: _given_function(resolve(name)),
        "nnx_scan": _nnx_scan,
        "nnx_control_flow": _lax_body,
        "custom_derivatives": _custom_derivative,
        **{f"lax_{short}": _lax_body for short in ("scan", "fori_loop", "while_loop", "cond", "switch", "map")},
        "lax_associative_scan": lambda name: _staged(resolve(name)),
    }


APPLIERS = _appliers()
REMOVED = {name for name, entry in load_table().by_symbol.items() if entry.removed_in}


def _removed(name: str) -> bool:
    return any(name == gone or name.startswith(gone + ".") for gone in REMOVED)


# -- the table itself ------------------------------------------------------------------------------
def test_every_transform_premise_has_a_probe():
    missing = {t.premise for t in FRAMEWORKS.transforms.values()} - set(APPLIERS)
    assert not missing, f"premises without a probe: {sorted(missing)}"
    unused = set(APPLIERS) - {t.premise for t in FRAMEWORKS.transforms.values()}
    assert not unused, f"probes no entry names: {sorted(unused)}"


@pytest.mark.parametrize("written, instead, error", [
    ('mode = "jit"', 'mode = "jitt"', "mode 'jitt'"),
    ('premise = "vmap"', "", "jax.vmap: no premise"),
    ('leaves = "arrays"', 'leaves = "array"', "leaves 'array'"),
])
def test_a_table_with_a_mistake_is_refused(tmp_path, written, instead, error):
    broken = tmp_path / "frameworks.toml"
    broken.write_text(TABLE.read_text(encoding="utf-8").replace(written, instead, 1), encoding="utf-8")
    with pytest.raises(TableError, match=error):
        load_frameworks(broken)


def _every_name():
    t = FRAMEWORKS
    return sorted({*t.transforms, *t.host_callbacks, *t.tree_maps, *t.haiku_transforms,
                   *t.static_pytree_registrations, *t.nnx_pytree_bases, *t.nnx_variables, *t.numpyro_kernels,
                   *t.managed_rng_functions})


@pytest.mark.parametrize("name", _every_name())
def test_every_name_exists_or_is_recorded_as_removed(name):
    library(name)
    try:
        resolve(name)
    except AttributeError:
        assert _removed(name), f"{name} is not in the installed library, and the deprecation table does not record its removal"


# -- each transform against its library ------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(FRAMEWORKS.transforms))
def test_the_transform_traces_as_the_table_says(name):
    library(name)
    entry = FRAMEWORKS.transforms[name]
    try:
        resolve(name)
    except AttributeError:
        pytest.skip(f"{name} is gone from the installed version (recorded as removed)")
    seen, runs = observe(APPLIERS[entry.premise](name))
    if seen is None:
        assert entry.leaves == "all", f"{name} rejects an int leaf: it would trace it"
        return
    assert entry.leaves == ("arrays" if seen.int_stays_int else "all"), f"{name}: leaves"
    if entry.mode == "call":
        assert not seen.traced, f"{name} traced its function"
    elif entry.mode == "grad":
        assert seen.traced and seen.concrete, f"{name}: not a tracer with a concrete value"
    else:
        assert seen.traced and not seen.concrete, f"{name}: not traced abstractly"
    if entry.mode == "jit":
        assert runs == 1, f"{name}: the body ran again for the same arguments"


@pytest.mark.parametrize("name", sorted(n for n, t in FRAMEWORKS.transforms.items() if t.broadcasts_keys))
def test_an_unmapped_key_reaches_every_batch_element_unchanged(name):
    library(name)
    jax, jnp = _jax()
    key = jax.random.key(0)
    transform = resolve(name)
    kwargs = {"in_axes": (0, None)}
    draws = transform(lambda x, k: jax.random.normal(k, ()), **kwargs)(jnp.arange(3.0), key)
    assert bool(jnp.all(draws == draws[0])), f"{name}: batch elements drew different numbers"


#: Runs in a process of its own, with four host devices: applies the transform named in argv to a
#: function called inside `jax.jit` and prints how many partitions the outer computation compiles to.
_PARTITIONS_PROBE = """
import os, re, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import jax, jax.numpy as jnp
from installed import resolve
inner = resolve(sys.argv[1])
outer = jax.jit(lambda x: inner(lambda v: jnp.sin(v) * 2)(x) + 1)
text = outer.lower(jnp.ones((4, 3))).compile().as_text()
found = re.search(r"num_partitions=(\\d+)", text)
print(found.group(1) if found else 1)
"""

_SIMPLY_APPLIED = sorted(n for n, t in FRAMEWORKS.transforms.items()
                         if t.mode == "jit" and t.premise in {"jit", "pmap", "equinox_filter_jit", "nnx_jit", "nnx_pmap"})


@pytest.mark.parametrize("name", _SIMPLY_APPLIED)
def test_a_jit_inside_jit_is_inlined_and_a_device_map_still_partitions(name):
    """`partitions`: under an outer jit, a pmap still splits the work across the devices (it lowers to
    a `shard_map`), while a nested jit is inlined into one unpartitioned computation."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    library(name)
    try:
        resolve(name)
    except AttributeError:
        pytest.skip(f"{name} is gone from the installed version (recorded as removed)")
    tests = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", _PARTITIONS_PROBE, name], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    partitions = int(done.stdout.split()[-1])
    assert (partitions > 1) is FRAMEWORKS.transforms[name].partitions, f"{name}: {partitions} partitions"


# -- the sections besides transforms ---------------------------------------------------------------
def test_host_callbacks_run_with_concrete_values():
    jax, jnp = _jax()
    from jax.core import Tracer

    seen = []
    jax.jit(lambda x: jax.debug.callback(lambda v: seen.append(isinstance(v, Tracer)), x))(jnp.ones(2))
    jax.effects_barrier()
    assert seen == [False]


@pytest.mark.parametrize("name", sorted(FRAMEWORKS.tree_maps))
def test_tree_maps_call_the_function_once_per_leaf_after_the_named_leading_parameters(name):
    _jax()
    try:
        tree_map = resolve(name)
    except AttributeError:
        pytest.skip(f"{name} is gone from the installed version (recorded as removed)")
    calls = []
    tree_map(lambda *args: calls.append(len(args)), {"a": 1, "b": (2, 3)})
    assert calls == [1 + FRAMEWORKS.tree_maps[name]] * 3


@pytest.mark.parametrize("name", sorted(FRAMEWORKS.haiku_transforms))
def test_haiku_apply_takes_the_leading_arguments_before_the_functions_own(name):
    hk = pytest.importorskip("haiku")
    jax, jnp = _jax()
    seen = []

    def f(x):
        seen.append(x.shape)
        return hk.get_parameter("w", (), init=jnp.zeros) + x

    transformed = resolve(name)(f)
    initialised = transformed.init(jax.random.key(0), jnp.ones(2))
    # `params`, or `(params, state)` for transform_with_state; then the rng, then f's own arguments
    leading = [*(initialised if isinstance(initialised, tuple) else (initialised,)), jax.random.key(1)]
    assert len(leading) == FRAMEWORKS.haiku_transforms[name]
    transformed.apply(*leading, jnp.ones(5))
    assert seen[-1] == (5,)


def test_linen_apply_runs_the_method_with_the_arguments_given_after_the_leading_ones():
    nn = pytest.importorskip("flax.linen")
    jax, jnp = _jax()
    from jax.core import Tracer

    table = FRAMEWORKS
    seen = []

    class Probe(nn.Module):
        features: int = 3

        @resolve("flax.linen.compact")
        def __call__(self, x, train: bool = False):
            # the field is the Python value it was given; a flag stays the Python value passed
            seen.append(("__call__", isinstance(x, Tracer), type(train), type(self.features)))
            return nn.Dense(self.features)(x)

        @resolve("flax.linen.nowrap")
        def encode(self, x):
            seen.append(("encode", isinstance(x, Tracer)))
            return x

    for name in table.linen_module_bases:
        assert issubclass(Probe, resolve(name))
    x = jnp.ones((2, 3))
    # `init` and `apply` do not trace on their own: the method sees concrete arrays
    variables = Probe().init(jax.random.key(0), x)
    Probe().apply(variables, x)
    assert seen == [("__call__", False, bool, int)] * 2
    seen.clear()
    # applied inside a jitted step, or jitted itself: the arrays are tracers, the flag and the field not
    jax.jit(lambda v, x: Probe().apply(v, x, train=True, rngs={"dropout": jax.random.key(1)}))(variables, x)
    jax.jit(Probe().apply)(variables, x)
    assert seen == [("__call__", True, bool, int)] * 2
    seen.clear()
    # `method=` names the method run, as the method itself or by name
    jax.jit(lambda v, x: Probe().apply(v, x, method=Probe.encode))(variables, x)
    jax.jit(lambda v, x: Probe().apply(v, x, method="encode"))(variables, x)
    assert seen == [("encode", True)] * 2
    # the leading arguments, and the keywords `apply`/`init` keep for themselves
    import inspect

    for method, leading in table.linen_apply_methods.items():
        parameters = list(inspect.signature(getattr(nn.Module, method)).parameters.values())[1:]  # self
        assert [p.kind for p in parameters[:leading + 1]] == \
            [inspect.Parameter.POSITIONAL_OR_KEYWORD] * leading + [inspect.Parameter.VAR_POSITIONAL]
    keywords = {p for method in table.linen_apply_methods
                for p in inspect.signature(getattr(nn.Module, method)).parameters}
    assert table.linen_apply_keywords <= keywords
    # the drawing methods make the parameters from their key: one key, the same parameters
    assert table.linen_drawing_methods <= set(table.linen_apply_methods)
    for method in table.linen_drawing_methods:
        def made(key):
            result = getattr(Probe(), method)(key, x)
            return result[1] if method == "init_with_output" else result
        same, other = made(jax.random.key(0)), made(jax.random.key(1))
        assert jax.tree.all(jax.tree.map(lambda a, b: bool((a == b).all()), same, made(jax.random.key(0))))
        assert not jax.tree.all(jax.tree.map(lambda a, b: bool((a == b).all()), same, other))


def test_a_class_registered_static_has_no_leaves():
    jax, _ = _jax()

    @jax.tree_util.register_static
    class Config:
        pass

    assert jax.tree.leaves(Config()) == []


def test_nnx_modules_trace_variables_and_keep_other_attributes_static():
    nnx = pytest.importorskip("flax.nnx")
    jax, jnp = _jax()
    from jax.core import Tracer

    seen = {}

    class Model(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.depth = 3

        def __call__(self, x):
            seen["w"] = isinstance(self.w[...], Tracer)
            seen["depth"] = type(self.depth) is int
            with warnings.catch_warnings():  # newer flax prefers `w[...]`; `w.value` still reads the leaf
                warnings.simplefilter("ignore", DeprecationWarning)
                seen["leaves"] = {name: isinstance(getattr(self.w, name), Tracer)
                                  for name in FRAMEWORKS.nnx_variable_leaves}
            return x * self.w[...]

    nnx.jit(lambda m, x: m(x))(Model(), jnp.ones(2))
    assert seen == {"w": True, "depth": True, "leaves": {name: True for name in FRAMEWORKS.nnx_variable_leaves}}
    for name in FRAMEWORKS.nnx_pytree_bases:
        assert isinstance(resolve(name), type)


def test_numpyro_mcmc_traces_the_model_sample_sites():
    numpyro = pytest.importorskip("numpyro")
    jax, jnp = _jax()
    from jax.core import Tracer
    from numpyro import distributions
    from numpyro.infer import MCMC, NUTS

    seen = []

    def model():
        seen.append(isinstance(numpyro.sample("mu", distributions.Normal(0.0, 1.0)), Tracer))

    MCMC(NUTS(model), num_warmup=2, num_samples=2, progress_bar=False).run(jax.random.key(0))
    # the model runs once on concrete values to find its sites, then under the trace
    assert seen[0] is False and any(seen[1:])
    for name in FRAMEWORKS.numpyro_kernels:
        if not _removed(name):
            assert issubclass(resolve(name), resolve("numpyro.infer.mcmc.MCMCKernel"))


def _traced_fields(jax, instance) -> dict[str, bool]:
    """Under `jax.jit`, which of the instance's dataclass fields arrive as tracers (or pytrees of them)."""
    from jax.core import Tracer

    seen = {}

    def traced(value) -> bool:
        leaves = jax.tree.leaves(value)
        return bool(leaves) and all(isinstance(leaf, Tracer) for leaf in leaves)

    def body(state):
        names = [f.name for f in dataclasses.fields(state)] if dataclasses.is_dataclass(state) else state._fields
        seen.update({name: traced(getattr(state, name)) for name in names})
        return 0

    jax.jit(body)(instance)
    return seen


def test_dataclass_pytrees_trace_their_fields_but_the_static_ones():
    jax, jnp = _jax()
    struct = pytest.importorskip("flax.struct")
    eqx = pytest.importorskip("equinox")
    from typing import NamedTuple

    made = []
    for name in FRAMEWORKS.pytree_dataclass_decorators:
        decorator = resolve(name)
        if name == "jax.tree_util.register_dataclass":
            decorator = lambda cls, register=decorator: register(dataclasses.dataclass(cls))  # noqa: E731

        @decorator
        class Declared:
            weights: jax.Array
            steps: int = dataclasses.field(default=2, metadata=dict(static=True, pytree_node=False))

        made.append(Declared(jnp.ones(2)))
    bases = {"typing.NamedTuple": NamedTuple, "flax.struct.PyTreeNode": struct.PyTreeNode, "equinox.Module": eqx.Module}
    assert set(bases) == FRAMEWORKS.pytree_dataclass_bases
    for name, base in bases.items():
        assert resolve(name) is base
        if base is NamedTuple:
            class Declared(NamedTuple):
                weights: jax.Array
                count: int
            made.append(Declared(jnp.ones(2), 3))
            continue
        static = struct.field(pytree_node=False, default=2) if base is struct.PyTreeNode else eqx.field(static=True, default=2)

        class Declared(base):
            weights: jax.Array
            steps: int = static

        made.append(Declared(weights=jnp.ones(2)))
    for instance in made:
        seen = _traced_fields(jax, instance)
        # an annotated field is a leaf (an int one too, under jax.jit); a field declared static is not
        assert seen.pop("weights") is True and seen.pop("count", True) is True, type(instance)
        assert seen == ({"steps": False} if "steps" in seen else {}), type(instance)

    optax = pytest.importorskip("optax")
    for name, (leaves, static) in FRAMEWORKS.pytree_class_fields.items():
        cls = resolve(name)
        instance = cls.create(apply_fn=lambda p, x: x, params={"w": jnp.ones(2)}, tx=optax.adam(0.1))
        seen = _traced_fields(jax, instance)
        assert {f for f, traced in seen.items() if traced} == leaves, name
        assert {f for f, traced in seen.items() if not traced} == static, name


def _distinct(keys):
    jax, jnp = _jax()
    data = [jax.random.key_data(k) if jnp.issubdtype(k.dtype, jax.dtypes.prng_key) else k for k in keys]
    return not bool(jnp.all(data[0] == data[1]))


def test_managed_randomness_gives_a_fresh_key_on_every_call():
    jax, jnp = _jax()
    nnx = pytest.importorskip("flax.nnx")
    rngs = nnx.Rngs(0, dropout=1)
    assert _distinct([rngs(), rngs()]) and _distinct([rngs.dropout(), rngs.dropout()])

    import flax.linen as nn

    drawn = []

    class Dropping(nn.Module):
        def __call__(self):
            drawn.extend([self.make_rng("dropout"), self.make_rng("dropout")])
            return 0

    Dropping().apply({}, rngs={"dropout": jax.random.key(0)})
    assert _distinct(drawn)

    import haiku as hk

    def sampling():
        drawn[:] = [hk.next_rng_key(), hk.next_rng_key(), hk.maybe_next_rng_key()]
        return 0

    hk.transform(sampling).apply({}, jax.random.key(0))
    assert _distinct(drawn[:2]) and _distinct(drawn[1:])

    import numpyro
    from numpyro import distributions, handlers

    with handlers.seed(rng_seed=0):
        draws = [numpyro.sample("a", distributions.Normal()), numpyro.sample("b", distributions.Normal())]
    assert float(draws[0]) != float(draws[1])


#: the premise each section of the table names -> the test above that pins it
SECTION_PREMISES = {
    "host_callbacks": test_host_callbacks_run_with_concrete_values,
    "tree_maps": test_tree_maps_call_the_function_once_per_leaf_after_the_named_leading_parameters,
    "haiku_apply": test_haiku_apply_takes_the_leading_arguments_before_the_functions_own,
    "linen_apply": test_linen_apply_runs_the_method_with_the_arguments_given_after_the_leading_ones,
    "register_static": test_a_class_registered_static_has_no_leaves,
    "nnx_module_leaves": test_nnx_modules_trace_variables_and_keep_other_attributes_static,
    "numpyro_mcmc": test_numpyro_mcmc_traces_the_model_sample_sites,
    "managed_randomness": test_managed_randomness_gives_a_fresh_key_on_every_call,
    "pytree_class_fields": test_dataclass_pytrees_trace_their_fields_but_the_static_ones,
}


def test_every_section_premise_is_pinned_by_a_test():
    assert set(FRAMEWORKS.premises.values()) == set(SECTION_PREMISES)


# -- library calls that trace the functions they are given ([library_traces]) --------------------
def _numpyro_runs(numpyro):
    """For each NumPyro entry, a function that runs the inference it names on `model(x)`."""
    jax, jnp = _jax()
    from numpyro import distributions
    from numpyro.infer import HMC, NUTS, SA, SVI, BarkerMH, MCMC, Predictive, Trace_ELBO

    def mcmc(kernel):
        return lambda model, x: MCMC(kernel(model), num_warmup=2, num_samples=2, progress_bar=False).run(
            jax.random.key(0), x)

    def svi(model, x):
        def guide(x):
            loc = numpyro.param("loc", 0.0)
            numpyro.sample("mu", distributions.Normal(loc, 1.0))
        SVI(model, guide, numpyro.optim.Adam(0.1), Trace_ELBO()).run(jax.random.key(0), 2, x, progress_bar=False)

    def predictive(model, x):
        Predictive(model, num_samples=2)(jax.random.key(0), x)

    return {"numpyro.infer.NUTS": mcmc(NUTS), "numpyro.infer.HMC": mcmc(HMC), "numpyro.infer.SA": mcmc(SA),
            "numpyro.infer.BarkerMH": mcmc(BarkerMH), "numpyro.infer.SVI": svi, "numpyro.infer.Predictive": predictive}


def test_numpyro_inference_traces_the_models_latent_sites_not_its_arguments():
    numpyro = pytest.importorskip("numpyro")
    jax, jnp = _jax()
    from jax.core import Tracer
    from numpyro import distributions

    runs = _numpyro_runs(numpyro)
    entries = {n: t for n, t in FRAMEWORKS.library_traces.items() if t.premise == "numpyro_models"}
    assert set(entries) == set(runs)
    for name, trace in entries.items():
        latent, argument = [], []

        def model(x):
            argument.append(isinstance(x, Tracer))
            latent.append(isinstance(numpyro.sample("mu", distributions.Normal(0.0, 1.0)), Tracer))
            numpyro.sample("obs", distributions.Normal(0.0, 1.0), obs=x)

        runs[name](model, jnp.ones(3))
        assert trace.latent_samples and any(latent), name
        # the model's arguments stay concrete: no position of them is listed as traced
        assert not any(argument) and trace.traced == (), name
        # traced again by every run, not cached by the library: Python control flow fails, a print
        # shows tracers, and nothing is kept between runs
        assert trace.mode == "abstract", name


def test_diffrax_terms_trace_time_and_state_and_compile_once():
    diffrax = pytest.importorskip("diffrax")
    jax, jnp = _jax()
    from jax.core import Tracer

    for name, trace in FRAMEWORKS.library_traces.items():
        if trace.premise != "diffrax_terms":
            continue
        runs = []

        def field(t, y, args):
            runs.append((isinstance(t, Tracer), isinstance(y, Tracer), isinstance(args, Tracer)))
            return -y * args

        if name == "diffrax.ODETerm":
            term, solver = diffrax.ODETerm(field), diffrax.Tsit5()
        else:
            def diffusion(t, y, args):
                runs.append((isinstance(t, Tracer), isinstance(y, Tracer), isinstance(args, Tracer)))
                return jnp.eye(2) * args

            brownian = diffrax.VirtualBrownianTree(0.0, 1.0, tol=1e-2, shape=(2,), key=jax.random.key(0))
            term = diffrax.MultiTerm(diffrax.ODETerm(lambda t, y, args: -y), resolve(name)(diffusion, brownian))
            solver = diffrax.Euler()
        for _ in range(2):
            diffrax.diffeqsolve(term, solver, 0.0, 1.0, 0.1, jnp.ones(2), args=0.5)
        # time and state traced, the Python float `args` left as it is (equinox's filtered jit)
        assert set(runs) == {(True, True, False)}, name
        assert trace.traced == (0, 1) and trace.mode == "jit", name
        # the second solve of the same term reuses the compiled code: no more runs than the first
        first = len(runs)
        diffrax.diffeqsolve(term, solver, 0.0, 1.0, 0.1, jnp.ones(2), args=0.5)
        assert len(runs) == first, name


LIBRARY_TRACE_PREMISES = {
    "numpyro_models": test_numpyro_inference_traces_the_models_latent_sites_not_its_arguments,
    "diffrax_terms": test_diffrax_terms_trace_time_and_state_and_compile_once,
}


def test_every_library_trace_is_pinned_by_a_test():
    assert {t.premise for t in FRAMEWORKS.library_traces.values()} == set(LIBRARY_TRACE_PREMISES)
    for name, trace in FRAMEWORKS.library_traces.items():
        if not _removed(name):
            resolve(name)  # the library has it under this name
        if trace.traced_by is not None:
            resolve(trace.traced_by)  # and what messages name as tracing it
