"""JAX501: a jit-like transform applied inside a loop body."""
from __future__ import annotations

import libcst as cst

from ..rulebase.rule import Rule
from ..jaxmodel.transforms import short_name
from ..semantic.loops import names_read


class JitInLoop(Rule):
    code = "JAX501"

    def __init__(self, context) -> None:
        super().__init__(context)
        #: functions defined inside a loop body: a new object every iteration
        self.defined_in_loop: dict[int, dict[str, cst.FunctionDef]] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        loop = self.walk.innermost_loop()
        if loop is None:
            return
        self.defined_in_loop.setdefault(id(loop), {})[node.name.value] = node
        for decorator in node.decorators:
            transform = self.analysis.jax.jit_transform(decorator.decorator, self.walk)
            if transform and not self.analysis.inside_jitted_function(at=self.walk) and not self._per_setting(loop, node.body):
                self.report(decorator.decorator, (
                    f"`@{short_name(transform)}` on a function defined inside a loop: the function is a new object "
                    f"every iteration, so it is traced and compiled again each time; define and jit it once, "
                    f"before the loop"))

    def visit_Call(self, node: cst.Call) -> None:
        walk, analysis = self.walk, self.analysis
        application = analysis.jax.jit_application(node, walk)
        if application is None:
            return
        loop = walk.innermost_loop()
        if loop is None or analysis.inside_jitted_function(at=walk):
            return
        transform, function = application
        jit = short_name(transform)
        defined = self.defined_in_loop.get(id(loop), {})
        depends_on = defined[function.value].body if isinstance(function, cst.Name) and function.value in defined else function
        if self._per_setting(loop, depends_on) or _iterated_function(loop, function):
            return
        fresh = self._fresh_function(function, loop)
        if not fresh and (_built_per_iteration(loop, function, self) or self._same_object_each_iteration(function, loop)):
            return
        if fresh:
            self.report(node, (
                f"`{jit}` of {fresh} inside a loop: a new function object every iteration, so every iteration "
                f"traces and compiles again; build the jitted function once, before the loop"))
            return
        # `obj.method` is a new bound-method object at every access, a factory call may return a new
        # closure, and a name bound in the loop body may hold either: then JAX cannot reuse the trace.
        code = analysis.module.code_for_node
        shown = code(function.func) + "(...)" if isinstance(function, cst.Call) else code(function)
        shown = " ".join(shown.split())
        shown = shown if len(shown) <= 50 else shown[:47] + "..."
        self.report(node, (
            f"`{jit}` of `{shown}` applied inside a loop: if that expression gives a new function object each "
            f"time (a bound method `obj.method`, a closure made by a factory), every iteration traces and "
            f"compiles again; build the jitted function once, before the loop, and call the result"))

    def _same_object_each_iteration(self, function: cst.BaseExpression, loop: cst.CSTNode) -> bool:
        """A name the loop body does not rebind, or a module's function (`mod.f`): the same function
        object at every iteration. JAX keys its trace and compile caches on the function object (and
        the static arguments), so re-wrapping it finds the compiled code again: nothing is traced
        twice, and the new wrapper per iteration costs microseconds."""
        if isinstance(function, cst.Name):
            return not self.analysis.loops.rebinds(loop, function.value)
        return self.analysis.module_function(function, at=self.walk)

    def _per_setting(self, loop: cst.CSTNode, depends_on: cst.CSTNode) -> bool:
        """A loop over a written-out list of settings (`for steps in [-1, 0]:`, `for cfg in CONFIGS.values()`)
        whose jitted function uses the loop variable, directly or through values the body computes from it
        (`model = make_model(cfg)`, then `jax.jit(model.apply)`): each setting is a different function, so
        one compile per setting is the design, and hoisting the jit out of the loop is not possible."""
        if not isinstance(loop, cst.For) or not (_literal_collection(loop.iter, self)
                                                 or self.analysis.literals.written_out(loop.iter, self.walk.scope)):
            return False
        return bool(self.analysis.loops.varying_names(loop) & names_read(depends_on))

    def _fresh_function(self, function: cst.BaseExpression, loop: cst.CSTNode) -> str | None:
        if isinstance(function, cst.Lambda):
            return "a lambda"
        wrapper = self.analysis.jax.is_function_wrapper_call(function, self.walk)
        if wrapper:
            return f"a `{short_name(wrapper)}(...)` wrapper"
        if isinstance(function, cst.Name) and function.value in self.defined_in_loop.get(id(loop), {}):
            return f"`{function.value}`, defined in the loop body,"
        return None


def _iterated_function(loop: cst.CSTNode, function: cst.BaseExpression) -> bool:
    """`for f in (loss, grad_fn): jax.jit(f)` or `[jax.jit(f) for f in fns]`: each iteration jits a different
    function, once; there is nothing to hoist."""
    if not isinstance(function, cst.Name):
        return False
    if isinstance(loop, cst.For):
        targets = [loop.target]
    else:
        comp = getattr(loop, "for_in", None)
        targets = []
        while isinstance(comp, cst.CompFor):
            targets.append(comp.target)
            comp = comp.inner_for_in
    return any(function.value in names_read(target) for target in targets)


def _built_per_iteration(loop: cst.CSTNode, function: cst.BaseExpression, rule: Rule) -> bool:
    """`init, apply = make_sim(T)` with `T` drawn in the loop, then `jax.jit(apply)`, or
    `jax.jit(make_moduli(energy_fn))` with `energy_fn` built in the loop: the function jitted is made
    from this iteration's values, so one compile per iteration is inherent and the jit cannot be hoisted."""
    if not isinstance(loop, (cst.For, cst.While)):
        return False
    return bool(names_read(function) & rule.analysis.loops.varying_names(loop))


_DISPLAYS = (cst.List, cst.Tuple, cst.Set)


def _literal_collection(iterable: cst.BaseExpression, rule: Rule) -> bool:
    """A list, tuple or set written out in the code, or a name bound once, in this function, to one."""
    if isinstance(iterable, _DISPLAYS):
        return True
    if not isinstance(iterable, cst.Name):
        return False
    scope = rule.walk.scope
    found = scope.lookup(iterable.value)
    if found is None or found[0] is not scope or len(found[1].nodes) != 1:
        return False
    value = rule.analysis.literals.assignment_value(found[1].nodes[0], scope)
    return isinstance(value, _DISPLAYS)
