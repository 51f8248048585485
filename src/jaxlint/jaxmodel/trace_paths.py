"""Whether a function runs under a trace that runs its body once (the jit family, a `lax` body) on
every path that reaches it, as far as the module and the project show.

`TracedFunctions` says that a function is traced, and how, joined over every way it is reached: a
function that a jitted function calls is traced even if a script also calls it plainly. Some facts hold
only where *every* call is traced (a jit inside is then inlined on each of them); this answers that:

* a function decorated with a transform of the jit family runs traced whenever its name is called;
* otherwise each way it is reached must be traced: every direct call made from a function that is
  itself traced on every path (a call at module level is not), and every transform applied to it,
  when it is of the jit family or a `lax` body, or is itself wrapped in one (`jax.jit(jax.vmap(f))`),
  or is applied inside a function traced on every path (a `vmap` or `grad` alone evaluates the
  function without inlining a jit);
* a module-level function or a method may also be called by the modules that import this one: when
  one of them mentions its name, that call is not known to be traced.

A function reached by none of these ways is not known to be traced everywhere.

The value flow of a function takes a parameter as traced when some traced call passes it a tracer:
a helper a jitted function calls with a tracer and elsewhere with a NumPy constant sees both.
`parameters_traced_on_every_path` says when that never happens: every way that reaches the
function passes a tracer to each parameter the flow takes as traced (each transform applied traces
it, each traced caller passes a value that must be traced where it calls), and a nested function's
enclosing function is such a function too. What the flow says must be traced is then a tracer on
every run.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ..syntax.arguments import Passing
from .transforms import RUNS_ONCE_MODES
from .values import MUST, Form

if TYPE_CHECKING:
    from .traced import FunctionNode, TracedFunctions

#: How deep a chain of transforms (`jit(pmap(vmap(f)))`) is followed.
_MAX_NESTED_TRANSFORMS = 8


class TracePaths:
    """Per file: which functions run traced once per trace on every path (memoised per function)."""

    def __init__(self, traced: "TracedFunctions") -> None:
        self.traced = traced
        self.project = traced.ctx.project
        self._known: dict[int, bool] = {}
        self._parameters_known: dict[int, bool] = {}
        self._owners: dict[int, "FunctionNode"] | None = None

    def traced_on_every_path(self, function: "FunctionNode") -> bool:
        """Whether every call that reaches `function` runs it under a jit-family trace or a `lax` body."""
        return self._every_path(function, set())

    def _every_path(self, function: "FunctionNode", visiting: set[int]) -> bool:
        return _decided_once(function, visiting, self._known, self._decide)

    def _decide(self, function: "FunctionNode", visiting: set[int]) -> bool:
        traced = self.traced
        info = traced.info(function)
        if info is None or not info.runs_once:
            return False
        applications = traced.applications.get(id(function), ())
        if any(use.sites is None and use.mode in RUNS_ONCE_MODES and not use.all_params for use in applications):
            return True  # a decorator of the jit family: every call of the name reaches the wrapper
        for use in applications:
            if use.mode in RUNS_ONCE_MODES or self._wrapped_in_runs_once(use, applications):
                continue
            owner = self._owner(use)  # `jax.vmap(f)` alone: traced only if where it is applied is
            if owner is None or not self._every_path(owner, visiting):
                return False
        ways = len(applications)
        for site in traced.call_sites.get(id(function), ()):
            if traced.callees.get(id(site.call)) is not site.callee:
                continue  # through a transform's wrapper (`fast = jax.jit(f)`): counted with its application
            caller = traced._function_of_call(site.call)
            if caller is None or not self._every_path(caller, visiting):
                return False
            ways += 1
        if ways == 0 or self._named_elsewhere(function):
            return False
        return True

    def parameters_traced_on_every_path(self, function: "FunctionNode") -> bool:
        """Whether `function` is traced on every path, each of which passes a tracer to every parameter
        its value flow takes as traced (see the module docstring)."""
        return self._parameters_on_every_path(function, set())

    def _parameters_on_every_path(self, function: "FunctionNode", visiting: set[int]) -> bool:
        return _decided_once(function, visiting, self._parameters_known, lambda f, seen: (
            self.traced_on_every_path(f) and self._parameters_decided(f, seen)))

    def _parameters_decided(self, function: "FunctionNode", visiting: set[int]) -> bool:
        traced = self.traced
        info = traced.info(function)
        wanted = set(info.param_kinds)
        outer = traced.enclosing.get(id(function))
        if outer is not None and traced.info(outer) is not None \
                and not self._parameters_on_every_path(outer, visiting):
            return False  # the traced values it closes over may be so on some runs only
        for use in traced.applications.get(id(function), ()):
            if not wanted <= traced._traced_params(function, use) - traced._static_params(function):
                return False
        for site in traced.call_sites.get(id(function), ()):
            if traced.callees.get(id(site.call)) is not site.callee:
                continue  # through a transform's wrapper: its application traces what it traces
            caller = traced._function_of_call(site.call)
            if caller is None or not self._parameters_on_every_path(caller, visiting):
                return False
            flow = traced.flows.get(id(caller))
            passed = site.bind()
            for name in wanted:
                given = passed.get(name)
                if flow is None or given is None or given.how is not Passing.ARGUMENT or len(given.values) != 1:
                    return False
                value = flow.values.get(id(given.values[0]))
                if value is None or value.traced is not MUST or value.form is Form.TREE:
                    return False
        return True

    def _wrapped_in_runs_once(self, use, applications) -> bool:
        """`jax.jit(jax.pmap(jax.vmap(f)))`: the call applying `use` is the function given (through
        other transforms) to a transform of the jit family applied to the same function."""
        calls = self.traced.application_calls
        applied = calls.get(id(use))
        if applied is None:
            return False
        for other in applications:
            outer = calls.get(id(other)) if other.mode in RUNS_ONCE_MODES else None
            depth = 0
            while isinstance(outer, cst.Call) and depth < _MAX_NESTED_TRANSFORMS:
                given = [a.value for a in outer.args if a.keyword is None and not a.star]
                outer = given[0] if given else None
                if outer is applied:
                    return True
                depth += 1
        return False

    def _owner(self, use) -> "FunctionNode | None":
        """The function in whose body a transform was applied; None at module level."""
        if self._owners is None:
            by_id = {id(function): function for function in self.traced.functions}
            self._owners = {id(applied): by_id[owner] for owner, pairs in self.traced._applied_in.items()
                            if owner in by_id for _, applied in pairs}
        return self._owners.get(id(use))

    def _named_elsewhere(self, function: "FunctionNode") -> bool:
        """A module-level function or a method, named in a module that imports this one."""
        if id(function) in self.traced.enclosing:
            return False  # defined inside a function: only that function can reach it by name
        if not isinstance(function, cst.FunctionDef):
            return True  # a lambda bound at module level: not followed by name
        if self.project is None:
            return False  # the file alone: its own calls are all the calls there are
        return self.project.named_elsewhere(function.name.value)


def _decided_once(function: "FunctionNode", visiting: set[int], known: dict[int, bool], decide) -> bool:
    """`decide(function, visiting)`, memoised in `known`; a call back into a function being decided
    adds no other way in (True), so recursion ends."""
    key = id(function)
    if key in known:
        return known[key]
    if key in visiting:
        return True
    visiting.add(key)
    answer = decide(function, visiting)
    visiting.discard(key)
    known[key] = answer
    return answer
