"""JAX502: inside a function, `jax.jit` of a function object made anew on every call, then called there."""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..jaxmodel.jax_names import MEMOISING
from ..jaxmodel.keys.policy import is_test_file
from ..jaxmodel.keys.tables import INIT_NAME
from ..jaxmodel.transforms import short_name
from ..rulebase.rule import Rule
from ..semantic.bindings import BindingKind

#: Functions that run once per program (or per test): compiling there once is what the author wants.
ONE_SHOT_FUNCTIONS = frozenset({
    "main", "__init__", "__post_init__", "setup", "__main__", "setUp", "setUpClass", "train",
})
ONE_SHOT_PREFIXES = ("test", "init", "setup", "set_up", "create", "build", "benchmark", "bench_", "run_", "main")
#: Entry points that training frameworks call once per process, from another module (`main.py`).
ENTRY_POINT_NAMES = frozenset({"train_and_evaluate", "train_and_eval", "evaluate_and_train"})
#: How many local names and nested transforms are followed back to a parameter.
_MAX_FOLLOWED = 4


@dataclass
class _Body:
    """What one function body does with the jitted closures it makes."""

    defined: set[str] = field(default_factory=set)
    #: local name -> (node to report, jit name, what was jitted)
    jitted: dict[str, tuple[cst.CSTNode, str, str]] = field(default_factory=dict)
    called_once: set[str] = field(default_factory=set)
    called_in_loop: set[str] = field(default_factory=set)
    escapes: set[str] = field(default_factory=set)
    #: the functions around this one, innermost first
    outer: list[cst.FunctionDef] = field(default_factory=list)


class JitOfFreshClosure(Rule):
    code = "JAX502"

    def __init__(self, context) -> None:
        super().__init__(context)
        self.bodies: dict[int, _Body] = {}
        #: id(function) -> names called in a loop in its body (kept after the body is left)
        self.loop_calls: dict[int, set[str]] = {}
        #: `obj.name(...)` calls made in a loop anywhere in the file: the names
        self.methods_called_in_loop: set[str] = set()
        self.test_file = is_test_file(self.analysis.path)
        #: findings waiting for the end of the file: (node, jit, what, function, functions around it)
        self.pending: list[tuple[cst.CSTNode, str, str, cst.FunctionDef, list[cst.FunctionDef]]] = []
        #: module-level function name -> the names it calls outside loops (for the entry points)
        self.calls_once_by_name: dict[str, set[str]] = {}
        #: functions that run once per process (computed at the end of the file)
        self.entry_points: set[str] = set()
        #: id() of the functions decorated with `functools.cache`/`lru_cache`
        self.memoised: set[int] = set()
        #: names the module's top level calls, outside a loop and in one
        self.top_level_calls: set[str] = set()
        self.top_level_loop_calls: set[str] = set()

    def _current(self) -> tuple[cst.FunctionDef, _Body] | None:
        function = self.walk.function()  # the innermost of `enclosing_functions`
        if type(function) is not cst.FunctionDef:
            return None
        body = self.bodies.get(id(function))
        if body is None:
            outer = [f for f in self.walk.enclosing_functions() if isinstance(f, cst.FunctionDef)][1:]
            body = self.bodies[id(function)] = _Body(outer=outer)
            self.loop_calls[id(function)] = body.called_in_loop
        return function, body

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if any(self.walk.qualified_name(_called(d.decorator)) in MEMOISING for d in node.decorators):
            self.memoised.add(id(node))
        current = self._current()
        if current is None:
            return
        function, body = current
        body.defined.add(node.name.value)
        if not node.decorators or self.walk.innermost_loop() is not None:
            return
        for decorator in node.decorators:
            transform = self.analysis.jax.jit_transform(decorator.decorator, self.walk)
            if transform and not self.analysis.inside_jitted_function(at=self.walk) and not INIT_NAME.match(node.name.value):
                body.jitted[node.name.value] = (decorator.decorator, short_name(transform), f"`{node.name.value}`, defined here,")

    def visit_Call(self, node: cst.Call) -> None:
        current = self._current()
        if current is None:
            if self.walk.function() is None and type(node.func) is cst.Name:
                in_loop = self.walk.innermost_loop() is not None
                (self.top_level_loop_calls if in_loop else self.top_level_calls).add(node.func.value)
            return
        function, body = current
        walk, analysis = self.walk, self.analysis
        if type(node.func) is cst.Name:
            (body.called_in_loop if walk.innermost_loop() is not None else body.called_once).add(node.func.value)
        elif type(node.func) is cst.Attribute and walk.innermost_loop() is not None:
            self.methods_called_in_loop.add(node.func.attr.value)
        application = analysis.jax.jit_application(node, walk)
        if application is None:
            for arg in node.args:
                if type(arg.value) is cst.Name:
                    body.escapes.add(arg.value.value)
        if application is None or walk.innermost_loop() is not None or analysis.inside_jitted_function(at=walk):
            return
        transform, wrapped = application
        if _initialiser(wrapped):
            return  # `jax.jit(init_model, backend="cpu")()`: parameters are initialised once per model
        if self._made_from_parameter_function(wrapped, 0):
            # `jax.jit(jax.vmap(jax.jacrev(f)))` of a function `f` the caller passes: what is compiled is
            # the caller's function, so no jit kept in this module could be reused for the next one
            return
        fresh = self._fresh(wrapped, body)
        if fresh is None:
            return
        parent = walk.parent
        jit = short_name(transform)
        if isinstance(parent, cst.Call) and parent.func is node:
            self._candidate(node, jit, fresh, function, body)
        elif isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            name = parent.targets[0].target.value
            if not self._declared_outside(name):  # `global cache; cache = jax.jit(...)`: kept for later calls
                body.jitted[name] = (node, jit, fresh)

    def _made_from_parameter_function(self, wrapped: cst.BaseExpression, depth: int) -> bool:
        """A transform (`jax.vmap(f)`, `partial(f, …)`) of a function the enclosing function receives as a
        parameter, or a lambda that calls one, directly or through a local name bound once to such a
        transform (`dFdh = jax.jacrev(f)`, then `jax.jit(jax.vmap(dFdh))`)."""
        if depth > _MAX_FOLLOWED:
            return False
        if isinstance(wrapped, cst.Lambda):
            return isinstance(wrapped.body, cst.Call) and self._parameter_function(wrapped.body.func, depth + 1)
        if isinstance(wrapped, cst.Call) and self.analysis.jax.is_function_wrapper_call(wrapped, self.walk):
            positional = [a.value for a in wrapped.args if a.keyword is None and not a.star]
            return bool(positional) and self._parameter_function(positional[0], depth + 1)
        return False

    def _parameter_function(self, expr: cst.BaseExpression, depth: int) -> bool:
        if not isinstance(expr, cst.Name):
            return self._made_from_parameter_function(expr, depth)
        found = self.walk.scope.lookup(expr.value)
        if found is None or found[0] is not self.walk.scope or not found[1].recorded:
            return False
        bindings = found[1].recorded
        if all(binding.kind is BindingKind.PARAMETER for binding in bindings):
            return True
        if len(bindings) == 1 and bindings[0].kind is BindingKind.ASSIGNMENT and bindings[0].value is not None:
            return self._made_from_parameter_function(bindings[0].value, depth + 1)
        return False

    def _declared_outside(self, name: str) -> bool:
        if "global" not in self.analysis.source and "nonlocal" not in self.analysis.source:
            return False
        scope = self.walk.scope
        return name in scope.globals or name in scope.nonlocals

    def visit_Return(self, node: cst.Return) -> None:
        current = self._current()
        if current is not None and node.value is not None:
            for name in _names_in(node.value):
                current[1].escapes.add(name)

    def visit_Assign(self, node: cst.Assign) -> None:
        current = self._current()
        if current is None:
            return
        stored = any(type(t.target) is not cst.Name for t in node.targets)
        if stored:  # `self.f = g`, `table[k] = g`: kept for later calls
            for name in _names_in(node.value):
                current[1].escapes.add(name)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        body = self.bodies.pop(id(original_node), None)
        if body is None:
            return
        binding = self.analysis.module_scope.bindings.get(original_node.name.value)
        if binding is not None and any(node is original_node for node in binding.nodes):  # a module-level function
            self.calls_once_by_name.setdefault(original_node.name.value, set()).update(body.called_once - body.called_in_loop)
        for name, (node, jit, fresh) in body.jitted.items():
            if name in body.called_once and name not in body.called_in_loop and name not in body.escapes:
                self._candidate(node, jit, fresh, original_node, body)

    def _candidate(self, node: cst.CSTNode, jit: str, fresh: str, function: cst.FunctionDef, body: _Body) -> None:
        if id(function) in self.memoised:
            return  # the body runs once per distinct argument: the jitted closure is built once for each
        self.pending.append((node, jit, fresh, function, body.outer))

    def finish(self) -> None:
        if not self.pending:
            return
        self.entry_points = self._entry_points()
        for node, jit, fresh, function, outer in self.pending:
            if not self._one_shot(function.name.value) and not self._runs_few_times(function, outer):
                self._report(node, jit, fresh)

    def _one_shot(self, name: str) -> bool:
        return _one_shot(name) or name in self.entry_points

    def _entry_points(self) -> set[str]:
        """Functions of the module that run once per process: the framework entry points
        (`train_and_evaluate`), the one-shot names (`main`), the functions the module's top level calls
        outside a loop when no other module can call them (a notebook's, a script's), and what any of
        those calls outside a loop, transitively (`main` → `single_run`). None of them is a function
        that may run many times: one called in a loop, or by one that is."""
        repeated = self._repeated()
        entries = set(ENTRY_POINT_NAMES) | {name for name in self.calls_once_by_name if _one_shot(name)}
        entries |= {name for name in self.top_level_calls if name in self.calls_once_by_name
                    and name not in repeated and not self.analysis.named_elsewhere(name)}
        frontier = list(entries)
        while frontier:
            for called in self.calls_once_by_name.get(frontier.pop(), ()):
                if called not in entries and called in self.calls_once_by_name and called not in repeated:
                    entries.add(called)
                    frontier.append(called)
        return entries

    def _repeated(self) -> set[str]:
        """Names of functions that may run many times per process: called in a loop (in a function or at
        the top level), or called by a module-level function that is, transitively."""
        repeated = set(self.top_level_loop_calls).union(*self.loop_calls.values())
        frontier = list(repeated)
        while frontier:
            for called in self.calls_once_by_name.get(frontier.pop(), ()):
                if called not in repeated:
                    repeated.add(called)
                    frontier.append(called)
        return repeated

    def _runs_few_times(self, function: cst.FunctionDef, outer: list[cst.FunctionDef]) -> bool:
        """A helper defined inside a one-shot function (a test, `main`) and not called in a loop there runs
        a handful of times at most: compiling on each of those calls is the author's plain intent. So does
        a helper of a test file that no loop calls: it builds what one test checks."""
        if self.test_file:
            name = (outer[-1] if outer else function).name.value
            if name not in self.methods_called_in_loop and not any(name in calls for calls in self.loop_calls.values()):
                return True
        names = {function.name.value}
        for enclosing in outer:
            if self._one_shot(enclosing.name.value):
                inner_loops = set().union(*(self.loop_calls.get(id(f), set()) for f in outer[:outer.index(enclosing) + 1]))
                return not names & inner_loops
            names.add(enclosing.name.value)
        return False

    def _fresh(self, wrapped: cst.BaseExpression, body: _Body) -> str | None:
        if isinstance(wrapped, cst.Lambda):
            return "a lambda"
        wrapper = self.analysis.jax.is_function_wrapper_call(wrapped, self.walk)
        if wrapper:
            return f"a `{short_name(wrapper)}(...)` wrapper"
        if isinstance(wrapped, cst.Name) and wrapped.value in body.defined:
            return f"`{wrapped.value}`, defined in this function,"
        return None

    def _report(self, node: cst.CSTNode, jit: str, fresh: str) -> None:
        self.report(node, (
            f"`{jit}` of {fresh} is made and called on every call of the enclosing function: a new function "
            f"object each time, so JAX traces and compiles it again on every call; jit it once at module level "
            f"(or in a factory whose result is kept) and pass varying values as arguments"),
            headline=f"`{jit}` of a function made anew on every call of the enclosing function")


def _initialiser(wrapped: cst.BaseExpression) -> bool:
    """A function named like a parameter initialiser (`init_model`, `model.init`): run once per model."""
    name = wrapped.value if isinstance(wrapped, cst.Name) else wrapped.attr.value if isinstance(wrapped, cst.Attribute) else None
    return name is not None and bool(INIT_NAME.match(name))


def _called(decorator: cst.BaseExpression) -> cst.BaseExpression:
    """`lru_cache` of `@lru_cache(maxsize=None)`."""
    return decorator.func if isinstance(decorator, cst.Call) else decorator


def _one_shot(name: str) -> bool:
    return name in ONE_SHOT_FUNCTIONS or name.lstrip("_").lower().startswith(ONE_SHOT_PREFIXES)


def _names_in(node: cst.BaseExpression) -> set[str]:
    if type(node) is cst.Name:
        return {node.value}
    if type(node) in (cst.Tuple, cst.List):
        return {e.value.value for e in node.elements if type(e.value) is cst.Name}
    return set()
