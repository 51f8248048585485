"""Which functions JAX traces, how, with which parameters traced, and the value kinds inside them.

Computed once per file, on the first question a rule asks:
1. a walk collects every function, every transform applied to one (decorators, `jax.jit(f)`,
   `lax.scan(body, …)`, lambdas), and every call site of module functions;
2. each traced function's body is interpreted (`values.ValueFlow`); calls it makes to other
   functions of the module with traced arguments make those traced too (to a fixed depth).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

import libcst as cst

from ..dataflow import Summaries
from .jax_names import JIT_FAMILY, PARTIAL
from .module_state import ModuleState
from .scopes import Scope
from .values import (
    NOTHING, PLAIN, STATIC_LEAF_TRANSFORMS, TRANSFORM_WRAPPERS, Kind, Value, ValueFlow, static_field_names,
)

if TYPE_CHECKING:
    from ..context import FileContext

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
}
#: Functions handed to these run on the host when the compiled code runs, not while JAX traces.
HOST_CALLBACKS = frozenset({
    "jax.debug.callback", "jax.pure_callback", "jax.experimental.io_callback",
    "jax.experimental.host_callback.id_tap", "jax.experimental.host_callback.call",
    "jax.experimental.host_callback.id_print",
})
MAX_CALL_DEPTH = 3
ABSTRACT_MODES = frozenset({"jit", "lax", "vmap", "abstract"})
RUNS_ONCE_MODES = frozenset({"jit", "lax"})


@dataclass
class TraceInfo:
    node: FunctionNode
    #: how it is traced: transform names (`jax.jit`, `jax.lax.scan`, `called from f`)
    transforms: list[str] = field(default_factory=list)
    modes: set[str] = field(default_factory=set)
    traced_params: set[str] = field(default_factory=set)
    depth: int = 0
    #: functions of the module that call this one while they are traced
    callers: list[str] = field(default_factory=list)

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
    #: a lax body or a lambda: JAX passes every parameter
    all_params: bool = False


class TracedFunctions:
    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx
        self.infos: dict[int, TraceInfo] = {}
        self.flows: dict[int, ValueFlow] = {}
        self.scopes: dict[int, Scope] = {}
        self.functions: list[FunctionNode] = []
        self.methods: set[int] = set()
        self.call_sites: dict[int, list[cst.Call]] = {}
        self.applications: dict[int, list[_Application]] = {}
        #: (scope node id, name) -> functions a name was bound to through a transform (`fast = jax.jit(f)`)
        self.aliases: dict[tuple[int, str], list[FunctionNode]] = {}
        #: id(Name target) of `f = jax.jit(f, …)`: the name still stands for the same function, transformed
        self.self_wraps: set[int] = set()
        #: id() of functions handed to a host callback (`jax.debug.callback(log, x)`)
        self.host_callbacks: set[int] = set()
        #: what functions of the module return, by (function, argument kinds, caller's trace)
        self.summaries: Summaries[Value] = Summaries(self._summarise, NOTHING)
        self._wrappers: dict[int, str | None] = {}
        self._module_wrappers: dict[str, Value] = {}
        self._static_fields: frozenset[str] | None = None
        self._collect()
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
        from ..context import Walker

        collector = _Collector(self)
        walk_ctx = self.ctx.sibling()
        collector.ctx = walk_ctx
        self.walk_ctx = walk_ctx
        Walker(walk_ctx, [collector]).run(self.ctx.module)

    def application(self, call: cst.Call, scope: Scope) -> tuple[_Application, list[cst.BaseExpression]] | None:
        """A transform applied to functions by this call, and the function expressions it is given."""
        resolve = self._resolver(scope)
        callee = resolve(call.func)
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
            return use, [positional[0]]
        if callee in MODES and positional:
            return _Application(callee, MODES[callee], keywords, positional[1:]), [positional[0]]
        return None

    def transform_use(self, expr: cst.BaseExpression, scope: Scope) -> _Application | None:
        """`jax.jit`, `partial(jax.jit, …)` or `jax.jit(static_argnames=…)` used as a decorator."""
        resolve = self._resolver(scope)
        name = resolve(expr)
        extra = set(self.ctx.settings.extra_traced_decorators)
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
        if isinstance(expr, cst.Lambda):
            return [(expr, use)]
        if isinstance(expr, cst.Name):
            found = scope.lookup(expr.value)
            if found is None or not all(
                    isinstance(n, cst.FunctionDef) or id(n) in self.self_wraps for n in found[1].nodes):
                return []  # rebound (`f = partial(f, flag=True)`): what it holds is not known here
            return [(node, use) for node in found[1].nodes if isinstance(node, cst.FunctionDef)]
        if isinstance(expr, cst.Call):
            resolve = self._resolver(scope)
            if resolve(expr.func) in PARTIAL and expr.args and expr.args[0].keyword is None:
                bound = [a for a in expr.args[1:] if a.keyword is None]
                use.bound_positional += len(bound)
                use.bound_keywords |= {a.keyword.value for a in expr.args if a.keyword is not None}
                return self.functions_of(expr.args[0].value, scope, use)
            inner = self.application(expr, scope)
            if inner is not None:  # jax.vmap(jax.grad(f)): f is also under the outer transform
                return [pair for e in inner[1] for pair in self.functions_of(e, scope, use)]
        return []

    def _resolver(self, scope: Scope):
        names = self.ctx.names
        return lambda expr: names.qualified_name(expr, scope)

    # -- analysis -------------------------------------------------------------------------------
    def _analyse(self) -> None:
        for function in self.functions:
            for use in self.applications.get(id(function), ()):
                info = self.infos.setdefault(id(function), TraceInfo(function))
                info.transforms.append(use.transform)
                info.modes.add(use.mode)
                info.traced_params |= self._traced_params(function, use)
        pending = [f for f in self.functions if id(f) in self.infos]
        runs = 0
        while pending and runs < 200:
            runs += 1
            function = pending.pop(0)
            info = self.infos[id(function)]
            flow = self._traced_flow(function, info)
            self.flows[id(function)] = flow
            for callee, arguments in flow.calls:
                if info.depth >= MAX_CALL_DEPTH:
                    continue
                traced = {name for name, kind in arguments.items() if kind.traced}
                if not traced:
                    continue
                target = self.infos.setdefault(id(callee), TraceInfo(callee, depth=info.depth + 1))
                changed = not traced <= target.traced_params or not info.modes <= target.modes
                if changed:
                    target.traced_params |= traced
                    target.modes |= info.modes
                    target.transforms.append(info.label)
                    target.callers.append(_name(function))
                    if callee not in pending:
                        pending.append(callee)

        self._inherit_enclosing_trace()

    def _inherit_enclosing_trace(self) -> None:
        """A function defined inside a traced one runs under the same trace whenever it runs (called
        there, or handed to `jax.tree.map` or a Python loop) — unless it is a host callback.
        Its parameters stay unknown; the traced values it closes over are known from the outer flow."""
        for function in self.functions:  # source order: an enclosing function comes first
            if id(function) in self.host_callbacks:
                continue
            scope = self.scopes.get(id(function))
            outer = scope.parent if scope is not None else None
            while outer is not None and outer.kind == "comprehension":
                outer = outer.parent
            if outer is None or outer.kind != "function":
                continue
            outer_info = self.infos.get(id(outer.node))
            if outer_info is None:
                continue
            own = self.infos.get(id(function))
            if own is not None:  # `jax.grad(loss)` inside a jitted step: also under the step's trace
                if not outer_info.modes <= own.modes:
                    own.modes |= outer_info.modes
                    own.transforms.insert(0, outer_info.label)
                    self.flows[id(function)] = self._traced_flow(function, own)
                continue
            info = TraceInfo(function, transforms=[outer_info.label], modes=set(outer_info.modes),
                             depth=outer_info.depth, callers=[_name(outer.node)])
            self.infos[id(function)] = info
            self.flows[id(function)] = self._traced_flow(function, info)

    def _traced_flow(self, function: FunctionNode, info: TraceInfo) -> ValueFlow:
        initial = {}
        for flow in list(self.flows.values()):
            if id(function) in flow.closures:
                initial.update(flow.closures[id(function)])
        containers = _container_params(function)
        for param in _params(function):
            if param not in info.traced_params:
                initial[param] = Kind.NONE
            else:
                initial[param] = Kind.CONTAINER if param in containers else Kind.PARAM
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
        if use.mode == "jit":
            traced = every - self._static(function, use, positional)
        elif use.mode == "vmap":
            traced = self._mapped(use, positional, every)
        elif use.mode == "grad":
            traced = self._differentiated(use, positional)
        else:
            traced = every
        return {p for p in traced if p != receiver and self._passed(function, p, positional)}

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

    def _passed(self, function: FunctionNode, param: str, positional: list[str]) -> bool:
        """A parameter with a default is only known to be traced when some call site passes it."""
        if isinstance(function, cst.Lambda) or not _has_default(function, param):
            return True
        index = _positional(function).index(param) if param in _positional(function) else None
        for call in self.call_sites.get(id(function), ()):
            given = [a for a in call.args if a.keyword is None and not a.star]
            if index is not None and len(given) > index:
                return True
            if any(a.keyword is not None and a.keyword.value == param for a in call.args):
                return True
        return False

    # -- used by ValueFlow ---------------------------------------------------------------------
    def call_result(self, function: FunctionNode, arguments: dict[str, Kind], caller: ValueFlow) -> Value:
        """What a call of a function of the module returns, given the kinds of its arguments: a
        transformed function's outputs are arrays (traced under a trace); others are summarised."""
        wrapper = self._decorator_wrapper(function)
        if wrapper is not None:
            return caller.wrapper_result(wrapper, max(arguments.values(), default=Kind.NONE))
        closure = caller.closures.get(id(function))
        if closure is None and self._nested(function):
            closure = next((flow.closures[id(function)] for flow in self.flows.values()
                            if id(function) in flow.closures), None)
        signature = (tuple(sorted(arguments.items())), caller.abstract, caller.static_leaves,
                     frozenset(closure.items()) if closure else None)
        return self.summaries.get(function, signature)

    def _summarise(self, function: FunctionNode, signature) -> Value:
        arguments, abstract, static_leaves, closure = signature
        initial: dict[str, Value] = dict(closure or ())
        containers = _container_params(function)
        for param in _params(function):
            initial[param] = NOTHING
        for param, kind in arguments:
            initial[param] = PLAIN[Kind.CONTAINER] if kind.traced and param in containers else PLAIN[kind]
        scope = self.scopes.get(id(function), self.ctx.module_scope)
        flow = ValueFlow(self, function, initial, abstract, self._resolver(scope), static_leaves)
        flow.run(function)
        return flow.returned if flow.returned is not None else NOTHING

    def _nested(self, function: FunctionNode) -> bool:
        scope = self.scopes.get(id(function))
        return scope is not None and scope.parent is not None and scope.parent.kind == "function"

    def _decorator_wrapper(self, function: FunctionNode) -> str | None:
        """`@jax.jit` / `@partial(jax.grad, has_aux=True)`: what calling the decorated function returns."""
        key = id(function)
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
                wrappers = {TRANSFORM_WRAPPERS.get(resolve(v.func)) for v in values}
                if len(wrappers) == 1 and None not in wrappers:
                    found = Value(Kind.NONE, wrapper=wrappers.pop())
            self._module_wrappers[name] = found
        return found

    def static_fields(self) -> frozenset[str]:
        """Field names that classes of the module declare static (never pytree leaves)."""
        if self._static_fields is None:
            self._static_fields = static_field_names(self.ctx.module)
        return self._static_fields

    def function_called(self, func: cst.BaseExpression, call: cst.Call, flow: ValueFlow) -> cst.FunctionDef | None:
        if not isinstance(func, cst.Name):
            return None
        scope = self.scopes.get(id(flow.scope_node), self.ctx.module_scope)
        found = scope.lookup(func.value)
        if found is None:
            return None
        defs = [n for n in found[1].nodes if isinstance(n, cst.FunctionDef)]
        return defs[-1] if len(defs) == len(found[1].nodes) and defs else None

    def argument_kinds(self, function: cst.FunctionDef, call: cst.Call, flow: ValueFlow) -> dict[str, Kind]:
        kinds: dict[str, Kind] = {}
        positional = _positional(function)
        index = 0
        for arg in call.args:
            kind = flow.kinds.get(id(arg.value), Kind.NONE)
            if arg.star:
                continue
            if arg.keyword is not None:
                kinds[arg.keyword.value] = kind
            elif index < len(positional):
                kinds[positional[index]] = kind
                index += 1
        return kinds


class _Collector:
    """The collection walk: functions, transforms applied to them, and call sites."""

    ctx: "FileContext"

    def __init__(self, traced: TracedFunctions) -> None:
        self.traced = traced

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        traced, scope = self.traced, self.ctx.scope
        traced.functions.append(node)
        traced.scopes[id(node)] = Scope(node, scope)
        if scope.kind == "class" and not any(
            self.ctx.qualified_name(d.decorator) == "builtins.staticmethod" for d in node.decorators
        ):
            traced.methods.add(id(node))
        for decorator in node.decorators:
            use = traced.transform_use(decorator.decorator, scope)
            if use is not None:
                traced.applications.setdefault(id(node), []).append(use)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.traced.functions.append(node)
        self.traced.scopes[id(node)] = Scope(node, self.ctx.scope)

    def visit_Call(self, node: cst.Call) -> None:
        traced, scope = self.traced, self.ctx.scope
        found = traced.application(node, scope)
        if found is not None:
            use, expressions = found
            for expr in expressions:
                for function, function_use in traced.functions_of(expr, scope, use):
                    traced.applications.setdefault(id(function), []).append(function_use)
                    parent = self.ctx.parent
                    if isinstance(parent, cst.Call) and parent.func is node:
                        traced.call_sites.setdefault(id(function), []).append(parent)
        if isinstance(node.func, cst.Name):
            for function in self._called_functions(node.func, scope):
                traced.call_sites.setdefault(id(function), []).append(node)
        if self.ctx.qualified_name(node.func) in HOST_CALLBACKS:
            for arg in node.args:
                self._mark_host_callback(arg.value, scope)

    def _mark_host_callback(self, expr: cst.BaseExpression, scope: Scope) -> None:
        if isinstance(expr, cst.Lambda):
            self.traced.host_callbacks.add(id(expr))
        elif isinstance(expr, cst.Name):
            found = scope.lookup(expr.value)
            if found is not None:
                self.traced.host_callbacks.update(id(n) for n in found[1].nodes if isinstance(n, cst.FunctionDef))
        elif isinstance(expr, cst.Call) and self.ctx.qualified_name(expr.func) in PARTIAL and expr.args:
            self._mark_host_callback(expr.args[0].value, scope)

    def _called_functions(self, name: cst.Name, scope: Scope) -> Iterable[cst.FunctionDef]:
        found = scope.lookup(name.value)
        if found is None:
            return ()
        owner, binding = found
        functions = [n for n in binding.nodes if isinstance(n, cst.FunctionDef)]
        # `step = jax.jit(step_impl)`: calls of `step` pass their arguments to `step_impl`.
        functions.extend(self.traced.aliases.get((id(owner.node), name.value), ()))
        return functions

    def visit_Assign(self, node: cst.Assign) -> None:
        """`fast = jax.jit(f)`: calls of `fast` are call sites of `f`."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        value = node.value
        if not isinstance(value, cst.Call):
            return
        found = self.traced.application(value, self.ctx.scope)
        if found is None:
            return
        use, expressions = found
        target = node.targets[0].target
        if any(isinstance(e, cst.Name) and e.value == target.value for e in expressions):
            self.traced.self_wraps.add(id(target))
        for expr in expressions:
            for function, _ in self.traced.functions_of(expr, self.ctx.scope, use):
                key = (id(self.ctx.scope.node), node.targets[0].target.value)
                self.traced.aliases.setdefault(key, []).append(function)


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
        if isinstance(annotation, cst.Subscript):
            annotation = annotation.value
        if isinstance(annotation, cst.Attribute):
            annotation = annotation.attr
        if isinstance(annotation, cst.Name) and annotation.value in CONTAINER_ANNOTATIONS:
            found.add(param.name.value)
    return found


def _positional(function: FunctionNode) -> list[str]:
    p = function.params
    return [x.name.value for x in (*p.posonly_params, *p.params)]


def _keyword_only(function: FunctionNode) -> list[str]:
    return [x.name.value for x in function.params.kwonly_params]


def _star_params(function: FunctionNode) -> set[str]:
    p = function.params
    return {s.name.value for s in (p.star_arg, p.star_kwarg) if isinstance(s, cst.Param)}


def _has_default(function: FunctionNode, name: str) -> bool:
    p = function.params
    return any(x.name.value == name and x.default is not None for x in (*p.posonly_params, *p.params, *p.kwonly_params))


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
