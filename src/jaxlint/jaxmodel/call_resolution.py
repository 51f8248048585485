"""Which function of the module (or of another module of the project) a call reaches, when that is
certain: plain names, `functools.partial`, methods through `self`, a class or an instance,
`__call__`, haiku's transformed functions, constructors."""
from __future__ import annotations

from dataclasses import replace
from typing import Iterator

import libcst as cst

from .external import TABLE_PREFIXES
from ..syntax.arguments import Passing
from .jax_names import PARTIAL
from ..semantic.scopes import Binding, Scope
from .calls import Callee, ClassInfo, PLAIN_METHOD_DECORATORS
from .signatures import positional_params
from .transforms import (HAIKU_TRANSFORMS, LATENT_SAMPLING, LINEN_APPLY_KEYWORDS, LINEN_APPLY_METHODS, LINEN_MODULE_BASES,
                         PASS_THROUGH)

FunctionNode = cst.FunctionDef | cst.Lambda


#: flax's training state, whose `apply_fn` field holds the model's `apply`
TRAIN_STATE = "flax.training.train_state.TrainState"


class CallResolution:
    """The part of `traced.TracedFunctions` that resolves calls to the functions they reach (its state
    lives on `TracedFunctions`)."""

    def callee(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0,
               call: cst.Call | None = None) -> Callee | None:
        """The function of the module that calling `expr` runs, when it is certain; else None.
        `call`: the call of `expr` being resolved, where its arguments choose the function (Linen's
        `model.apply(variables, x, method=Model.encode)`); without it, `expr` as it is handed on.

        A plain name bound only to `def`s, a lambda, `functools.partial` of one, a method reached
        through `self`/`cls`, its class, a name bound only to an instance of a class of the module
        (`agent.act(x)`, `agent(x)` for `__call__`), or an instance made on the spot (`Agent(…).act(x)`).
        In a project, also a function of another module of it, imported by name or reached through
        its module (`losses.clipped_loss`), or a method of an instance of a class of another module
        (`model = MLP(…)`, then `model(x)`, `model.encode(x)`): a stand-in for it (`external`).
        """
        found = self._local_callee(expr, scope, depth, call)
        if found is None and self.project is not None and type(expr) in (cst.Name, cst.Attribute):
            return self._external_callee(expr, scope) or self._external_method(expr, scope)
        return found

    def callee_through_wrappers(self, func: cst.BaseExpression, scope: Scope, call: cst.Call | None = None,
                                depth: int = 0) -> Callee | None:
        """`callee`, also through the wrapper of a transform that hands the call's arguments on:
        `jax.jit(f)(...)`, or a name bound once to `jax.jit(f)` or `jax.pmap(partial(f, a), …)`."""
        if depth > 4:
            return None
        if type(func) is cst.Name:
            found = scope.lookup(func.value)
            if found is not None and len(found[1].nodes) == 1:
                value = self.assigned_calls.get(id(found[1].nodes[0]))
                if value is not None and self._passes_arguments(value, found[0]):
                    return self.callee_through_wrappers(value.args[0].value, found[0], None, depth + 1)
        elif type(func) is cst.Call and self._passes_arguments(func, scope):
            return self.callee_through_wrappers(func.args[0].value, scope, None, depth + 1)
        return self.callee(func, scope, call=call)

    def _passes_arguments(self, call: cst.Call, scope: Scope) -> bool:
        """`jax.jit(f)`, `jax.vmap(f, …)`: a wrapper whose calls pass their arguments to `f`."""
        return bool(call.args) and call.args[0].keyword is None and not call.args[0].star \
            and self._resolver(scope)(call.func) in PASS_THROUGH

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

    def _local_callee(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0,
                      call: cst.Call | None = None) -> Callee | None:
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
        if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.attr.value in LINEN_APPLY_METHODS \
                and self.classes:
            applied = self._linen_applied(expr, scope, call)
            if applied is not None:
                return applied
        if type(expr) is cst.Attribute and expr.attr.value == "apply_fn" and self.classes:
            return self._train_state_applied(call)
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
        resolve = self._resolver(found[0])
        if type(found[1].nodes[0]) is cst.FunctionDef:
            return self._haiku_decorated(found[1].nodes[0], resolve)
        value = self.assigned_calls.get(id(found[1].nodes[0]))
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

    @staticmethod
    def _haiku_decorated(function: cst.FunctionDef, resolve) -> Callee | None:
        """`@hk.transform def forward(x)` (under `@hk.without_apply_rng` or not): the name is the
        transformed object, and its `apply` calls the function as written."""
        names = [resolve(d.decorator) for d in function.decorators]
        if not names or names[-1] not in HAIKU_TRANSFORMS:
            return None
        above = names[:-1]
        if any(n != "haiku.without_apply_rng" for n in above) or len(above) > 1:
            return None
        return Callee(function, skip=HAIKU_TRANSFORMS[names[-1]] - len(above))

    def _linen_applied(self, expr: cst.Attribute, scope: Scope, call: cst.Call | None) -> Callee | None:
        """`model.apply(variables, *args, method=...)` (or `init(rngs, *args)`) where `model` is an
        instance of a flax.linen module class of the module (made here, or a parameter annotated
        with the class, `model: Gate`): the method it runs (`__call__`, or the
        one `method=` names, `Class.encode` or "encode") with `*args`; the leading argument and the
        keywords `apply` keeps (`rngs`, `mutable`, ...) do not reach it (flax/linen/module.py,
        `Module.apply`). `self` is the module, whose fields stay Python values."""
        instance = self._instance_of(expr.value, scope)
        if instance is None or instance[1] not in ("instance", "annotated"):
            return None
        cls, how = instance
        if not self._library_bases(cls) & LINEN_MODULE_BASES:
            return None
        chosen = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "method"), None) \
            if call is not None else None
        if chosen is None:
            name = "__call__"
        elif type(chosen) is cst.SimpleString and isinstance(chosen.evaluated_value, str):
            name = chosen.evaluated_value
        elif type(chosen) is cst.Attribute and type(chosen.value) is cst.Name \
                and self._class_named(chosen.value, scope) in list(self._bases(cls, stop_outside=False)):
            name = chosen.attr.value
        else:
            return None  # a function given as `method=`: not followed
        method = self._method(cls, name, how)
        if method is None or not method.receiver:
            return None
        return replace(method, skip=LINEN_APPLY_METHODS[expr.attr.value], own_keywords=LINEN_APPLY_KEYWORDS)

    def _train_state_applied(self, call: cst.Call | None) -> Callee | None:
        """`state.apply_fn(variables, *args)` where every `TrainState.create(apply_fn=model.apply,
        ...)` of the module gives the `apply` of an instance of one flax.linen module class of the
        module: that module's method, as `model.apply(...)` reaches it (`_linen_applied`)."""
        if not self._train_state_models:
            return None  # none made here, one made from elsewhere, or the walk is not over
        reached = [self._linen_applied(given, scope, call) for given, scope in self._train_state_models]
        if any(callee is None for callee in reached) or len({id(callee.function) for callee in reached}) != 1:
            return None
        return reached[0]

    def _note_train_states(self) -> None:
        """The `model.apply` every `TrainState.create(...)` of the module is given (once every call of
        the module is known); none when one of them is given anything else."""
        given_models = []
        for site, site_scope in self._calls:
            func = site.func
            if type(func) is not cst.Attribute or func.attr.value != "create" \
                    or not self._train_state_class(func.value, site_scope):
                continue
            given = next((a.value for a in site.args if a.keyword is not None and a.keyword.value == "apply_fn"), None)
            if type(given) is not cst.Attribute or given.attr.value != "apply" or type(given.value) is not cst.Name:
                given_models = []
                break  # a state made from another function (or none named): not known
            given_models.append((given, site_scope))
        self._train_state_models = given_models

    def _train_state_class(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """flax's `TrainState`, or a class of the module derived from it."""
        if self._resolver(scope)(expr) == TRAIN_STATE:
            return True
        cls = self._class_named(expr, scope) if type(expr) is cst.Name else None
        return cls is not None and TRAIN_STATE in self._library_bases(cls)

    def _constructor(self, expr: cst.BaseExpression, scope: Scope) -> Callee | None:
        """`Class(…)` of a class of the module whose `__init__` is its own (or a base's of the module)."""
        cls = self._class_named(expr, scope) if type(expr) is cst.Name else None
        if cls is None or any(c is None for c in self._bases(cls)):
            return None  # a base from elsewhere may define `__new__` or a metaclass
        init = self._method(cls, "__init__", "class")
        if init is None or not isinstance(init.function, cst.FunctionDef) or init.function.decorators:
            return None
        return Callee(init.function, receiver=True, constructs=True)

    def calls_instance(self, call: cst.Call) -> bool:
        """Whether `call` runs a method of the object it calls (`model(x)`: its `__call__`)."""
        callee = self.callees.get(id(call))
        return callee is not None and callee.receiver and not callee.constructs

    def fresh_receiver(self, call: cst.Call) -> bool:
        """Whether `call` builds a new object of a class of the module (`Class(…)`)."""
        callee = self.callees.get(id(call))
        return callee is not None and callee.constructs

    def samples_latent(self, function: cst.CSTNode) -> bool:
        """Whether a NumPyro latent sample site gives a tracer in the function: an inference
        algorithm of the framework table traces it (`NUTS(model)`), or a function it traces calls it."""
        info = self.infos.get(id(function))
        return info is not None and not LATENT_SAMPLING.isdisjoint(info.transforms)

    def _partial(self, call: cst.Call, scope: Scope, depth: int) -> Callee | None:
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return None
        inner = self.callee(call.args[0].value, scope, depth + 1)
        if inner is None or inner.skip or inner.own_keywords:
            return None  # `partial(model.apply, variables)`: which arguments the function gets is not followed
        return Callee(inner.function, inner.receiver, (*inner.prefix, *call.args[1:]))

    def _class_named(self, name: cst.Name, scope: Scope) -> ClassInfo | None:
        found = scope.lookup(name.value)
        if found is None or len(found[1].nodes) != 1:
            return None
        return self.classes.get(id(found[1].nodes[0]))

    def _instance_of(self, name: cst.Name, scope: Scope,
                     found: "tuple[Scope, Binding] | None" = None) -> tuple[ClassInfo, str] | None:
        """The class a name holds an instance of, and how: "self" (maybe a subclass), "cls" (the class
        itself, maybe a subclass), "annotated" (a parameter annotated with the class: maybe a subclass)
        or "instance" (made here by calling the class)."""
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
            if cls is None or positional_params(function)[:1] != [name.value]:
                return self._annotated_instance(nodes[0], owner)
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

    def instance_class(self, name: cst.Name, scope: Scope) -> ClassInfo | None:
        """The class of the module a name holds an instance of, where it is bound only to instances
        made by calling that class (`agent = Agent(0)`)."""
        instance = self._instance_of(name, scope)
        return instance[0] if instance is not None and instance[1] == "instance" else None

    def _through_parameter(self, call: cst.Call, scope: Scope) -> Callee | None:
        """`model(x)` / `model.encode(x)` where `model` is a parameter without annotation that every
        call of its function passes an instance of one class of the module: that class's method
        (asked once every call is resolved)."""
        func = call.func
        name = func if type(func) is cst.Name else func.value
        if type(name) is not cst.Name:
            return None
        found = scope.lookup(name.value)
        if found is None or len(found[1].nodes) != 1 or type(found[1].nodes[0]) is not cst.Param \
                or found[1].nodes[0].annotation is not None:
            return None
        function = found[0].node
        if id(function) in self.methods and positional_params(function)[:1] == [name.value]:
            return None  # `self`: known already where it can be
        sites = [*self.call_sites.get(id(function), ())]
        for use in self.applications.get(id(function), ()):
            sites.extend(use.sites or ())
        classes = set()
        for site in sites:
            passed = site.bind().get(name.value)
            call_scope = self.call_scopes.get(id(site.call))
            if passed is None or passed.how is not Passing.ARGUMENT or type(passed.values[0]) is not cst.Name \
                    or call_scope is None:
                return None
            instance = self._instance_of(passed.values[0], call_scope)
            if instance is None or instance[1] not in ("instance", "annotated"):
                return None
            classes.add(instance[0])
        if len(classes) != 1:
            return None
        cls = classes.pop()
        if type(func) is cst.Name:
            return self._method(cls, "__call__", "annotated")
        return self._method(cls, func.attr.value, "annotated")

    def _annotated_instance(self, param: cst.Param, owner: Scope) -> tuple[ClassInfo, str] | None:
        """A parameter annotated with a class of the module (`model: MLP`): an instance of it, or of
        a subclass ("annotated")."""
        annotation = param.annotation.annotation if param.annotation is not None else None
        if type(annotation) is not cst.Name or owner.parent is None:
            return None
        cls = self._class_named(annotation, owner.parent)
        return (cls, "annotated") if cls is not None else None

    def _method(self, cls: ClassInfo, attr: str, how: str) -> Callee | None:
        """`attr` looked up on an instance of `cls` ("self", "annotated": maybe of a subclass;
        "instance") or on the class ("cls", "class")."""
        on_instance = how in ("self", "annotated", "instance")
        if on_instance and any(attr in c.instance_attributes for c in self._bases(cls) if c):
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
        if how in ("self", "annotated", "cls") and self._overridden(cls, attr):
            return None  # a subclass of the module overrides it: which one runs is not known
        kind = self._method_kind(method, self.method_class[id(method)])
        if kind is None:
            return None
        if kind == "static":
            return Callee(method)
        if kind == "class":
            return Callee(method, receiver=True)
        return Callee(method, receiver=on_instance)

    def _method_kind(self, function: cst.FunctionDef, cls: ClassInfo) -> str | None:
        """"instance", "static" or "class"; None for properties and unknown wrappers."""
        kind = "instance"
        resolve = self._resolver(cls.scope)
        for decorator in function.decorators:
            name = resolve(decorator.decorator)
            if name == "builtins.staticmethod":
                kind = "static"
            elif name == "builtins.classmethod":
                kind = "class"
            elif name not in PLAIN_METHOD_DECORATORS and self.transform_use(decorator.decorator, cls.scope) is None:
                return None
        return kind

    def _bases(self, cls: ClassInfo, stop_outside: bool = True) -> Iterator[ClassInfo | None]:
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

    def _direct_bases(self, cls: ClassInfo) -> tuple[list[ClassInfo], bool]:
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

    def _overridden(self, cls: ClassInfo, attr: str) -> bool:
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
