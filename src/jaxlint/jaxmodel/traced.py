"""Which functions JAX traces, how, with which parameters traced, and the value kinds inside them.

Computed once per file, on the first question a rule asks:
1. a replay of the file's semantic model (one walk, shared with other facts) collects every function
   and class, every transform applied to a function (decorators, `jax.jit(f)`, `lax.scan(body, …)`,
   lambdas), and every call;
2. after the collection, each call is resolved to the function of the module it reaches, when that is
   certain: a plain name, a `functools.partial` of one, a method through `self`, its class or an
   instance made in the module, `instance(x)` for `__call__`;
3. traced functions are interpreted (`values.ValueFlow`) to a fixed point: calls they make with
   traced arguments, `jax.tree.map` over traced trees, and functions defined inside them make
   other functions traced, and those are analysed in turn.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable, Iterator

import libcst as cst

from ..dataflow import Summaries
from ..syntax.positions import node_spans
from .external import TABLE_PREFIXES, ExternalFunction, Seed, TraceStep
from ..syntax.arguments import Passed, Passing, bind_arguments
from ..semantic.model import ReplayState, SemanticModel
from .jax_names import JIT_FAMILY, PARTIAL
from ..semantic.module_state import ModuleState
from ..semantic.scopes import Binding, Scope
from .values import (
    ARRAY_MODULES, NOTHING, PLAIN, STATIC_CALLS, STATIC_LEAF_TRANSFORMS, TRANSFORM_WRAPPERS, Kind, State, Value, ValueFlow, static_field_names,
    wrapper_of,
)

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

FunctionNode = cst.FunctionDef | cst.Lambda

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


@dataclass
class TraceInfo:
    node: FunctionNode
    #: how it is traced: transform names (`jax.jit`, `jax.lax.scan`, `called from f`)
    transforms: list[str] = field(default_factory=list)
    modes: set[str] = field(default_factory=set)
    #: parameters that receive traced values: a container of traced leaves, or a traced value
    param_kinds: dict[str, Kind] = field(default_factory=dict)
    #: how many calls away from a transform (0: transformed itself)
    depth: int = 0
    #: functions of the module that call this one while they are traced
    callers: list[str] = field(default_factory=list)
    #: a method reached through an object whose attributes are known (one its constructor builds
    #: under the trace): the traced attributes of `self`, joined over the calls; None when not known
    receiver: "tuple[tuple[str, Kind], ...] | None" = None
    #: parameters every transform of it binds to a Python literal (`jax.jit(partial(f, check=False))`),
    #: with the literal's truthiness; empty once it is traced some other way
    constants: dict[str, bool] | None = None
    #: traced because of a caller in another module: the chain of calls, outermost first
    chain: tuple[TraceStep, ...] = ()

    def keep_constants(self, truths: dict[str, bool]) -> None:
        """Another way the function is traced, binding `truths`: only constants both agree on stay."""
        if self.constants is None:
            self.constants = dict(truths)
        else:
            self.constants = {name: truth for name, truth in self.constants.items() if truths.get(name) is truth}

    @property
    def traced_params(self) -> set[str]:
        return set(self.param_kinds)

    @property
    def abstract(self) -> bool:
        """Traced with abstract values: Python control flow on them fails."""
        return bool(self.modes & ABSTRACT_MODES)

    @property
    def runs_once(self) -> bool:
        """Its body runs once per trace (jit family) or once per loop (lax bodies), then is cached."""
        return bool(self.modes & RUNS_ONCE_MODES)

    @property
    def label(self) -> str:
        return self.transforms[0] if self.transforms else "a transform"


@dataclass(frozen=True)
class Callee:
    """A function of the module that a call (or a function expression) reaches, and how."""

    function: FunctionNode
    #: a bound method: `self`/`cls` is passed implicitly
    receiver: bool = False
    #: arguments bound before the call's own by `functools.partial`
    prefix: tuple[cst.Arg, ...] = ()
    #: `Class(…)`: the call runs `__init__` on a new object
    constructs: bool = False
    #: leading positional arguments of the call that the function does not receive (haiku's
    #: `net.apply(params, rng, x)` calls the transformed `f(x)`)
    skip: int = 0

    def bind(self, args: Iterable[cst.Arg], bound_positional: int = 0,
             bound_keywords: Iterable[str] = ()) -> dict[str, Passed]:
        args = list(args)
        if self.skip:
            leading = args[:self.skip]
            if len(leading) < self.skip or any(a.keyword is not None or a.star for a in leading):
                return {}  # which arguments reach the function is not known
            args = args[self.skip:]
        return bind_arguments(self.function, [*self.prefix, *args], bound_positional=bound_positional,
                              bound_keywords=bound_keywords, receiver=self.receiver)


@dataclass(frozen=True)
class CallSite:
    """A call that reaches a function, directly or through a transform's wrapper."""

    call: cst.Call
    callee: Callee
    #: what a `functools.partial` inside the wrapper bound (`jax.jit(partial(f, a))`)
    bound_positional: int = 0
    bound_keywords: frozenset[str] = frozenset()

    def bind(self) -> dict[str, Passed]:
        return self.callee.bind(self.call.args, self.bound_positional, self.bound_keywords)


@dataclass
class _Application:
    """One transform applied to one function, with the arguments that configure it."""

    transform: str
    mode: str
    keywords: dict[str, cst.BaseExpression]
    extra_positional: list[cst.BaseExpression]
    #: positional parameters bound by `functools.partial(f, a, b)` and keywords bound by it
    bound_positional: int = 0
    bound_keywords: frozenset[str] = frozenset()
    #: keywords the partial binds to a Python literal, with its truthiness
    bound_truths: tuple[tuple[str, bool], ...] = ()
    #: a lax body or a lambda: JAX passes every parameter
    all_params: bool = False
    #: a library calls the function with only these positional arguments traced (counted after those
    #: a partial binds, `self` included): None for JAX's transforms, which the keywords above describe
    traced_positions: tuple[int, ...] | None = None
    #: calls of the wrapper this application makes (`fast = jax.jit(f)`, then `fast(x)`); None for a
    #: decorator, whose wrapper every call of the function's name reaches
    sites: list[CallSite] | None = None
    #: leading arguments of the wrapper's calls the function does not receive (`Callee.skip`)
    skip: int = 0

    def bound_by(self, positional: int, keywords: Iterable[str],
                 truths: Iterable[tuple[str, bool]] = ()) -> "_Application":
        """This application to a function of which a partial (or a bound method) fixed more arguments."""
        return replace(self, bound_positional=self.bound_positional + positional,
                       bound_keywords=self.bound_keywords | frozenset(keywords),
                       bound_truths=(*self.bound_truths, *truths),
                       sites=None if self.sites is None else [])


@dataclass(eq=False)
class _MethodGiven:
    """A method or a name bound to a partial given to a transform (`jax.jit(self.update)`), resolved
    after the walk."""

    expr: cst.BaseExpression
    scope: Scope
    use: _Application
    #: (scope node id, name) of `fast = jax.jit(agent.act)`
    alias: tuple[int, str] | None = None
    #: `jax.jit(agent.act)(x)`
    called_by: cst.Call | None = None


@dataclass(eq=False)
class _Class:
    """A class defined in the module: its body's scope and what its methods assign on `self`."""

    node: cst.ClassDef
    scope: Scope
    #: attributes assigned on `self` in its methods: they shadow methods of the same name
    instance_attributes: set[str] = field(default_factory=set)
    #: attribute -> the expressions assigned to it on `self` (None: unpacked or augmented)
    instance_values: dict[str, list[cst.BaseExpression | None]] = field(default_factory=dict)


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
#: decorators that leave a method callable as written
_PLAIN_METHOD_DECORATORS = frozenset({"abc.abstractmethod", "typing.override", "typing_extensions.override"})


class TracedFunctions:
    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        #: the project's own jit-like wrappers (`extra-traced-decorators`)
        self.extra_wrappers = frozenset(ctx.settings.extra_traced_decorators)
        self.infos: dict[int, TraceInfo] = {}
        self.flows: dict[int, ValueFlow] = {}
        self.scopes: dict[int, Scope] = {}
        self.functions: list[FunctionNode] = []
        self.methods: set[int] = set()
        #: id(function) -> the calls that reach it (by name, as a method, through a partial or a wrapper)
        self.call_sites: dict[int, list[CallSite]] = {}
        #: id(call) -> the function of the module it calls directly
        self.callees: dict[int, Callee] = {}
        self.applications: dict[int, list[_Application]] = {}
        #: (scope node id, name) -> functions a name was bound to through a transform (`fast = jax.jit(f)`)
        self.aliases: dict[tuple[int, str], list[tuple[FunctionNode, _Application]]] = {}
        #: id(Name target) of `f = jax.jit(f, …)`: the name still stands for the same function, transformed
        self.self_wraps: set[int] = set()
        #: id() of functions handed to a host callback (`jax.debug.callback(log, x)`)
        self.host_callbacks: set[int] = set()
        #: id(ClassDef) -> the class; id(method) -> its class
        self.classes: dict[int, _Class] = {}
        self.method_class: dict[int, _Class] = {}
        #: id(Name target) -> the call assigned to it (`agent = Agent(…)`, `step = partial(f, …)`)
        self.assigned_calls: dict[int, cst.Call] = {}
        #: id(Name target) -> the lambda assigned to it (`relu = lambda x: …`)
        self.assigned_lambdas: dict[int, cst.Lambda] = {}
        #: id(function) -> the functions defined directly inside it (comprehensions are looked through)
        self.nested: dict[int, list[FunctionNode]] = {}
        self.enclosing: dict[int, FunctionNode] = {}
        self._calls: list[tuple[cst.Call, Scope]] = []
        #: id(function) -> `jax.tree.map` calls in its body, with their scope and the non-leaf parameter count
        self._tree_maps: dict[int, list[tuple[cst.Call, Scope, int]]] = {}
        self._subclasses: dict[int, list[_Class]] | None = None
        self._methods_given: list[_MethodGiven] = []
        #: id(function) -> `functools.partial(f, …)` given to a transform in its body, with the scope
        self._partials_given: dict[int, list[tuple[cst.Call, Scope]]] = {}
        #: id(function) -> the functions transforms are applied to in its body, with the application
        self._applied_in: dict[int, list[tuple[FunctionNode, _Application]]] = {}
        #: what functions of the module return, by (function, argument kinds, caller's trace)
        self.summaries: Summaries[Value] = Summaries(self._summarise, NOTHING)
        self._wrappers: dict[int, str | None] = {}
        self._module_wrappers: dict[str, Value] = {}
        self._static_fields: frozenset[str] | None = None
        self._static_param_names: dict[int, frozenset[str]] = {}
        #: id(call) -> the scope it is made in
        self.call_scopes: dict[int, Scope] = {}
        self._pytree_attributes: dict[int, tuple[tuple[str, Kind], ...] | None] = {}
        #: the project the file is analysed in (None: the file alone); id(stand-in) -> the function
        #: of another module it stands for; dotted name -> its stand-in (None: not a project function)
        self.project = ctx.project
        self.external: dict[int, ExternalFunction] = {}
        self._stand_ins: dict[str, cst.FunctionDef | None] = {}
        #: id(stand-in) -> where a transform is applied to it here (`jax.jit(clipped_loss)`), and the scope
        self._applied_at: dict[int, tuple[cst.CSTNode, Scope]] = {}
        #: `x.param(…)` calls with their scope: Flax's `self.param`, when `x` is a module's `self`
        self._param_calls: list[tuple[cst.Call, Scope]] = []
        self._collect()
        self._apply_library_traces()
        self._resolve_calls()
        self._analyse()

    # -- questions rules ask --------------------------------------------------------------------
    def info(self, function: FunctionNode | None) -> TraceInfo | None:
        return self.infos.get(id(function)) if function is not None else None

    def flow(self, function: FunctionNode | None) -> ValueFlow:
        """The value kinds of a scope: a traced function's, or a plain one's (computed on demand)."""
        key = id(function) if function is not None else id(self.ctx.module)
        if key not in self.flows:
            scope = self.scopes.get(key, self.ctx.module_scope)
            flow = ValueFlow(self, function or self.ctx.module, {}, False, self._resolver(scope))
            flow.run(function if function is not None else self.ctx.module)
            self.flows[key] = flow
        return self.flows[key]

    def kind(self, expr: cst.BaseExpression, function: FunctionNode | None) -> Kind:
        return self.flow(function).kinds.get(id(expr), Kind.NONE)

    # -- collection -----------------------------------------------------------------------------
    def _collect(self) -> None:
        # a visitor replayed over the file's semantic record: no walk of its own
        model = SemanticModel.of(self.ctx)
        model.replay(_Collector(self, model.scopes))

    def application(self, call: cst.Call, scope: Scope) -> tuple[_Application, list[cst.BaseExpression]] | None:
        """A transform applied to functions by this call, and the function expressions it is given."""
        resolve = self._resolver(scope)
        callee = resolve(call.func)
        if callee not in LAX_BODIES and callee not in MODES and callee not in self.extra_wrappers \
                and type(call.func) is not cst.Call:
            return None  # most calls: no transform can be applied here (see `transform_use`)
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if callee in LAX_BODIES:
            indices, names = LAX_BODIES[callee]
            bodies = [positional[i] for i in indices if i < len(positional)]
            bodies += [keywords[n] for n in names if n in keywords]
            expanded = []
            for body in bodies:
                if isinstance(body, (cst.List, cst.Tuple)):  # lax.switch branches
                    expanded.extend(e.value for e in body.elements)
                else:
                    expanded.append(body)
            return _Application(callee, "lax", {}, [], all_params=True), expanded
        use = self.transform_use(call.func, scope)
        if use is not None and positional:
            use.keywords.update(keywords)
            use.extra_positional = positional[1:]
            use.sites = []
            return use, [positional[0]]
        if callee in MODES and positional:
            return _Application(callee, MODES[callee], keywords, positional[1:], sites=[]), [positional[0]]
        return None

    def transform_use(self, expr: cst.BaseExpression, scope: Scope) -> _Application | None:
        """`jax.jit`, `partial(jax.jit, …)` or `jax.jit(static_argnames=…)` used as a decorator."""
        resolve = self._resolver(scope)
        name = resolve(expr)
        extra = self.extra_wrappers
        if name in MODES:
            return _Application(name, MODES[name], {}, [])
        if name in extra:
            return _Application(name, "jit", {}, [])
        if isinstance(expr, cst.Call):
            callee = resolve(expr.func)
            keywords = {a.keyword.value: a.value for a in expr.args if a.keyword is not None}
            positional = [a.value for a in expr.args if a.keyword is None]
            if callee in PARTIAL and positional:
                inner = resolve(positional[0])
                if inner in MODES or inner in extra:
                    return _Application(inner, MODES.get(inner, "jit"), keywords, positional[1:])
            if (callee in MODES or callee in extra) and not positional:
                return _Application(callee, MODES.get(callee, "jit"), keywords, [])
        return None

    def functions_of(self, expr: cst.BaseExpression, scope: Scope, use: _Application) -> list[tuple[FunctionNode, _Application]]:
        """The module's functions an expression given to a transform stands for."""
        if type(expr) is cst.Lambda:
            return [(expr, use)]
        if isinstance(expr, cst.Name):
            found = scope.lookup(expr.value)
            if found is not None and len(found[1].nodes) == 1 and id(found[1].nodes[0]) in self.assigned_lambdas:
                return [(self.assigned_lambdas[id(found[1].nodes[0])], use)]  # `f = lambda x: …`
            value = self.assigned_calls.get(id(found[1].nodes[0])) if found is not None and len(found[1].nodes) == 1 else None
            if value is not None and self._resolver(found[0])(value.func) in PARTIAL:
                # `step = partial(f, …)`, `jax.jit(step)`: resolved after the walk, with the rest
                self._methods_given.append(_MethodGiven(expr, scope, use))
                return []
            if found is not None and found[1].is_import_only and self.project is not None:
                external = self._external_callee(expr, scope)  # `jax.jit(clipped_loss)`, imported
                if external is None:
                    return []
                self._applied_at.setdefault(id(external.function), (expr, scope))
                return [(external.function, use)]
            if found is None or not all(
                    isinstance(n, cst.FunctionDef) or id(n) in self.self_wraps for n in found[1].nodes):
                return []  # rebound (`f = partial(f, flag=True)`): what it holds is not known here
            return [(node, use) for node in found[1].nodes if isinstance(node, cst.FunctionDef)]
        if isinstance(expr, cst.Call):
            resolve = self._resolver(scope)
            if resolve(expr.func) in PARTIAL and expr.args and expr.args[0].keyword is None:
                bound = [a for a in expr.args[1:] if a.keyword is None]
                # a copy: the branches of one `lax.cond` share the application
                use = use.bound_by(len(bound), {a.keyword.value for a in expr.args if a.keyword is not None},
                                   literal_keywords(expr.args))
                owner = _function_scope(scope)
                if owner is not None:  # what it binds is known once the function around it is analysed
                    self._partials_given.setdefault(id(owner.node), []).append((expr, scope))
                return self.functions_of(expr.args[0].value, scope, use)
            inner = self.application(expr, scope)
            if inner is not None:  # jax.vmap(jax.grad(f)): f is also under the outer transform
                return [pair for e in inner[1] for pair in self.functions_of(e, scope, use)]
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            # `jax.jit(self.update)`, `lax.scan(agent.step, …)`: known once every class is collected
            self._methods_given.append(_MethodGiven(expr, scope, use))
        return []

    def _resolver(self, scope: Scope):
        names = self.ctx.names
        return lambda expr: names.qualified_name(expr, scope)

    # -- functions a library traces ----------------------------------------------------------------
    def _apply_library_traces(self) -> None:
        """Functions the file hands to a library that traces them (each checked in the library's code):

        * an initializer given to `self.param(name, init_fn, *init_args)` in a `flax.linen.Module`:
          `apply` finds the parameter already there and calls `init_fn(jax.random.key(0), *init_args)`
          under `jax.eval_shape` to check its shape, so the key is abstract; the other arguments are
          the module's own values, passed on as they are (flax/core/scope.py, `Scope.param`);
        * `sample(self, state, model_args, model_kwargs)` of a NumPyro MCMC kernel: `MCMC.run` calls it
          from a jitted loop body with the kernel's state (`numpyro.util.fori_collect`); the model's
          arguments are traced only with `jit_model_args=True`, so they are not counted.
        """
        for call, scope in self._param_calls:
            method = _function_scope(scope)
            cls = self.method_class.get(id(method.node)) if method is not None else None
            receiver = _positional(method.node)[:1] if cls is not None else []
            if not receiver or not (isinstance(call.func.value, cst.Name) and call.func.value.value == receiver[0]):
                continue
            if "flax.linen.Module" not in self._library_bases(cls):
                continue
            given = [a.value for a in call.args if a.keyword is None and not a.star][1:2]
            given += [a.value for a in call.args if a.keyword is not None and a.keyword.value == "init_fn"]
            use = _Application("flax.linen.Module.param", "abstract", {}, [], traced_positions=(0,))
            for expr in given:
                for function, function_use in self.functions_of(expr, scope, use):
                    self.applications.setdefault(id(function), []).append(function_use)
        for function in self.functions:
            cls = self.method_class.get(id(function))
            if cls is None or not isinstance(function, cst.FunctionDef) or function.name.value != "sample":
                continue
            if self._library_bases(cls) & NUMPYRO_KERNELS and id(function) in self.methods:
                use = _Application("numpyro.infer.MCMC", "jit", {}, [], traced_positions=(1,))
                self.applications.setdefault(id(function), []).append(use)

    def _library_bases(self, cls: _Class) -> set[str]:
        """The bases defined elsewhere of a class and of its bases defined in the file."""
        return {name for c in self._bases(cls, stop_outside=False) if c is not None for name in self._external_bases(c)}

    # -- which function a call reaches ------------------------------------------------------------
    def _resolve_calls(self) -> None:
        """After the walk, when every class, method and assignment of the module is known."""
        for given in self._methods_given:
            self._apply_to_method(given)
        self._methods_given = []
        for function in self.functions:
            scope = self.scopes.get(id(function))
            outer = _function_scope(scope.parent if scope is not None else None)
            if outer is not None and id(function) not in self.host_callbacks:
                self.nested.setdefault(id(outer.node), []).append(function)
                self.enclosing[id(function)] = outer.node
        for call, scope in self._calls:
            self.call_scopes[id(call)] = scope
            callee = self.callee(call.func, scope) or self._constructor(call.func, scope)
            if callee is not None:
                self.callees[id(call)] = callee
                self.call_sites.setdefault(id(callee.function), []).append(CallSite(call, callee))
            if type(call.func) is cst.Name:  # `fast = jax.jit(f)`, then `fast(x)`
                found = scope.lookup(call.func.value)
                if found is None:
                    continue
                for function, use in self.aliases.get((id(found[0].node), call.func.value), ()):
                    site = CallSite(call, Callee(function, skip=use.skip), use.bound_positional, use.bound_keywords)
                    if use.sites is not None:
                        use.sites.append(site)
                    self.call_sites.setdefault(id(function), []).append(site)
        self._calls = []

    def _apply_to_method(self, given: "_MethodGiven") -> None:
        """A transform given a method or a name bound to a partial: a bound method passes `self`
        itself, a partial its arguments, before the wrapper's."""
        callee = self.callee(given.expr, given.scope)
        if callee is None:
            return
        positional = sum(1 for a in callee.prefix if a.keyword is None and not a.star)
        keywords = [a.keyword.value for a in callee.prefix if a.keyword is not None]
        if any(a.star for a in callee.prefix):
            return  # `partial(f, *args)`: which parameters it binds is not known
        use, function = given.use.bound_by(int(callee.receiver) + positional, keywords,
                                           literal_keywords(callee.prefix)), callee.function
        if callee.skip:
            use = replace(use, skip=callee.skip)
        if id(function) in self.external:
            self._applied_at.setdefault(id(function), (given.expr, given.scope))
        self.applications.setdefault(id(function), []).append(use)
        self._note_applied_in(given.scope, function, use)
        if given.alias is not None:
            self.aliases.setdefault(given.alias, []).append((function, use))
        if given.called_by is not None and use.sites is not None:
            use.sites.append(CallSite(given.called_by, Callee(function, skip=use.skip), use.bound_positional,
                                      use.bound_keywords))

    def _note_applied_in(self, scope: Scope, function: FunctionNode, use: _Application) -> None:
        owner = _function_scope(scope)
        if owner is not None:
            self._applied_in.setdefault(id(owner.node), []).append((function, use))

    def callee(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> Callee | None:
        """The function of the module that calling `expr` runs, when it is certain; else None.

        A plain name bound only to `def`s, a lambda, `functools.partial` of one, a method reached
        through `self`/`cls`, its class, a name bound only to an instance of a class of the module
        (`agent.act(x)`, `agent(x)` for `__call__`), or an instance made on the spot (`Agent(…).act(x)`).
        In a project, also a function of another module of it, imported by name or reached through
        its module (`losses.clipped_loss`), or a method of an instance of a class of another module
        (`model = MLP(…)`, then `model(x)`, `model.encode(x)`): a stand-in for it (`external`).
        """
        found = self._local_callee(expr, scope, depth)
        if found is None and self.project is not None and type(expr) in (cst.Name, cst.Attribute):
            return self._external_callee(expr, scope) or self._external_method(expr, scope)
        return found

    def _external_method(self, expr: cst.BaseExpression, scope: Scope) -> Callee | None:
        """`obj(x)` / `obj.method(x)` where every binding of `obj` is `obj = Class(…)` and `Class`
        is a class of another module of the project: its method, `self` passed implicitly."""
        if type(expr) is cst.Name:
            receiver, attr = expr, "__call__"
        elif type(expr.value) is cst.Name:
            receiver, attr = expr.value, expr.attr.value
        else:
            return None
        found = scope.lookup(receiver.value)
        if found is None:
            return None
        classes = set()
        for node in found[1].nodes:
            value = self.assigned_calls.get(id(node))
            dotted = self.ctx.names.qualified_name(value.func, found[0]) if value is not None else None
            if dotted is None or dotted.startswith(TABLE_PREFIXES):
                return None
            classes.add(dotted)
        if len(classes) != 1:
            return None
        stand_in = self.stand_in(f"{classes.pop()}.{attr}", bound=True)
        return Callee(stand_in, receiver=True) if stand_in is not None else None

    def _external_callee(self, expr: cst.BaseExpression, scope: Scope) -> Callee | None:
        dotted = self.ctx.names.qualified_name(expr, scope)
        if dotted is None or dotted.startswith(TABLE_PREFIXES):
            return None
        stand_in = self.stand_in(dotted)
        return Callee(stand_in) if stand_in is not None else None

    def stand_in(self, dotted: str, bound: bool = False) -> cst.FunctionDef | None:
        """The stand-in for the project function `dotted` names (made once), or None. `bound`: a
        method called on an instance (`Class.method` with `self` passed implicitly)."""
        key = f"{dotted}()" if bound else dotted
        if key in self._stand_ins:
            return self._stand_ins[key]
        function = self.project.function_at(dotted, bound) if bound else self.project.function_at(dotted)
        stand_in = None
        if function is not None:
            stand_in = function.stand_in()
            self.external[id(stand_in)] = function
            if function.method:
                self.methods.add(id(stand_in))
        self._stand_ins[key] = stand_in
        return stand_in

    def _local_callee(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> Callee | None:
        if depth > 4:
            return None
        if type(expr) is cst.Lambda:
            return Callee(expr)
        if type(expr) is cst.Name:
            found = scope.lookup(expr.value)
            if found is None:
                return None
            owner, binding = found
            nodes = binding.nodes
            defs = [n for n in nodes if type(n) is cst.FunctionDef]
            if defs:
                return Callee(defs[-1]) if len(defs) == len(nodes) else None
            if len(nodes) == 1:
                if id(nodes[0]) in self.assigned_lambdas:
                    return Callee(self.assigned_lambdas[id(nodes[0])])
                value = self.assigned_calls.get(id(nodes[0]))
                if value is not None and self._resolver(owner)(value.func) in PARTIAL:
                    return self._partial(value, owner, depth)
            instance = self._instance_of(expr, scope)
            if instance is not None:
                return self._method(instance[0], "__call__", instance[1])
            return None
        if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.attr.value == "apply":
            transformed = self._haiku_transformed(expr.value, scope, depth)
            if transformed is not None:
                return transformed
        if type(expr) is cst.Attribute and type(expr.value) is cst.Name and self.classes:
            attr = expr.attr.value
            found = scope.lookup(expr.value.value)
            if found is None:
                return None
            cls = self.classes.get(id(found[1].nodes[0])) if len(found[1].nodes) == 1 else None
            if cls is not None:
                return self._method(cls, attr, "class")
            instance = self._instance_of(expr.value, scope, found)
            if instance is not None:
                return self._method(instance[0], attr, instance[1])
            return None
        if type(expr) is cst.Attribute and type(expr.value) is cst.Call \
                and isinstance(expr.value.func, cst.Name) and self.classes:
            cls = self._class_named(expr.value.func, scope)  # `Agent(0.1).act(x)`: an instance made here
            return self._method(cls, expr.attr.value, "instance") if cls is not None else None
        if type(expr) is cst.Call and self._resolver(scope)(expr.func) in PARTIAL:
            return self._partial(expr, scope, depth)
        return None

    def _haiku_transformed(self, name: cst.Name, scope: Scope, depth: int) -> Callee | None:
        """`net.apply` where `net = hk.transform(f)` (or `transform_with_state`, or either under
        `without_apply_rng`): `apply(params[, state], rng, *args)` calls `f(*args)` (haiku's
        `_src/transform.py`), so the function reached is `f`, the leading arguments skipped."""
        found = scope.lookup(name.value)
        if found is None or len(found[1].nodes) != 1:
            return None
        value = self.assigned_calls.get(id(found[1].nodes[0]))
        resolve = self._resolver(found[0])
        skip = 0
        if value is not None and resolve(value.func) == "haiku.without_apply_rng" and value.args \
                and isinstance(value.args[0].value, cst.Call):
            value, skip = value.args[0].value, -1
        if value is None or not value.args or value.args[0].keyword is not None:
            return None
        leading = HAIKU_TRANSFORMS.get(resolve(value.func))
        if leading is None:
            return None
        inner = self.callee(value.args[0].value, found[0], depth + 1)
        if inner is None or inner.prefix or inner.receiver or inner.skip:
            return None
        return Callee(inner.function, skip=leading + skip)

    def _constructor(self, expr: cst.BaseExpression, scope: Scope) -> Callee | None:
        """`Class(…)` of a class of the module whose `__init__` is its own (or a base's of the module)."""
        cls = self._class_named(expr, scope) if type(expr) is cst.Name else None
        if cls is None or any(c is None for c in self._bases(cls)):
            return None  # a base from elsewhere may define `__new__` or a metaclass
        init = self._method(cls, "__init__", "class")
        if init is None or not isinstance(init.function, cst.FunctionDef) or init.function.decorators:
            return None
        return Callee(init.function, receiver=True, constructs=True)

    def fresh_receiver(self, call: cst.Call) -> bool:
        """Whether `call` builds a new object of a class of the module (`Class(…)`)."""
        callee = self.callees.get(id(call))
        return callee is not None and callee.constructs

    def _partial(self, call: cst.Call, scope: Scope, depth: int) -> Callee | None:
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return None
        inner = self.callee(call.args[0].value, scope, depth + 1)
        if inner is None:
            return None
        return Callee(inner.function, inner.receiver, (*inner.prefix, *call.args[1:]))

    def _class_named(self, name: cst.Name, scope: Scope) -> _Class | None:
        found = scope.lookup(name.value)
        if found is None or len(found[1].nodes) != 1:
            return None
        return self.classes.get(id(found[1].nodes[0]))

    def _instance_of(self, name: cst.Name, scope: Scope,
                     found: "tuple[Scope, Binding] | None" = None) -> tuple[_Class, str] | None:
        """The class a name holds an instance of, and how: "self" (maybe a subclass), "cls" (the class
        itself, maybe a subclass) or "instance" (made here by calling the class)."""
        if not self.classes:
            return None
        found = found or scope.lookup(name.value)
        if found is None:
            return None
        owner, binding = found
        nodes = binding.nodes
        if len(nodes) == 1 and type(nodes[0]) is cst.Param:
            function = owner.node
            cls = self.method_class.get(id(function))
            if cls is None or _positional(function)[:1] != [name.value]:
                return None
            resolve = self._resolver(cls.scope)
            decorators = {resolve(d.decorator) for d in function.decorators}
            if "builtins.staticmethod" in decorators:
                return None
            return (cls, "cls") if "builtins.classmethod" in decorators else (cls, "self")
        classes = set()
        for node in nodes:
            value = self.assigned_calls.get(id(node))
            cls = self._class_named(value.func, owner) if value is not None and type(value.func) is cst.Name else None
            if cls is None:
                return None
            classes.add(cls)
        return (classes.pop(), "instance") if len(classes) == 1 else None

    def _method(self, cls: _Class, attr: str, how: str) -> Callee | None:
        """`attr` looked up on an instance of `cls` ("self", "instance") or on the class ("cls", "class")."""
        if how in ("self", "instance") and any(attr in c.instance_attributes for c in self._bases(cls) if c):
            return None
        method = None
        for owner in self._bases(cls):
            if owner is None:
                return None  # a base class from elsewhere may define it
            binding = owner.scope.bindings.get(attr)
            if binding is None:
                continue
            if not all(isinstance(n, cst.FunctionDef) for n in binding.nodes):
                return None
            method = binding.nodes[-1]
            break
        if method is None:
            return None
        if how in ("self", "cls") and self._overridden(cls, attr):
            return None  # a subclass of the module overrides it: which one runs is not known
        kind = self._method_kind(method, self.method_class[id(method)])
        if kind is None:
            return None
        if kind == "static":
            return Callee(method)
        if kind == "class":
            return Callee(method, receiver=True)
        return Callee(method, receiver=how in ("self", "instance"))

    def _method_kind(self, function: cst.FunctionDef, cls: _Class) -> str | None:
        """"instance", "static" or "class"; None for properties and unknown wrappers."""
        kind = "instance"
        resolve = self._resolver(cls.scope)
        for decorator in function.decorators:
            name = resolve(decorator.decorator)
            if name == "builtins.staticmethod":
                kind = "static"
            elif name == "builtins.classmethod":
                kind = "class"
            elif name not in _PLAIN_METHOD_DECORATORS and self.transform_use(decorator.decorator, cls.scope) is None:
                return None
        return kind

    def _bases(self, cls: _Class, stop_outside: bool = True) -> Iterator[_Class | None]:
        """The class, then its bases defined in the module, depth first. With `stop_outside`, a base
        defined elsewhere (not `object`) ends the walk with None: what it defines is not known here."""
        seen: set[int] = set()
        stack = [cls]
        while stack:
            current = stack.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            yield current
            bases, elsewhere = self._direct_bases(current)
            if elsewhere and stop_outside:
                yield None
                return
            stack.extend(reversed(bases))

    def _direct_bases(self, cls: _Class) -> tuple[list[_Class], bool]:
        """The bases of a class defined in the module, and whether it has others (`object` aside)."""
        parent = cls.scope.parent
        bases, elsewhere = [], False
        for arg in cls.node.bases:
            if arg.keyword is not None or parent is None:
                continue
            base = self._class_named(arg.value, parent) if type(arg.value) is cst.Name else None
            if base is not None:
                bases.append(base)
            elif self._resolver(parent)(arg.value) != "builtins.object":
                elsewhere = True
        return bases, elsewhere

    def _overridden(self, cls: _Class, attr: str) -> bool:
        """Whether a class of the module derived from `cls` (at any depth) defines `attr`."""
        if self._subclasses is None:
            self._subclasses = {}
            for other in self.classes.values():
                for base in self._direct_bases(other)[0]:
                    self._subclasses.setdefault(id(base), []).append(other)
        seen: set[int] = set()
        pending = list(self._subclasses.get(id(cls), ()))
        while pending:
            sub = pending.pop()
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            if attr in sub.scope.bindings:
                return True
            pending.extend(self._subclasses.get(id(sub), ()))
        return False

    # -- analysis -------------------------------------------------------------------------------
    def _analyse(self) -> None:
        """Traced functions to a fixed point: a function is analysed again only when what it is
        given grows (traced parameters, modes, the traced values it closes over)."""
        self._queue: deque[FunctionNode] = deque()
        self._queued: set[int] = set()
        self._analysed_with: dict[int, tuple] = {}
        self._closures: dict[int, State] = {}
        for function in [*self.functions, *self._stand_in_nodes()]:
            for use in self.applications.get(id(function), ()):
                info = self.infos.setdefault(id(function), TraceInfo(function))
                info.transforms.append(use.transform)
                info.modes.add(use.mode)
                info.keep_constants(dict(use.bound_truths))
                for param in self._traced_params(function, use) - self._static_params(function):
                    info.param_kinds[param] = Kind.PARAM
            if id(function) in self.infos:
                self._enqueue(function)
        if self.project is not None:
            self._seed(self.project.seeds())
        self._drain()

    def add_seeds(self, seeds: "Iterable[Seed]") -> None:
        """Functions of this module traced by callers in other modules, learnt after the analysis:
        analysed (with what they reach) as far as what they are given grows."""
        self._seed(seeds)
        self._drain()

    def _seed(self, seeds: "Iterable[Seed]") -> None:
        for seed in seeds:
            function = self.local_function(seed.qualname)
            if function is None:
                continue
            info = self.infos.get(id(function))
            if info is None:
                info = self.infos[id(function)] = TraceInfo(
                    function, depth=len(seed.chain), callers=[seed.chain[-1].caller] if seed.chain else [],
                    chain=seed.chain)
            grew = not seed.modes <= info.modes
            if grew or not info.transforms:
                info.transforms.append(seed.transform)
            info.modes |= seed.modes
            static = self._static_params(function)
            for name, kind in seed.param_kinds:
                if name not in static and info.param_kinds.get(name, Kind.NONE) < kind:
                    info.param_kinds[name] = kind
                    grew = True
            if grew:
                self._enqueue(function)

    def local_function(self, qualname: str) -> FunctionNode | None:
        """The module's function `name` or method `Class.name` (a single definition), or None."""
        first, _, rest = qualname.partition(".")
        binding = self.ctx.module_scope.bindings.get(first)
        if binding is None or len(binding.nodes) != 1:
            return None
        node = binding.nodes[0]
        if not rest:
            return node if isinstance(node, cst.FunctionDef) else None
        cls = self.classes.get(id(node))
        if cls is None or "." in rest:
            return None
        method = cls.scope.bindings.get(rest)
        if method is None or len(method.nodes) != 1 or not isinstance(method.nodes[0], cst.FunctionDef):
            return None
        return method.nodes[0]

    def _stand_in_nodes(self) -> list[cst.FunctionDef]:
        return [node for node in self._stand_ins.values() if node is not None]

    def outgoing_seeds(self) -> list[tuple[ExternalFunction, Seed]]:
        """The functions of other modules this module's traced functions call with traced values
        (or under a trace), each with how and through which chain."""
        links = []
        for stand_in in self._stand_in_nodes():
            info = self.infos.get(id(stand_in))
            if info is not None:
                links.append((stand_in, info, self._link_to(stand_in)))
        # the lines of every call named, found in one pass over the module's code
        nodes = [link[2] for _, _, link in links if link is not None]
        lines = node_spans(self.ctx.module, nodes) if nodes else {}
        found = []
        for stand_in, info, link in links:
            chain: tuple[TraceStep, ...] = ()
            if link is not None:
                own, caller, node, transform = link
                cell, line = self.ctx.place(lines[id(node)][0][0])
                chain = (*own, TraceStep(self.ctx.path, line, caller, transform, cell))
            external = self.external[id(stand_in)]
            transform = chain[0].transform if chain else info.label
            found.append((external, Seed(external.ref.qualname, tuple(sorted(info.param_kinds.items())),
                                         frozenset(info.modes), transform, chain)))
        return found

    def _link_to(self, stand_in: cst.FunctionDef) -> "tuple[tuple[TraceStep, ...], str, cst.CSTNode, str] | None":
        """How a stand-in is traced here: the chain of its first traced caller (itself traced from
        elsewhere, or by a transform here) and that caller's call of it — or the transform applied
        to it (`fast = jax.jit(normalize)`); None when neither is known."""
        for site in self.call_sites.get(id(stand_in), ()):
            caller = self._function_of_call(site.call)
            info = self.info(caller)
            if caller is None or info is None:
                continue
            own = info.chain if info.chain else ()
            return own, _name(caller), site.call, own[0].transform if own else info.label
        applied = self._applied_at.get(id(stand_in))
        info = self.info(stand_in)
        if applied is not None and info is not None:
            node, scope = applied
            owner = _function_scope(scope)
            outer = self.info(owner.node) if owner is not None else None
            if outer is not None and outer.chain:
                return outer.chain, _name(owner.node), node, outer.chain[0].transform
            return (), _name(owner.node) if owner is not None else "", node, info.label
        return None

    def function_of_call(self, call: cst.Call) -> FunctionNode | None:
        """The function whose body makes `call` (None: module level)."""
        return self._function_of_call(call)

    def _function_of_call(self, call: cst.Call) -> FunctionNode | None:
        scope = self.call_scopes.get(id(call))
        owner = _function_scope(scope)
        return owner.node if owner is not None else None

    def _drain(self) -> None:
        while self._queue:
            function = self._queue.popleft()
            self._queued.discard(id(function))
            info = self.infos[id(function)]
            if id(function) in self.external:
                continue  # another module's function: the project hands its trace over
            closure = self._closure(function)
            given = (tuple(sorted(info.param_kinds.items())), frozenset(info.modes), tuple(sorted(closure.items())),
                     tuple(sorted((info.constants or {}).items())), info.receiver)
            if self._analysed_with.get(id(function)) == given:
                continue
            self._analysed_with[id(function)] = given
            flow = self._traced_flow(function, info, closure)
            self.flows[id(function)] = flow
            for callee, arguments, receiver in flow.calls:
                self._reach(function, callee, arguments, receiver=receiver)
            for call, scope, skipped in self._tree_maps.get(id(function), ()):
                self._map_over_leaves(function, call, scope, skipped, flow)
            for call, scope in self._partials_given.get(id(function), ()):
                self._bind_partial(function, call, scope, flow)
            for inner, use in self._applied_in.get(id(function), ()):
                self._transformed_inside(function, inner, use, flow)
            for inner in self.nested.get(id(function), ()):
                self._inherit(function, inner)

    def _enqueue(self, function: FunctionNode) -> None:
        if id(function) not in self._queued:
            self._queued.add(id(function))
            self._queue.append(function)

    def _reach(self, caller: FunctionNode, callee: FunctionNode, arguments: dict[str, Kind],
               under_trace: bool = False, truths: dict[str, bool] | None = None,
               receiver: "tuple[tuple[str, Kind], ...] | None" = None) -> None:
        """A traced function calls `callee` with these argument kinds (`under_trace`: through a
        transform applied there, which runs under the caller's trace whatever the arguments)."""
        static = self._static_params(callee)
        traced = {name: (Kind.CONTAINER if kind == Kind.CONTAINER else Kind.PARAM)
                  for name, kind in arguments.items() if (kind.traced or kind == Kind.CONTAINER) and name not in static}
        if not traced and not under_trace and not receiver:
            return
        info = self.infos[id(caller)]
        target = self.infos.get(id(callee))
        if target is None:
            target = self.infos[id(callee)] = TraceInfo(callee, depth=info.depth + 1)
        if receiver is not None:
            joined = dict(target.receiver or ())
            for name, kind in receiver:
                joined[name] = max(joined.get(name, Kind.NONE), kind)
            joined_receiver = tuple(sorted(joined.items()))
            if joined_receiver != target.receiver:
                target.receiver = joined_receiver
                self._enqueue(callee)
        if target.constants:
            before = target.constants
            target.keep_constants(truths or {})
            if target.constants != before:
                self._enqueue(callee)
        grew = not info.modes <= target.modes
        for name, kind in traced.items():
            if target.param_kinds.get(name, Kind.NONE) < kind:
                target.param_kinds[name] = kind
                grew = True
        if grew:
            if under_trace and not target.abstract and info.abstract:
                target.transforms.insert(0, info.label)  # `jax.grad(loss)(p)` in a jitted step: jit's trace
            else:
                target.transforms.append(info.label)
            target.modes |= info.modes
            target.callers.append(_name(caller))
            self._enqueue(callee)

    def _transformed_inside(self, function: FunctionNode, inner: FunctionNode, use: _Application,
                            flow: ValueFlow) -> None:
        """A transform applied inside a traced function traces `inner` under the same trace; calls of
        the wrapper made there pass it the caller's values (`jax.value_and_grad(loss)(params, batch)`)."""
        kinds: dict[str, Kind] = {}
        for site in use.sites or ():
            if id(site.call) not in flow.kinds:
                continue  # a call made elsewhere
            for name, passed in site.bind().items():
                kind = _passed_kind(passed, lambda e: flow.kinds.get(id(e), Kind.NONE))
                kinds[name] = max(kinds.get(name, Kind.NONE), kind)
        self._reach(function, inner, kinds, under_trace=True, truths=dict(use.bound_truths))

    def _map_over_leaves(self, function: FunctionNode, call: cst.Call, scope: Scope, skipped: int,
                         flow: ValueFlow) -> None:
        """`jax.tree.map(f, tree, *rest)`: `f` is called with one leaf of each tree (after the path)."""
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if len(positional) < 2 or len(positional) != len([a for a in call.args if a.keyword is None]):
            return
        callee = self.callee(positional[0].value, scope)
        if callee is None:
            return
        leaves: dict[int, Kind] = {}
        for arg in positional[1:]:
            # a container built here may hold Python values (`jax.tree.map(_is_none, grads)` gives
            # bools): only a traced tree is known to have traced leaves
            tree = flow.kinds.get(id(arg.value), Kind.NONE)
            leaves[id(arg.value)] = Kind.PARAM if tree.traced else Kind.NONE
        if not any(kind.traced for kind in leaves.values()):
            return
        paths = [cst.Arg(cst.Name("path")) for _ in range(skipped)]
        passed = callee.bind([*paths, *positional[1:]])
        kinds = {name: _passed_kind(p, lambda e: leaves.get(id(e), flow.kinds.get(id(e), Kind.NONE)))
                 for name, p in passed.items()}
        self._reach(function, callee.function, kinds, truths=dict(literal_keywords(callee.prefix)))

    def _bind_partial(self, function: FunctionNode, call: cst.Call, scope: Scope, flow: ValueFlow) -> None:
        """`lax.scan(partial(body, params), …)` inside a traced function: `params` reaches `body` traced."""
        callee = self.callee(call, scope)
        if callee is None:
            return
        kinds = {name: _passed_kind(p, lambda e: flow.kinds.get(id(e), Kind.NONE))
                 for name, p in callee.bind(()).items()}
        self._reach(function, callee.function, kinds, truths=dict(literal_keywords(callee.prefix)))

    def _inherit(self, outer: FunctionNode, function: FunctionNode) -> None:
        """A function defined inside a traced one runs under the same trace whenever it runs (called
        there, or handed to `jax.tree.map` or a Python loop) — unless it is a host callback.
        Its parameters stay unknown; the traced values it closes over are known from the outer flow."""
        outer_info = self.infos[id(outer)]
        own = self.infos.get(id(function))
        if own is None:
            self.infos[id(function)] = TraceInfo(function, transforms=[outer_info.label], modes=set(outer_info.modes),
                                                 depth=outer_info.depth, callers=[_name(outer)])
        elif not outer_info.modes <= own.modes:  # `jax.grad(loss)` inside a jitted step
            own.modes |= outer_info.modes
            own.transforms.insert(0, outer_info.label)
        self._enqueue(function)  # analysed again only if its closure or its trace grew

    def _closure(self, function: FunctionNode) -> State:
        """The traced values a nested function closes over, joined over every run of its enclosing one."""
        outer = self.enclosing.get(id(function))
        flow = self.flows.get(id(outer)) if outer is not None else None
        seen = self._closures.setdefault(id(function), {})
        if flow is not None:
            for name, value in flow.closures.get(id(function), {}).items():
                seen[name] = flow.join(seen[name], value) if name in seen else value
        return seen

    def _traced_flow(self, function: FunctionNode, info: TraceInfo, closure: State) -> ValueFlow:
        initial = dict(closure)
        containers = _container_params(function)
        for param in _params(function):
            kind = info.param_kinds.get(param, Kind.NONE)
            if kind.traced and param in containers:
                kind = Kind.CONTAINER
            initial[param] = kind
        for param, truth in (info.constants or {}).items():
            initial[param] = Value(Kind.NONE, truth=truth)
        for param, kind in info.param_kinds.items():
            attributes = self._object_attributes(function, param) if kind == Kind.PARAM else None
            if attributes is not None:
                initial[param] = Value(kind, attributes=attributes)
        positional = _positional(function)
        if info.receiver is not None and id(function) in self.methods and positional:
            initial[positional[0]] = Value(Kind.NONE, attributes=info.receiver)
        scope = self.scopes.get(id(function), self.ctx.module_scope)
        static_leaves = any(t.startswith(STATIC_LEAF_TRANSFORMS) for t in info.transforms)
        flow = ValueFlow(self, function, initial, info.abstract, self._resolver(scope), static_leaves)
        flow.run(function)
        return flow

    def _traced_params(self, function: FunctionNode, use: _Application) -> set[str]:
        positional = _positional(function)
        # self/cls: never known to be traced. A transform decorating a method wraps the plain function,
        # so `static_argnums`, `in_axes` and `argnums` count `self` as argument 0.
        receiver = positional[0] if id(function) in self.methods and positional else None
        positional = positional[use.bound_positional:]
        every = set(positional) | set(_keyword_only(function)) | _star_params(function)
        every -= use.bound_keywords
        if use.all_params:  # lax passes exactly the positional arguments its body needs
            return {p for p in every if not _has_default(function, p) and p != receiver}
        if use.traced_positions is not None:
            return {positional[i] for i in use.traced_positions if i < len(positional) and positional[i] != receiver}
        if use.mode == "jit":
            traced = every - self._static(function, use, positional)
        elif use.mode == "vmap":
            traced = self._mapped(use, positional, every)
        elif use.mode == "grad":
            traced = self._differentiated(use, positional)
        else:
            traced = every
        return {p for p in traced if p != receiver and self._passed(function, p, use)}

    def _static(self, function: FunctionNode, use: _Application, positional: list[str]) -> set[str]:
        static: set[str] = set()
        # `pmap` names its static positions `static_broadcasted_argnums`
        numbers = use.keywords.get("static_argnums", use.keywords.get("static_broadcasted_argnums"))
        for number in _ints(numbers):
            if -len(positional) <= number < len(positional):
                static.add(positional[number])
        names = use.keywords.get("static_argnames")
        static |= set(_strings(names))
        if numbers is not None and not _ints(numbers) or names is not None and not _strings(names):
            return set(_params(function))  # computed elsewhere: unknown, so assume everything static
        return static

    def _mapped(self, use: _Application, positional: list[str], every: set[str]) -> set[str]:
        axes = use.keywords.get("in_axes", use.extra_positional[0] if use.extra_positional else None)
        if axes is None:
            return every
        if isinstance(axes, cst.Name) and axes.value == "None":
            return set()
        if isinstance(axes, (cst.Integer, cst.UnaryOperation)):
            return every
        if isinstance(axes, (cst.Tuple, cst.List)):
            mapped = set()
            for name, element in zip(positional, axes.elements):
                if not (isinstance(element.value, cst.Name) and element.value.value == "None"):
                    mapped.add(name)
            return mapped
        return set()

    def _differentiated(self, use: _Application, positional: list[str]) -> set[str]:
        argnums = use.keywords.get("argnums", use.extra_positional[0] if use.extra_positional else None)
        numbers = _ints(argnums) if argnums is not None else [0]
        return {positional[n] for n in numbers if -len(positional) <= n < len(positional)}

    def _passed(self, function: FunctionNode, param: str, use: _Application) -> bool:
        """A parameter with a default is only known to be traced when some call of the transformed
        function passes it: calls of the decorated name, or of the wrapper this application made."""
        if type(function) is cst.Lambda or not _has_default(function, param):
            return True
        sites = use.sites if use.sites is not None else self.call_sites.get(id(function), ())
        for site in sites:
            passed = site.bind().get(param)
            if passed is not None and passed.explicit:
                return True
        return False

    # -- used by ValueFlow ---------------------------------------------------------------------
    def call_result(self, function: FunctionNode, arguments: dict[str, Kind], caller: ValueFlow) -> Value:
        """What a call of a function of the module returns, given the kinds of its arguments: a
        transformed function's outputs are arrays (traced under a trace); others are summarised."""
        wrapper = self._decorator_wrapper(function)
        if wrapper is not None:
            strongest = max(arguments.values(), default=Kind.NONE)
            if wrapper == "outputs" and caller._traced_result(strongest):
                returned = self._traced_outputs(function, arguments)
                if returned is not None:
                    return returned
            return caller.wrapper_result(wrapper, strongest)
        closure = caller.closures.get(id(function))
        if closure is None and self._nested(function):
            closure = next((flow.closures[id(function)] for flow in self.flows.values()
                            if id(function) in flow.closures), None)
        signature = (tuple(sorted(arguments.items())), caller.abstract, caller.static_leaves,
                     frozenset(closure.items()) if closure else None)
        return self.summaries.get(function, signature)

    def transformed_outputs(self, expr: cst.BaseExpression, call: cst.Call, flow: ValueFlow) -> Value | None:
        """`jax.jit(f)(x)` under a trace, `f` a function of the module: what `f` returns when it is
        traced with these arguments, where that is a traced array; None when not known."""
        scope = self.scopes.get(id(flow.scope_node), self.ctx.module_scope)
        callee = self.callee(expr, scope)
        if callee is None or callee.prefix or callee.receiver:
            return None
        return self._traced_outputs(callee.function, self.argument_kinds(callee.function, call, flow))

    def _traced_outputs(self, function: FunctionNode, arguments: dict[str, Kind]) -> Value | None:
        """The outputs of a transform that traces `function` (jit, vmap, checkpoint) under an outer
        trace, when its summary says it returns a traced array (a tuple or a pytree stays unknown)."""
        returned = self.summaries.get(function, (tuple(sorted(arguments.items())), True, False, None))
        return returned if returned.kind in (Kind.ARRAY, Kind.BOOL) else None

    def _summarise(self, function: FunctionNode, signature) -> Value:
        arguments, abstract, static_leaves, closure = signature
        external = self.external.get(id(function))
        if external is not None:
            returned = self.project.returned(external.ref, (arguments, abstract, static_leaves, None))
            return returned if returned is not None else NOTHING
        initial: dict[str, Value] = dict(closure or ())
        containers = _container_params(function)
        for param in _params(function):
            initial[param] = NOTHING
        static = self._static_params(function)
        for param, kind in arguments:
            if param not in static:
                initial[param] = PLAIN[Kind.CONTAINER] if kind.traced and param in containers else PLAIN[kind]
        scope = self.scopes.get(id(function), self.ctx.module_scope)
        flow = ValueFlow(self, function, initial, abstract, self._resolver(scope), static_leaves)
        flow.run(function)
        return flow.returned if flow.returned is not None else NOTHING

    def _static_params(self, function: FunctionNode) -> frozenset[str]:
        """Parameters annotated with a class of the module registered as a static pytree
        (`@jax.tree_util.register_static`): JAX passes them through as they are, never traced."""
        key = id(function)
        found = self._static_param_names.get(key)
        if found is None and key in self.external:
            found = self._static_param_names[key] = frozenset()  # the other module's classes: not known here
        if found is None:
            scope = self.scopes.get(key)
            outer = scope.parent if scope is not None and scope.parent is not None else self.ctx.module_scope
            p = function.params
            found = frozenset(
                param.name.value for param in (*p.posonly_params, *p.params, *p.kwonly_params)
                if param.annotation is not None and self._static_class(param.annotation.annotation, outer))
            self._static_param_names[key] = found
        return found

    def _static_class(self, annotation: cst.BaseExpression, scope: Scope) -> bool:
        if isinstance(annotation, cst.SimpleString) and isinstance(annotation.evaluated_value, str) \
                and annotation.evaluated_value.isidentifier():
            annotation = cst.Name(annotation.evaluated_value)  # `config: "Config"`
        cls = self._class_named(annotation, scope) if isinstance(annotation, cst.Name) else None
        if cls is None or cls.scope.parent is None:
            return False
        resolve = self._resolver(cls.scope.parent)
        return any(resolve(d.decorator) in STATIC_PYTREE_REGISTRATIONS for d in cls.node.decorators)

    def _object_attributes(self, function: FunctionNode, param: str) -> tuple[tuple[str, Kind], ...] | None:
        """The kinds of the attributes of a traced parameter whose class is known and keeps its
        non-array attributes static (a flax.nnx module): its class is the parameter's annotation,
        or the class every call of the function passes an instance of. None when not known."""
        if type(function) is cst.Lambda or id(function) in self.external:
            return None
        scope = self.scopes.get(id(function))
        outer = scope.parent if scope is not None and scope.parent is not None else self.ctx.module_scope
        annotation = next((p.annotation for p in (*function.params.posonly_params, *function.params.params,
                                                  *function.params.kwonly_params) if p.name.value == param), None)
        classes: set[int] = set()
        found: list[_Class] = []
        if annotation is not None:
            cls = self._class_named(annotation.annotation, outer) if isinstance(annotation.annotation, cst.Name) else None
            if cls is None:
                return None
            found.append(cls)
        else:
            sites = [*self.call_sites.get(id(function), ())]
            for use in self.applications.get(id(function), ()):
                sites.extend(use.sites or ())
            for site in sites:
                passed = site.bind().get(param)
                call_scope = self.call_scopes.get(id(site.call))
                if passed is None or passed.how is not Passing.ARGUMENT or call_scope is None \
                        or not isinstance(passed.values[0], cst.Name):
                    return None
                instance = self._instance_of(passed.values[0], call_scope)
                if instance is None or instance[1] != "instance":
                    return None
                if id(instance[0]) not in classes:
                    classes.add(id(instance[0]))
                    found.append(instance[0])
        if len(found) != 1:
            return None
        return self._pytree_attributes_of(found[0])

    def _pytree_attributes_of(self, cls: _Class) -> tuple[tuple[str, Kind], ...] | None:
        """For a class of the module derived from flax.nnx's pytree classes (whose attributes are
        static unless they hold arrays or Variables): the attributes known to hold data, and their
        kind; the others are static, or not known to be data, and not reported."""
        key = id(cls.node)
        if key in self._pytree_attributes:
            return self._pytree_attributes[key]
        self._pytree_attributes[key] = None
        chain = list(self._bases(cls, stop_outside=False))
        if not any(self._external_bases(c) & NNX_PYTREE_BASES for c in chain):
            return None
        values: dict[str, list[cst.BaseExpression | None]] = {}
        for c in chain:
            for attr, assigned in c.instance_values.items():
                values.setdefault(attr, []).extend(assigned)
        resolve = self._resolver(self.ctx.module_scope)
        data = []
        for attr, assigned in sorted(values.items()):
            kinds = {_data_kind(v, resolve) for v in assigned}
            if len(kinds) == 1 and None not in kinds:
                data.append((attr, kinds.pop()))
        self._pytree_attributes[key] = tuple(data)
        return self._pytree_attributes[key]

    def _external_bases(self, cls: _Class) -> set[str]:
        parent = cls.scope.parent
        if parent is None:
            return set()
        resolve = self._resolver(parent)
        return {name for arg in cls.node.bases if arg.keyword is None for name in [resolve(arg.value)] if name}

    def _nested(self, function: FunctionNode) -> bool:
        scope = self.scopes.get(id(function))
        return scope is not None and scope.parent is not None and scope.parent.kind == "function"

    def _decorator_wrapper(self, function: FunctionNode) -> str | None:
        """`@jax.jit` / `@partial(jax.grad, has_aux=True)`: what calling the decorated function returns."""
        key = id(function)
        if key in self.external and key not in self._wrappers:
            self._wrappers[key] = self.project.wrapper(self.external[key].ref)
        if key not in self._wrappers:
            found = None
            scope = self.scopes.get(key)
            outer = scope.parent if scope is not None and scope.parent is not None else self.ctx.module_scope
            for decorator in getattr(function, "decorators", ()):
                use = self.transform_use(decorator.decorator, outer)
                if use is not None and use.transform in TRANSFORM_WRAPPERS:
                    found = TRANSFORM_WRAPPERS[use.transform]
                    if found in ("grad", "value_and_grad") and _is_true(use.keywords.get("has_aux")):
                        found += "+aux"
            self._wrappers[key] = found
        return self._wrappers[key]

    def module_wrapper(self, name: str) -> Value:
        """A module-level name bound only to a transformed function (`fast = jax.jit(f)`)."""
        found = self._module_wrappers.get(name)
        if found is None:
            found = NOTHING
            values = ModuleState.of(self.ctx).module_values(name)
            if values and all(isinstance(v, cst.Call) for v in values):
                resolve = self._resolver(self.ctx.module_scope)
                wrappers = {wrapper_of(resolve(v.func), v, resolve) if resolve(v.func) in TRANSFORM_WRAPPERS else None
                            for v in values}
                if len(wrappers) == 1 and None not in wrappers:
                    found = Value(Kind.NONE, wrapper=wrappers.pop())
            self._module_wrappers[name] = found
        return found

    def static_fields(self) -> frozenset[str]:
        """Field names that classes of the module declare static (never pytree leaves)."""
        if self._static_fields is None:
            self._static_fields = static_field_names(self.ctx.module)
        return self._static_fields

    def function_called(self, func: cst.BaseExpression, call: cst.Call, flow: ValueFlow) -> FunctionNode | None:
        """The function of the module `call` runs directly (resolved once, after the collection walk);
        None for calls of a transform's wrapper, of other modules, or when the target is not certain."""
        callee = self.callees.get(id(call))
        return callee.function if callee is not None else None

    def argument_kinds(self, function: FunctionNode, call: cst.Call, flow: ValueFlow) -> dict[str, Kind]:
        """The kind each parameter of `function` receives at `call` (those it is given, defaults aside),
        from the kinds `flow.kinds` holds for the argument expressions (and for the arguments a
        `functools.partial` bound first). `self`/`cls` of a method is never counted as traced."""
        callee = self.callees.get(id(call))
        if callee is None or callee.function is not function:
            callee = Callee(function)
        kinds = {name: _passed_kind(passed, lambda e: flow.kinds.get(id(e), Kind.NONE))
                 for name, passed in callee.bind(call.args).items()}
        if id(function) in self.methods:
            positional = _positional(function)
            if positional:
                kinds[positional[0]] = Kind.NONE
        return kinds


def _function_scope(scope: Scope | None) -> Scope | None:
    """The function scope a scope is in (through comprehensions), or None at class or module level."""
    while scope is not None and scope.kind == "comprehension":
        scope = scope.parent
    return scope if scope is not None and scope.kind == "function" else None


def _passed_kind(passed: Passed, kind_of) -> Kind:
    """The kind of what a parameter receives, from the kinds of the argument expressions."""
    if passed.how is Passing.PACKED:
        inner = max((kind_of(e) for e in (*passed.values, *passed.spread)), default=Kind.NONE)
        return Kind.CONTAINER if inner.traced or inner == Kind.CONTAINER else Kind.NONE
    if passed.how is Passing.ARGUMENT:
        return kind_of(passed.values[0])
    if passed.how is Passing.SPREAD:
        kinds = [kind_of(e) for e in passed.values]
        kinds += [Kind.PARAM if kind_of(e).traced or kind_of(e) == Kind.CONTAINER else Kind.NONE for e in passed.spread]
        return max(kinds, default=Kind.NONE)
    return Kind.NONE


class _Collector:
    """The collection: functions, classes, transforms applied to functions, and calls, in source order."""

    ctx: ReplayState

    def __init__(self, traced: TracedFunctions, scopes: dict[int, Scope]) -> None:
        self.traced = traced
        #: the scopes of the semantic model's walk, which the rules' replay of it shares: a name is
        #: then resolved once for both (the resolver remembers one scope per node)
        self.scopes = scopes
        #: id(Call) -> the name it is assigned to (`fast = jax.jit(f)`)
        self._assigned_to: dict[int, cst.Name] = {}

    def _scope(self, node: cst.FunctionDef | cst.Lambda | cst.ClassDef) -> Scope:
        scope = self.scopes.get(id(node))
        return scope if scope is not None else Scope(node, self.ctx.scope)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.traced.classes[id(node)] = _Class(node, self._scope(node))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        traced, scope = self.traced, self.ctx.scope
        traced.functions.append(node)
        traced.scopes[id(node)] = self._scope(node)
        if scope.kind == "class":
            cls = traced.classes.get(id(scope.node))
            if cls is not None:
                traced.method_class[id(node)] = cls
            if not any(self.ctx.qualified_name(d.decorator) == "builtins.staticmethod" for d in node.decorators):
                traced.methods.add(id(node))
        for decorator in node.decorators:
            use = traced.transform_use(decorator.decorator, scope)
            if use is not None:
                traced.applications.setdefault(id(node), []).append(use)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.traced.functions.append(node)
        self.traced.scopes[id(node)] = self._scope(node)

    def visit_Call(self, node: cst.Call) -> None:
        traced, scope = self.traced, self.ctx.scope
        found = traced.application(node, scope)
        if found is not None:
            use, expressions = found
            target = self._assigned_to.get(id(node))
            if target is not None and any(isinstance(e, cst.Name) and e.value == target.value for e in expressions):
                traced.self_wraps.add(id(target))
            parent = self.ctx.parent
            deferred = len(traced._methods_given)
            for expr in expressions:
                for function, function_use in traced.functions_of(expr, scope, use):
                    traced.applications.setdefault(id(function), []).append(function_use)
                    traced._note_applied_in(scope, function, function_use)
                    if target is not None:  # calls of `fast` reach `f` through the wrapper
                        traced.aliases.setdefault((id(scope.node), target.value), []).append((function, function_use))
                    if isinstance(parent, cst.Call) and parent.func is node and function_use.sites is not None:
                        function_use.sites.append(CallSite(parent, Callee(function), function_use.bound_positional,
                                                           function_use.bound_keywords))
            for given in traced._methods_given[deferred:]:
                given.alias = (id(scope.node), target.value) if target is not None else None
                given.called_by = parent if isinstance(parent, cst.Call) and parent.func is node else None
        traced._calls.append((node, scope))
        if type(node.func) is cst.Attribute and node.func.attr.value == "param":
            traced._param_calls.append((node, scope))
        name = self.ctx.qualified_name(node.func)
        if name in HOST_CALLBACKS:
            for arg in node.args:
                self._mark_host_callback(arg.value, scope)
        elif name in TREE_MAPS:
            owner = _function_scope(scope)
            if owner is not None:
                traced._tree_maps.setdefault(id(owner.node), []).append((node, scope, TREE_MAPS[name]))

    def _mark_host_callback(self, expr: cst.BaseExpression, scope: Scope) -> None:
        if isinstance(expr, cst.Lambda):
            self.traced.host_callbacks.add(id(expr))
        elif isinstance(expr, cst.Name):
            found = scope.lookup(expr.value)
            if found is not None:
                self.traced.host_callbacks.update(id(n) for n in found[1].nodes if isinstance(n, cst.FunctionDef))
        elif isinstance(expr, cst.Call) and self.ctx.qualified_name(expr.func) in PARTIAL and expr.args:
            self._mark_host_callback(expr.args[0].value, scope)

    def visit_Assign(self, node: cst.Assign) -> None:
        """`fast = jax.jit(f)`, `agent = Agent(…)`, `step = partial(f, …)`; `self.x = …` in methods."""
        for target in node.targets:
            self._target(target.target, node.value)
        if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name:
            return
        if type(node.value) is cst.Call:
            self._assigned_to[id(node.value)] = node.targets[0].target
            self.traced.assigned_calls[id(node.targets[0].target)] = node.value
        elif type(node.value) is cst.Lambda:
            self.traced.assigned_lambdas[id(node.targets[0].target)] = node.value

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target, node.value)
        if type(node.target) is cst.Name and type(node.value) is cst.Call:
            self._assigned_to[id(node.value)] = node.target
            self.traced.assigned_calls[id(node.target)] = node.value

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def _target(self, target: cst.BaseExpression, value: cst.BaseExpression | None = None) -> None:
        """`self.act = …` inside a method: the instance attribute hides the method `act`."""
        if type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self._target(element.value)
            return
        if not (type(target) is cst.Attribute and type(target.value) is cst.Name):
            return
        scope = self.ctx.scope
        while scope is not None and scope.kind != "function":
            scope = scope.parent if scope.kind == "comprehension" else None
        cls = self.traced.method_class.get(id(scope.node)) if scope is not None else None
        if cls is not None and _positional(scope.node)[:1] == [target.value.value]:
            cls.instance_attributes.add(target.attr.value)
            cls.instance_values.setdefault(target.attr.value, []).append(value)


def _params(function: FunctionNode) -> list[str]:
    p = function.params
    names = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    names += sorted(_star_params(function))
    return names


#: Annotations of a parameter that is a Python container of arrays: its truthiness, length and
#: iteration are plain Python even when its leaves are traced.
CONTAINER_ANNOTATIONS = frozenset({
    "tuple", "Tuple", "list", "List", "dict", "Dict", "Sequence", "Mapping", "MutableMapping",
    "MutableSequence",
})


def _container_params(function: FunctionNode) -> set[str]:
    """`*args`, `**kwargs`, and parameters annotated as a tuple, list, dict, sequence or mapping."""
    p = function.params
    found = _star_params(function)
    for param in (*p.posonly_params, *p.params, *p.kwonly_params):
        annotation = param.annotation.annotation if param.annotation is not None else None
        if type(annotation) is cst.Subscript:
            annotation = annotation.value
        if type(annotation) is cst.Attribute:
            annotation = annotation.attr
        if type(annotation) is cst.Name and annotation.value in CONTAINER_ANNOTATIONS:
            found.add(param.name.value)
    return found


def _positional(function: FunctionNode) -> list[str]:
    p = function.params
    return [x.name.value for x in (*p.posonly_params, *p.params)]


def _keyword_only(function: FunctionNode) -> list[str]:
    return [x.name.value for x in function.params.kwonly_params]


def _star_params(function: FunctionNode) -> set[str]:
    p = function.params
    return {s.name.value for s in (p.star_arg, p.star_kwarg) if type(s) is cst.Param}


def _has_default(function: FunctionNode, name: str) -> bool:
    p = function.params
    return any(x.name.value == name and x.default is not None for x in (*p.posonly_params, *p.params, *p.kwonly_params))


def _data_kind(value: cst.BaseExpression | None, resolve) -> Kind | None:
    """What an attribute assigned `value` holds under a trace, when it is a pytree leaf of a flax.nnx
    module: a Variable (whose value is traced), or an array; None for anything else."""
    if not isinstance(value, cst.Call):
        return None
    callee = resolve(value.func)
    if callee in NNX_VARIABLES:
        return Kind.TREE
    if callee is not None and callee.startswith(ARRAY_MODULES) and callee not in STATIC_CALLS:
        return Kind.ARRAY
    return None


def literal_keywords(args: Iterable[cst.Arg]) -> tuple[tuple[str, bool], ...]:
    """The keywords of a call bound to Python literals (`check=False`, `mode="fast"`), with their truthiness."""
    found = []
    for arg in args:
        truth = _literal_truth(arg.value) if arg.keyword is not None else None
        if truth is not None:
            found.append((arg.keyword.value, truth))
    return tuple(found)


def _literal_truth(node: cst.BaseExpression) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return node.value == "True"
    if isinstance(node, cst.Integer):
        return int(node.value, 0) != 0
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return bool(node.evaluated_value)
    return None


def _is_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _ints(node: cst.BaseExpression | None) -> list[int]:
    if node is None:
        return []
    if isinstance(node, cst.Integer):
        return [int(node.value)]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return [-int(node.expression.value)]
    if isinstance(node, (cst.Tuple, cst.List)):
        return [n for e in node.elements for n in _ints(e.value)]
    return []


def _strings(node: cst.BaseExpression | None) -> list[str]:
    if node is None:
        return []
    if isinstance(node, cst.SimpleString):
        return [node.evaluated_value] if isinstance(node.evaluated_value, str) else []
    if isinstance(node, (cst.Tuple, cst.List)):
        return [s for e in node.elements for s in _strings(e.value)]
    return []


def _name(function: FunctionNode) -> str:
    return function.name.value if isinstance(function, cst.FunctionDef) else "<lambda>"
