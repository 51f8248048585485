"""JAX502: inside a function, `jax.jit` of a function object made anew on every call, then called there."""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..jaxmodel.keys.policy import is_test_file
from ..jaxmodel.keys.tables import INIT_NAME
from ..jaxmodel.transforms import short_name
from ..rulebase.rule import Rule

#: Functions that run once per program (or per test): compiling there once is what the author wants.
ONE_SHOT_FUNCTIONS = frozenset({
    "main", "__init__", "__post_init__", "setup", "__main__", "setUp", "setUpClass", "train",
})
ONE_SHOT_PREFIXES = ("test", "init", "setup", "set_up", "create", "build", "benchmark", "bench_", "run_", "main")
#: Entry points that training frameworks call once per process, from another module (`main.py`).
ENTRY_POINT_NAMES = frozenset({"train_and_evaluate", "train_and_eval", "evaluate_and_train"})


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
        (`train_and_evaluate`), the one-shot names (`main`), and what any of those calls outside a loop,
        transitively (`main` → `single_run`)."""
        entries = set(ENTRY_POINT_NAMES) | {name for name in self.calls_once_by_name if _one_shot(name)}
        frontier = list(entries)
        while frontier:
            for called in self.calls_once_by_name.get(frontier.pop(), ()):
                if called not in entries and called in self.calls_once_by_name and not any(
                        called in calls for calls in self.loop_calls.values()):
                    entries.add(called)
                    frontier.append(called)
        return entries

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
            f"(or in a factory whose result is kept) and pass varying values as arguments"))


def _initialiser(wrapped: cst.BaseExpression) -> bool:
    """A function named like a parameter initialiser (`init_model`, `model.init`): run once per model."""
    name = wrapped.value if isinstance(wrapped, cst.Name) else wrapped.attr.value if isinstance(wrapped, cst.Attribute) else None
    return name is not None and bool(INIT_NAME.match(name))


def _one_shot(name: str) -> bool:
    return name in ONE_SHOT_FUNCTIONS or name.lstrip("_").lower().startswith(ONE_SHOT_PREFIXES)


def _names_in(node: cst.BaseExpression) -> set[str]:
    if type(node) is cst.Name:
        return {node.value}
    if type(node) in (cst.Tuple, cst.List):
        return {e.value.value for e in node.elements if type(e.value) is cst.Name}
    return set()
