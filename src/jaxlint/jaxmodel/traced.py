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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

import libcst as cst

from ..dataflow import Summaries
from ..syntax.positions import node_spans
from ..syntax.walk import children
from .external import ExternalFunction, Seed, TraceStep
from ..syntax.arguments import Passed, Passing
from ..semantic.model import SemanticModel
from ..semantic.module_state import ModuleState
from ..semantic.scopes import Scope
from .values import (MUST, NOTHING, PLAIN, STATIC_LEAF_TRANSFORMS, TRANSFORM_WRAPPERS, UNKNOWN, Kind, State, Value,
                     ValueFlow, of_kind,
                     wrapper_of)
from .calls import Application, CallSite, Callee, ClassInfo, MethodGiven
from .signatures import assigned_lambda, container_params, function_name, function_scope, params_of, positional_params
from .transforms import ABSTRACT_MODES, LAX_LOOPS, RUNS_ONCE_MODES, is_true, literal_keywords
from .applications import TransformApplications
from .call_resolution import CallResolution
from .pytrees import PytreeAttributes
from .collection import Collector

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

FunctionNode = cst.FunctionDef | cst.Lambda
#: Bodies that run at another time than the block around them
_DEFINITIONS = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


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


class TracedFunctions(TransformApplications, CallResolution, PytreeAttributes):
    """Which functions of the file JAX traces, and the value kinds inside them; built in one go
    (collection, library traces, call resolution, analysis). Finding the transforms applied
    (`applications`), resolving calls (`call_resolution`) and knowing which attributes of traced
    objects are leaves (`pytrees`) are written in modules of their own."""

    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        #: the project's own transforms (`extend-transforms`, `extra-traced-decorators`): name -> (mode, leaves)
        self.extra_wrappers = ctx.settings.declared_transforms()
        self.infos: dict[int, TraceInfo] = {}
        self.flows: dict[int, ValueFlow] = {}
        self.scopes: dict[int, Scope] = {}
        self.functions: list[FunctionNode] = []
        self.methods: set[int] = set()
        #: id(function) -> the calls that reach it (by name, as a method, through a partial or a wrapper)
        self.call_sites: dict[int, list[CallSite]] = {}
        #: id(call) -> the function of the module it calls directly
        self.callees: dict[int, Callee] = {}
        self.applications: dict[int, list[Application]] = {}
        #: id(application) -> the call that applies the transform (`jax.vmap(f)`), where one does
        self.application_calls: dict[int, cst.Call] = {}
        #: id(application) -> where it is written: its decorator, or its call (`jax.jit(self.step)`)
        self.applied_by: dict[int, cst.Decorator | cst.Call] = {}
        #: (scope node id, name) -> functions a name was bound to through a transform (`fast = jax.jit(f)`)
        self.aliases: dict[tuple[int, str], list[tuple[FunctionNode, Application]]] = {}
        #: id(Name target) of `f = jax.jit(f, …)`: the name still stands for the same function, transformed
        self.self_wraps: set[int] = set()
        #: id() of functions handed to a host callback (`jax.debug.callback(log, x)`)
        self.host_callbacks: set[int] = set()
        #: id(ClassDef) -> the class; id(method) -> its class
        self.classes: dict[int, ClassInfo] = {}
        self.method_class: dict[int, ClassInfo] = {}
        #: id(Name target) -> the call assigned to it (`agent = Agent(…)`, `step = partial(f, …)`)
        self.assigned_calls: dict[int, cst.Call] = {}
        #: id(Name target) -> the lambda assigned to it (`relu = lambda x: …`)
        self.assigned_lambdas: dict[int, cst.Lambda] = {}
        #: id(function) -> the functions defined directly inside it (comprehensions are looked through)
        self.nested: dict[int, list[FunctionNode]] = {}
        self.enclosing: dict[int, FunctionNode] = {}
        self._calls: list[tuple[cst.Call, Scope]] = []
        #: (`model.apply`, its scope) given to each `TrainState.create` of the module, once the walk is over
        self._train_state_models: list[tuple[cst.Attribute, Scope]] = []
        #: id(function) -> `jax.tree.map` calls in its body, with their scope and the non-leaf parameter count
        self._tree_maps: dict[int, list[tuple[cst.Call, Scope, int]]] = {}
        self._subclasses: dict[int, list[ClassInfo]] | None = None
        self._methods_given: list[MethodGiven] = []
        #: id(function) -> `functools.partial(f, …)` given to a transform in its body, with the scope
        self._partials_given: dict[int, list[tuple[cst.Call, Scope]]] = {}
        #: id(function) -> the functions transforms are applied to in its body, with the application
        self._applied_in: dict[int, list[tuple[FunctionNode, Application]]] = {}
        #: what functions of the module return, by (function, argument kinds, caller's trace)
        self.summaries: Summaries[Value] = Summaries(self._summarise, NOTHING)
        #: (traced function, entry state, trace) -> its run from that entry (`_run_once`)
        self._shared_runs: dict[tuple, ValueFlow] = {}
        self._wrappers: dict[int, str | None] = {}
        self._module_wrappers: dict[str, Value] = {}
        self._static_param_names: dict[int, frozenset[str]] = {}
        #: id(call) -> the scope it is made in
        self.call_scopes: dict[int, Scope] = {}
        self._pytree_attributes: dict[int, tuple[tuple[str, Kind], ...] | None] = {}
        self._declared_fields: dict[int, tuple[tuple[str, ...], frozenset[str]]] | None = None
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

    def lax_loop_bodies(self) -> list[tuple[FunctionNode, str]]:
        """The functions of the module a lax loop runs on every iteration (`lax.fori_loop(0, n, body,
        x)`, `lax.scan(step, carry, xs)`), each with the loop's name."""
        bodies = []
        for info in self.infos.values():
            loop = next((name for name in info.transforms if name in LAX_LOOPS), None)
            if info.depth == 0 and loop is not None:
                bodies.append((info.node, loop))
        return bodies

    def flow(self, function: FunctionNode | None) -> ValueFlow:
        """The value kinds of a scope: a traced function's, or a plain one's (computed on demand)."""
        key = id(function) if function is not None else id(self.ctx.module)
        if key not in self.flows:
            scope = self.scopes.get(key, self.ctx.module_scope)
            flow = ValueFlow(self, function or self.ctx.module, {}, False, self._resolver(scope))
            flow.run(function if function is not None else self.ctx.module)
            self.flows[key] = flow
        return self.flows[key]

    def value(self, expr: cst.BaseExpression, function: FunctionNode | None) -> Value:
        """What `expr` holds where `function` (None: the module's top level) evaluates it; UNKNOWN
        for an expression the flow never evaluated."""
        return self.flow(function).values.get(id(expr), UNKNOWN)

    def kind(self, expr: cst.BaseExpression, function: FunctionNode | None) -> Kind:
        """The older view of `value`."""
        return self.flow(function).kinds.get(id(expr), Kind.NONE)

    def computes_in(self, block: cst.CSTNode, function: FunctionNode | None, scope: Scope) -> bool:
        """Whether a block of `function` (a loop body) computes with traced values or calls JAX,
        outside the functions, classes and lambdas defined in it, its names read from `scope`; when
        it does neither, running it many times while tracing adds nothing to the program. One walk
        of the block at most, ended by the first such expression."""
        names = self.ctx.names
        pending = [block]
        while pending:
            node = pending.pop()
            if isinstance(node, _DEFINITIONS):
                continue
            if isinstance(node, cst.BaseExpression):
                if self.value(node, function).traced is MUST:
                    return True
                if isinstance(node, cst.Call):
                    name = names.qualified_name(node.func, scope)
                    if name is not None and name.startswith("jax."):
                        return True
            pending.extend(child for _, child in children(node))
        return False

    # -- collection -----------------------------------------------------------------------------
    def _collect(self) -> None:
        # a visitor replayed over the file's semantic record: no walk of its own
        model = SemanticModel.of(self.ctx)
        model.replay(Collector(self, model.scopes))


    def _resolver(self, scope: Scope):
        names = self.ctx.names
        return lambda expr: names.qualified_name(expr, scope)


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
            return node if isinstance(node, cst.FunctionDef) else assigned_lambda(node, binding.statements[0])
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
            return own, function_name(caller), site.call, own[0].transform if own else info.label
        applied = self._applied_at.get(id(stand_in))
        info = self.info(stand_in)
        if applied is not None and info is not None:
            node, scope = applied
            owner = function_scope(scope)
            outer = self.info(owner.node) if owner is not None else None
            if outer is not None and outer.chain:
                return outer.chain, function_name(owner.node), node, outer.chain[0].transform
            return (), function_name(owner.node) if owner is not None else "", node, info.label
        return None

    def function_of_call(self, call: cst.Call) -> FunctionNode | None:
        """The function whose body makes `call` (None: module level)."""
        return self._function_of_call(call)

    def _function_of_call(self, call: cst.Call) -> FunctionNode | None:
        scope = self.call_scopes.get(id(call))
        owner = function_scope(scope)
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
        if not traced and not under_trace and not receiver and not self.samples_latent(caller):
            return  # a model's helper runs under the inference's trace: its sample sites give tracers
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
            target.callers.append(function_name(caller))
            self._enqueue(callee)

    def _transformed_inside(self, function: FunctionNode, inner: FunctionNode, use: Application,
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
                                                 depth=outer_info.depth, callers=[function_name(outer)])
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
        containers = container_params(function)
        for param in params_of(function):
            kind = info.param_kinds.get(param, Kind.NONE)
            if kind.traced and param in containers:
                kind = Kind.CONTAINER
            initial[param] = kind
        for param, truth in (info.constants or {}).items():
            initial[param] = of_kind(Kind.NONE, truth=truth)
        static_leaves = any(t.startswith(STATIC_LEAF_TRANSFORMS) or self._array_leaves_only(t)
                            for t in info.transforms)
        for param, kind in info.param_kinds.items():
            attributes = self._object_attributes(function, param, static_leaves) if kind == Kind.PARAM else None
            if attributes is not None:
                initial[param] = of_kind(kind, attributes=attributes)
        positional = positional_params(function)
        if info.receiver is not None and id(function) in self.methods and positional:
            initial[positional[0]] = of_kind(Kind.NONE, attributes=info.receiver)
        scope = self.scopes.get(id(function), self.ctx.module_scope)
        flow = ValueFlow(self, function, initial, info.abstract, self._resolver(scope), static_leaves)
        return self._run_once(function, flow)


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
        containers = container_params(function)
        for param in params_of(function):
            initial[param] = NOTHING
        static = self._static_params(function)
        for param, kind in arguments:
            if param not in static:
                initial[param] = PLAIN[Kind.CONTAINER] if kind.traced and param in containers else PLAIN[kind]
        scope = self.scopes.get(id(function), self.ctx.module_scope)
        flow = ValueFlow(self, function, initial, abstract, self._resolver(scope), static_leaves)
        flow = self._run_once(function, flow)
        return flow.returned if flow.returned is not None else NOTHING

    def _run_once(self, function: FunctionNode, flow: ValueFlow) -> ValueFlow:
        """Runs `flow` over `function`, or gives the run made before from the same entry under the
        same trace: a traced function's flow and a call's summary are then one run. Only runs that
        no summary cut short (recursion, depth) are shared: those are the same wherever they start."""
        entry = _entry_key(function, flow)
        found = self._shared_runs.get(entry) if entry is not None else None
        if found is not None:
            return found
        cuts = self.summaries.cuts
        flow.run(function)
        if entry is not None and self.summaries.cuts == cuts and id(function) in self.infos:
            self._shared_runs[entry] = flow
        return flow


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
                    if found in ("grad", "value_and_grad") and is_true(use.keywords.get("has_aux")):
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
                    found = of_kind(Kind.NONE, wrapper=wrappers.pop())
            self._module_wrappers[name] = found
        return found


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
            positional = positional_params(function)
            if positional:
                kinds[positional[0]] = Kind.NONE
        return kinds


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


def _entry_key(function: FunctionNode, flow: ValueFlow) -> tuple | None:
    """What makes two runs of the value domain over `function` the same run: its entry state and
    the trace it runs under (None where a value of the entry cannot be compared)."""
    try:
        return id(function), frozenset(flow.initial.items()), flow.abstract, flow.static_leaves
    except TypeError:
        return None
