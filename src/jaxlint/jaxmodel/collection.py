"""The collection step of `traced.TracedFunctions`: one replay of the file's semantic model records
every function and class, every transform applied to a function, what methods assign on `self`,
and every call, in source order."""
from __future__ import annotations

import libcst as cst

from ..semantic.model import ReplayState
from ..semantic.scopes import Scope
from .calls import CallSite, Callee, ClassInfo
from .jax_names import PARTIAL
from .signatures import function_scope, positional_params
from .transforms import HOST_CALLBACKS, TREE_MAPS


class Collector:
    """The collection: functions, classes, transforms applied to functions, and calls, in source order."""

    ctx: ReplayState

    def __init__(self, traced, scopes: dict[int, Scope]) -> None:
        #: the `traced.TracedFunctions` being built (this module sits below it)
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
        self.traced.classes[id(node)] = ClassInfo(node, self._scope(node))

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
                traced.applied_by[id(use)] = decorator

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
                    traced.application_calls[id(function_use)] = node
                    traced.applied_by[id(function_use)] = node
                    traced._note_applied_in(scope, function, function_use)
                    if target is not None:  # calls of `fast` reach `f` through the wrapper
                        traced.aliases.setdefault((id(scope.node), target.value), []).append((function, function_use))
                    if isinstance(parent, cst.Call) and parent.func is node and function_use.sites is not None:
                        function_use.sites.append(CallSite(parent, Callee(function), function_use.bound_positional,
                                                           function_use.bound_keywords))
            for given in traced._methods_given[deferred:]:
                given.alias = (id(scope.node), target.value) if target is not None else None
                given.called_by = parent if isinstance(parent, cst.Call) and parent.func is node else None
                given.applied_by = node
        traced._calls.append((node, scope))
        if type(node.func) is cst.Attribute and node.func.attr.value == "param":
            traced._param_calls.append((node, scope))
        name = self.ctx.qualified_name(node.func)
        if name in HOST_CALLBACKS:
            for arg in node.args:
                self._mark_host_callback(arg.value, scope)
        elif name in TREE_MAPS:
            owner = function_scope(scope)
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
        if cls is not None and positional_params(scope.node)[:1] == [target.value.value]:
            cls.instance_attributes.add(target.attr.value)
            cls.instance_values.setdefault(target.attr.value, []).append(value)
            if scope.node.name.value != "__init__":
                cls.replaced_after_init.add(target.attr.value)
                methods = cls.replaced_by.setdefault(target.attr.value, [])
                if all(method is not scope.node for method in methods):
                    methods.append(scope.node)
