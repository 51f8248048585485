"""How a transform applied to a function of the module is recognised (a decorator, `jax.jit(f)`,
`partial(jax.jit, ...)`, a lax body, a method handed to a transform, a library's own tracing of a
method), and which of the function's parameters it traces."""
from __future__ import annotations

from dataclasses import replace

import libcst as cst

from .jax_names import PARTIAL
from ..semantic.model import SemanticModel
from ..semantic.scopes import Scope
from .calls import Application, CallSite, Callee, ClassInfo, MethodGiven
from .signatures import function_scope, has_default, keyword_only_params, params_of, positional_params, star_params
from .keys.tables import key_name_pattern
from .values.tables import ARRAY_ONLY_ATTRIBUTES
from .transforms import (FRAMEWORKS, LAX_BODIES, LIBRARY_TRACES, MODES, NUMPYRO_KERNELS, int_literals, literal_keywords,
                         string_literals)

FunctionNode = cst.FunctionDef | cst.Lambda
#: The last part of the qualified names of array types (`jax.Array`, `numpy.ndarray`, `chex.Array`,
#: `jaxtyping.PRNGKeyArray`).
ARRAY_TYPE_NAMES = frozenset({"Array", "ndarray", "ArrayImpl", "PRNGKeyArray"})


class TransformApplications:
    """The part of `traced.TracedFunctions` that finds the transforms applied to the module's functions
    and which parameters each traces (its state lives on `TracedFunctions`)."""

    def application(self, call: cst.Call, scope: Scope) -> tuple[Application, list[cst.BaseExpression]] | None:
        """A transform applied to functions by this call, and the function expressions it is given."""
        resolve = self._resolver(scope)
        callee = resolve(call.func)
        if callee not in LAX_BODIES and callee not in MODES and callee not in self.extra_wrappers \
                and callee not in LIBRARY_TRACES and type(call.func) is not cst.Call:
            return None  # most calls: no transform can be applied here (see `transform_use`)
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if callee in LIBRARY_TRACES:
            trace = LIBRARY_TRACES[callee]
            given = [positional[i] for i in trace.function_positions if i < len(positional)]
            given += [keywords[k] for k in trace.function_keywords if k in keywords]
            return Application(trace.label, trace.mode, {}, [], traced_positions=trace.traced), given
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
            return Application(callee, "lax", {}, [], all_params=True), expanded
        use = self.transform_use(call.func, scope)
        if use is not None and positional:
            use.keywords.update(keywords)
            use.extra_positional = positional[1:]
            use.sites = []
            return use, [positional[0]]
        if callee in MODES and positional:
            return Application(callee, MODES[callee], keywords, positional[1:], sites=[]), [positional[0]]
        return None

    def transform_use(self, expr: cst.BaseExpression, scope: Scope) -> Application | None:
        """`jax.jit`, `partial(jax.jit, …)` or `jax.jit(static_argnames=…)` used as a decorator."""
        resolve = self._resolver(scope)
        name = resolve(expr)
        extra = self.extra_wrappers
        if name in MODES:
            return Application(name, MODES[name], {}, [])
        if name in extra:
            return Application(name, extra[name][0], {}, [])
        if isinstance(expr, cst.Call):
            callee = resolve(expr.func)
            keywords = {a.keyword.value: a.value for a in expr.args if a.keyword is not None}
            positional = [a.value for a in expr.args if a.keyword is None]
            if callee in PARTIAL and positional:
                inner = resolve(positional[0])
                if inner in MODES or inner in extra:
                    return Application(inner, MODES[inner] if inner in MODES else extra[inner][0], keywords,
                                       positional[1:])
            if (callee in MODES or callee in extra) and not positional:
                return Application(callee, MODES[callee] if callee in MODES else extra[callee][0], keywords, [])
        return None

    def functions_of(self, expr: cst.BaseExpression, scope: Scope, use: Application) -> list[tuple[FunctionNode, Application]]:
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
                self._methods_given.append(MethodGiven(expr, scope, use))
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
                bound = expr.args[1:]
                if any(a.star == "*" for a in bound):
                    return []  # `partial(f, *args)`: which positional parameters it binds is not known
                # a copy: the branches of one `lax.cond` share the application
                use = use.bound_by(sum(1 for a in bound if a.keyword is None and not a.star),
                                   {a.keyword.value for a in bound if a.keyword is not None},
                                   literal_keywords(expr.args), mapping=any(a.star == "**" for a in bound))
                owner = function_scope(scope)
                if owner is not None:  # what it binds is known once the function around it is analysed
                    self._partials_given.setdefault(id(owner.node), []).append((expr, scope))
                return self.functions_of(expr.args[0].value, scope, use)
            inner = self.application(expr, scope)
            if inner is not None:  # jax.vmap(jax.grad(f)): f is also under the outer transform
                return [pair for e in inner[1] for pair in self.functions_of(e, scope, use)]
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            # `jax.jit(self.update)`, `lax.scan(agent.step, …)`: known once every class is collected
            self._methods_given.append(MethodGiven(expr, scope, use))
        return []


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
            method = function_scope(scope)
            cls = self.method_class.get(id(method.node)) if method is not None else None
            receiver = positional_params(method.node)[:1] if cls is not None else []
            if not receiver or not (isinstance(call.func.value, cst.Name) and call.func.value.value == receiver[0]):
                continue
            if "flax.linen.Module" not in self._library_bases(cls):
                continue
            given = [a.value for a in call.args if a.keyword is None and not a.star][1:2]
            given += [a.value for a in call.args if a.keyword is not None and a.keyword.value == "init_fn"]
            use = Application("flax.linen.Module.param", "abstract", {}, [], traced_positions=(0,))
            for expr in given:
                for function, function_use in self.functions_of(expr, scope, use):
                    self.applications.setdefault(id(function), []).append(function_use)
        for function in self.functions:
            cls = self.method_class.get(id(function))
            if cls is None or not isinstance(function, cst.FunctionDef) or function.name.value != "sample":
                continue
            if self._library_bases(cls) & NUMPYRO_KERNELS and id(function) in self.methods:
                use = Application("numpyro.infer.MCMC", "jit", {}, [], traced_positions=(1,))
                self.applications.setdefault(id(function), []).append(use)

    def _library_bases(self, cls: ClassInfo) -> set[str]:
        """The bases defined elsewhere of a class and of its bases defined in the file."""
        return {name for c in self._bases(cls, stop_outside=False) if c is not None for name in self._external_bases(c)}

    # -- which function a call reaches ------------------------------------------------------------
    def _resolve_calls(self) -> None:
        """After the walk, when every class, method and assignment of the module is known."""
        for given in self._methods_given:
            self._apply_to_method(given)
        self._methods_given = []
        self._note_train_states()
        for function in self.functions:
            scope = self.scopes.get(id(function))
            outer = function_scope(scope.parent if scope is not None else None)
            if outer is not None and id(function) not in self.host_callbacks:
                self.nested.setdefault(id(outer.node), []).append(function)
                self.enclosing[id(function)] = outer.node
        for call, scope in self._calls:
            self.call_scopes[id(call)] = scope
            callee = self.callee(call.func, scope, call=call) or self._constructor(call.func, scope)
            if callee is not None:
                self.callees[id(call)] = callee
                self.call_sites.setdefault(id(callee.function), []).append(CallSite(call, callee))
            if type(call.func) is cst.Name:  # `fast = jax.jit(f)`, then `fast(x)`
                found = scope.lookup(call.func.value)
                if found is None:
                    continue
                for function, use in self.aliases.get((id(found[0].node), call.func.value), ()):
                    site = CallSite(call, Callee(function, skip=use.skip, own_keywords=use.own_keywords),
                                    use.bound_positional, use.bound_keywords)
                    if use.sites is not None:
                        use.sites.append(site)
                    self.call_sites.setdefault(id(function), []).append(site)
        # `model(x)` where `model` is a parameter every call passes an instance of one class: known
        # once every call is (`nnx.value_and_grad(loss_fn)(model)` in a step, `loss_fn(model)`)
        for call, scope in self._calls:
            if id(call) not in self.callees and type(call.func) in (cst.Name, cst.Attribute):
                callee = self._through_parameter(call, scope)
                if callee is not None:
                    self.callees[id(call)] = callee
                    self.call_sites.setdefault(id(callee.function), []).append(CallSite(call, callee))
        self._calls = []

    def _apply_to_method(self, given: "MethodGiven") -> None:
        """A transform given a method or a name bound to a partial: a bound method passes `self`
        itself, a partial its arguments, before the wrapper's."""
        callee = self.callee(given.expr, given.scope)
        if callee is None:
            return
        positional = sum(1 for a in callee.prefix if a.keyword is None and not a.star)
        keywords = [a.keyword.value for a in callee.prefix if a.keyword is not None]
        if any(a.star == "*" for a in callee.prefix):
            return  # `partial(f, *args)`: which positional parameters it binds is not known
        use, function = given.use.bound_by(int(callee.receiver) + positional, keywords,
                                           literal_keywords(callee.prefix),
                                           mapping=any(a.star == "**" for a in callee.prefix)), callee.function
        if callee.skip or callee.own_keywords:
            use = replace(use, skip=callee.skip, own_keywords=callee.own_keywords)
        if id(function) in self.external:
            self._applied_at.setdefault(id(function), (given.expr, given.scope))
        self.applications.setdefault(id(function), []).append(use)
        if given.applied_by is not None:
            self.applied_by[id(use)] = given.applied_by
        self._note_applied_in(given.scope, function, use)
        if given.alias is not None:
            self.aliases.setdefault(given.alias, []).append((function, use))
        if given.called_by is not None and use.sites is not None:
            wrapper = Callee(function, skip=use.skip, own_keywords=use.own_keywords)
            use.sites.append(CallSite(given.called_by, wrapper, use.bound_positional,
                                      use.bound_keywords))

    def _note_applied_in(self, scope: Scope, function: FunctionNode, use: Application) -> None:
        owner = function_scope(scope)
        if owner is not None:
            self._applied_in.setdefault(id(owner.node), []).append((function, use))


    def _traced_params(self, function: FunctionNode, use: Application) -> set[str]:
        positional = positional_params(function)
        # self/cls: never known to be traced. A transform decorating a method wraps the plain function,
        # so `static_argnums`, `in_axes` and `argnums` count `self` as argument 0.
        receiver = positional[0] if id(function) in self.methods and positional else None
        positional = positional[use.bound_positional:]
        every = set(positional) | set(keyword_only_params(function)) | star_params(function)
        every -= use.bound_keywords
        if use.all_params:  # lax passes exactly the positional arguments its body needs
            return {p for p in every if not has_default(function, p) and p != receiver}
        if use.traced_positions is not None:
            return {positional[i] for i in use.traced_positions if i < len(positional) and positional[i] != receiver}
        if use.mode == "jit":
            traced = every - self._static(function, use, positional)
        elif use.mode == "vmap":
            traced = self._mapped(use, positional, every)
        elif use.mode == "grad":
            traced = differentiated_params(use, positional)
        else:
            traced = every
        traced = {p for p in traced if p != receiver and self._passed(function, p, use)}
        if use.bound_mapping:  # `partial(f, **options)`: a parameter the calls do not pass may be an option
            traced = {p for p in traced if self._passed_by_a_call(function, p, use)}
        if self._array_leaves_only(use.transform):
            traced = {p for p in traced if self._holds_arrays(function, p)}
        return traced

    def _array_leaves_only(self, transform: str) -> bool:
        """Whether the transform traces only the array leaves of its arguments (equinox's filtered
        transforms, a project's own declared so): a Python number, string, callable or None it is
        given stays as it is."""
        entry = FRAMEWORKS.transforms.get(transform)
        if entry is not None:
            return entry.leaves == "arrays"
        declared = self.extra_wrappers.get(transform)
        return declared is not None and declared[1] == "arrays"

    def _holds_arrays(self, function: FunctionNode, param: str) -> bool:
        """Whether a parameter must hold arrays (and so is traced by a transform that traces array
        leaves only): its annotation is an array type (`jax.Array`, jaxtyping's `Float[Array, "n"]`),
        it is read as an array (`x.shape`, `x.at[...]`), it is named as a PRNG key is, or its class is
        a pytree class of the module. Without such evidence it may be a Python value: not traced."""
        if type(function) is not cst.FunctionDef:
            return False
        annotation = next((p.annotation for p in (*function.params.posonly_params, *function.params.params,
                                                  *function.params.kwonly_params) if p.name.value == param), None)
        if annotation is not None and self._array_annotation(function, annotation.annotation):
            return True
        uses = SemanticModel.of(self.ctx).attribute_uses.get(id(function), ())
        if any((param, attribute) in uses for attribute in ARRAY_ONLY_ATTRIBUTES):
            return True
        if key_name_pattern(self.ctx.settings.key_names).fullmatch(param):
            return True
        return self._object_attributes(function, param) is not None

    def _array_annotation(self, function: FunctionNode, annotation: cst.BaseExpression) -> bool:
        scope = self.scopes.get(id(function))
        outer = scope.parent if scope is not None and scope.parent is not None else self.ctx.module_scope
        resolve = self._resolver(outer)
        if type(annotation) is cst.Subscript:  # jaxtyping: `Float[Array, "batch dim"]`
            wrapper = resolve(annotation.value)
            first = annotation.slice[0].slice
            return wrapper is not None and wrapper.startswith("jaxtyping.") and type(first) is cst.Index \
                and self._array_annotation(function, first.value)
        name = resolve(annotation)
        return name is not None and name.rpartition(".")[2] in ARRAY_TYPE_NAMES

    def _static(self, function: FunctionNode, use: Application, positional: list[str]) -> set[str]:
        static = self.static_params(function, use, positional)
        return set(params_of(function)) if static is None else static  # unknown: assume everything static

    def static_params(self, function: FunctionNode, use: Application, positional: list[str] | None = None) -> set[str] | None:
        """The parameters a jit-family application makes static (`static_argnums`, counted over the
        wrapper's arguments, `self` included for a decorated method; `static_argnames`); None when
        the numbers or names are computed elsewhere. `positional`: the parameters the wrapper's
        positional arguments reach (those after what a partial or a bound method fixed)."""
        if positional is None:
            positional = positional_params(function)[use.bound_positional:]
        static: set[str] = set()
        # `pmap` names its static positions `static_broadcasted_argnums`
        numbers = use.keywords.get("static_argnums", use.keywords.get("static_broadcasted_argnums"))
        for number in int_literals(numbers):
            # the numbers count the wrapper's arguments: `jax.jit(net.apply, static_argnums=2)` is the
            # second argument of the function, after the `params` that `apply` takes first
            if number >= 0:
                number -= use.skip
                if number < 0:
                    continue
            if -len(positional) <= number < len(positional):
                static.add(positional[number])
        names = use.keywords.get("static_argnames")
        static |= set(string_literals(names))
        if numbers is not None and not int_literals(numbers) or names is not None and not string_literals(names):
            return None
        return static

    def _mapped(self, use: Application, positional: list[str], every: set[str]) -> set[str]:
        axes = use.keywords.get("in_axes", use.extra_positional[0] if use.extra_positional else None)
        if axes is None:
            return every
        if isinstance(axes, cst.Name) and axes.value == "None":
            return set()
        if isinstance(axes, (cst.Integer, cst.UnaryOperation)):
            return every
        if isinstance(axes, (cst.Tuple, cst.List)):
            mapped = set()
            # the axes follow the wrapper's arguments: those a library takes first (`apply`'s
            # variables) come before the function's own
            for name, element in zip(positional, axes.elements[use.skip:]):
                if not (isinstance(element.value, cst.Name) and element.value.value == "None"):
                    mapped.add(name)
            return mapped
        return set()


    def _passed_by_a_call(self, function: FunctionNode, param: str, use: Application) -> bool:
        """Some call of the transformed function (of the wrapper this application made, or of the
        decorated name) gives `param` a value of its own."""
        sites = use.sites if use.sites is not None else self.call_sites.get(id(function), ())
        return any((passed := site.bind().get(param)) is not None and passed.explicit for site in sites)

    def _passed(self, function: FunctionNode, param: str, use: Application) -> bool:
        """A parameter with a default is only known to be traced when some call of the transformed
        function passes it: calls of the decorated name, or of the wrapper this application made."""
        if type(function) is cst.Lambda or not has_default(function, param):
            return True
        return self._passed_by_a_call(function, param, use)


def differentiated_params(use: Application, positional: list[str]) -> set[str]:
    """The parameters a grad-mode transform differentiates with respect to: those its `argnums` name
    (the first by default), among `positional` (the function's positional parameters after those a
    partial binds)."""
    argnums = use.keywords.get("argnums", use.extra_positional[0] if use.extra_positional else None)
    numbers = int_literals(argnums) if argnums is not None else [0]
    # counted over the wrapper's arguments: `jax.grad(model.apply)` differentiates the variables
    numbers = [n - use.skip if n >= 0 else n for n in numbers if n < 0 or n >= use.skip]
    return {positional[n] for n in numbers if -len(positional) <= n < len(positional)}
