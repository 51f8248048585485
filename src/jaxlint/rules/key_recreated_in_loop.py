"""JAX103: `jax.random.key(C)` / `PRNGKey(C)` with a constant seed made inside a loop body, or in a
function that a loop reaches through the calls it makes (methods through `self` included).

Not reported when the key only feeds `jax.random.fold_in(key, i)` (a different key per iteration), nor
in test code (`test_*.py`, `*_test.py`, `conftest.py`, functions named `test*`), where a fixed seed per
case is how tests stay reproducible and compare configurations, nor (unless `strict-key-reuse` is on)
in a loop over entries written out in the code (`for n_agents in [2, 4, 8]:`, `for name, dl in
{"a": dl_a, "b": dl_b}.items():`): each entry is its own experiment, run from the same seed so that
the runs compare, nor under an `if` that tests a remainder (`if step % eval_every == 0:`, also in a
loop nested there): evaluation code, whose fixed seeds keep the evaluations comparable.
"""
from __future__ import annotations

import libcst as cst

from ..syntax.references import is_reference
from ..jaxmodel.keys.policy import in_test_function, is_test_file, tests_remainder
from ..jaxmodel.signatures import function_scope
from ..rulebase.rule import Rule

KEY_MAKERS = frozenset({"jax.random.key", "jax.random.PRNGKey"})


def _default_for_parameter(parent: cst.CSTNode | None, function: cst.FunctionDef) -> bool:
    """`if rng_key is None: rng_key = jax.random.PRNGKey(0)`: a fixed fallback for a key parameter that
    callers may pass; a deterministic default is the intent, not a key rebuilt by mistake."""
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
        return False
    name = parent.targets[0].target.value
    p = function.params
    return any(param.name.value == name and param.default is not None
               for param in (*p.posonly_params, *p.params, *p.kwonly_params))


class KeyRecreatedInLoop(Rule):
    code = "JAX103"

    def __init__(self, context) -> None:
        super().__init__(context)
        #: function -> constant-seed key calls directly in its body (not in a loop there): the call, how
        #: it is written, and the (id(scope node), name) of the variable it is bound to, if any
        self.in_function: dict[int, list[tuple[cst.Call, str, tuple[int, str] | None]]] = {}
        #: (call, scope, loop) for calls made in loops
        self.loop_calls: list[tuple[cst.Call, object, cst.CSTNode]] = []
        self.reported: set[int] = set()
        self.test_file = is_test_file(self.analysis.path)
        #: id of key calls and Name nodes given to `fold_in` as its key
        self.folded: set[int] = set()
        #: keys `jax.random` draws from or splits: id() of key calls given to it, and (id(scope node),
        #: name) of the variables given to it
        self.drawn_calls: set[int] = set()
        self.drawn_names: set[tuple[int, str]] = set()
        #: in-loop key calls bound to a name, reported at the end unless the name only feeds `fold_in`
        self.named: list[tuple[cst.Call, str, str, object]] = []

    def visit_Call(self, node: cst.Call) -> None:
        walk, analysis = self.walk, self.analysis
        if self.test_file or in_test_function(walk.scope):
            return
        loop = walk.innermost_loop()
        if loop is not None and not analysis.settings.strict_key_reuse and (
                self._over_written_out_cases(loop) or self._in_periodic_evaluation()):
            return
        if loop is not None:
            self.loop_calls.append((node, walk.scope, loop))
        callee = walk.qualified_name(node.func)
        if callee is not None and callee.startswith("jax.random.") and callee not in KEY_MAKERS:
            self._note_drawn_from(node)
        if callee == "jax.random.fold_in" and node.args and node.args[0].keyword is None:
            self.folded.add(id(node.args[0].value))
            return
        if callee not in KEY_MAKERS or id(node) in self.folded:
            return
        seed = _seed(node)
        if seed is None or not self._constant(seed):
            return
        text = analysis.module.code_for_node(seed)
        short = "PRNGKey" if callee.endswith("PRNGKey") else "key"
        if loop is not None:
            self.reported.add(id(node))
            message = (
                f"`jax.random.{short}({text})` made inside a loop: the same seed gives the same key, so every "
                f"iteration draws the same numbers; create the key once before the loop and split it each "
                f"iteration (`key, subkey = jax.random.split(key)`), or use `jax.random.fold_in(key, i)`")
            parent = walk.parent
            if isinstance(parent, cst.Assign) and len(parent.targets) == 1 \
                    and isinstance(parent.targets[0].target, cst.Name):
                self.named.append((node, parent.targets[0].target.value, message, walk.scope))
            else:
                self.report(node, message)
            return
        function = walk.function()
        if not isinstance(function, cst.FunctionDef) or _default_for_parameter(walk.parent, function) \
                or any(type(a) is cst.Parameters for a in walk.ancestors):
            return  # a fallback for a key the caller may pass (a parameter's default is made once, anyway)
        parent = walk.parent
        bound = None
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            bound = (id(walk.scope.node), parent.targets[0].target.value)
        self.in_function.setdefault(id(function), []).append((node, f"jax.random.{short}({text})", bound))

    def _note_drawn_from(self, draw: cst.Call) -> None:
        """`jax.random.choice(key, …)`, `jax.random.split(key)`: the key is used for random numbers
        right there."""
        for arg in draw.args:
            value = arg.value
            if type(value) is cst.Call:
                self.drawn_calls.add(id(value))
            elif type(value) is cst.Name:
                found = self.walk.scope.lookup(value.value)
                if found is not None:
                    self.drawn_names.add((id(found[0].node), value.value))

    def _in_periodic_evaluation(self) -> bool:
        """Under an `if step % eval_every == 0:` of the function: evaluation code, where a fixed seed
        (also one per evaluated case, `for t in ts: key = PRNGKey(42)`) keeps evaluations comparable."""
        ancestors = self.walk.ancestors
        for i in range(len(ancestors) - 2, 0, -1):
            node = ancestors[i]
            if type(node) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                return False
            if type(node) is cst.If and ancestors[i + 1] is not node.test and tests_remainder(node.test):
                return True
        return False

    def _over_written_out_cases(self, loop: cst.CSTNode) -> bool:
        """A loop over configurations or inputs written out in the code: a fixed seed per entry is how
        the entries' runs are made comparable (reported only with `strict-key-reuse`)."""
        return self.analysis.literals.loop_over_written_out(loop, self.walk.scope)

    def finish(self) -> None:
        if self.named:
            self._report_named()
        if self.in_function:
            self._report_called_in_loops()

    def _report_called_in_loops(self) -> None:
        """A constant-seed key in a function that a loop runs on every iteration, directly or through
        the functions it calls in turn: one a Python loop calls (`for i in range(n):
        self.generate_step(...)`, which calls `self.sample_from`; a step jitted as `step =
        jax.jit(train_step)`), or the body of a lax loop (`lax.fori_loop(0, n, body, x)`, traced
        once, its key the same constant in every iteration). Calls are resolved as the module's call
        graph resolves them (plain names, methods through `self`, partials, transforms' wrappers);
        building an object (`Model()`) is not followed."""
        traced = self.analysis.traced
        calls_from: dict[int, list[cst.FunctionDef]] = {}
        for call_id, callee in traced.callees.items():
            scope = function_scope(traced.call_scopes.get(call_id))
            if scope is not None and not callee.constructs and isinstance(callee.function, cst.FunctionDef):
                calls_from.setdefault(id(scope.node), []).append(callee.function)
        entries: list[tuple[cst.FunctionDef | cst.Lambda, str]] = []
        for call, scope, _ in self.loop_calls:
            entries += [(function, f"`{function.name.value}`, which is called inside a loop")
                        for function in self._called(call, scope, traced)]
        for body, loop in traced.lax_loop_bodies():
            if not self.test_file and not in_test_function(traced.scopes.get(id(body))):
                name = f"`{body.name.value}`" if type(body) is cst.FunctionDef else "the lambda"
                entries.append((body, f"{name}, which is the body of `{loop}`, run on every iteration"))
        for entry, how in entries:
            seen, pending = {id(entry)}, [entry]
            while pending:
                function = pending.pop()
                self._report_keys_of(function, entry, how)
                for callee in calls_from.get(id(function), ()):
                    if id(callee) not in seen:
                        seen.add(id(callee))
                        pending.append(callee)

    @staticmethod
    def _called(call: cst.Call, scope, traced) -> list[cst.FunctionDef]:
        """The functions of the module a call made in a loop runs."""
        if type(call.func) is cst.Name:
            found = scope.lookup(call.func.value)
            if found is not None and found[1].nodes and all(isinstance(n, cst.FunctionDef) for n in found[1].nodes):
                return list(found[1].nodes)
        callee = traced.callees.get(id(call)) or traced.callee_through_wrappers(call.func, scope, call)
        if callee is None or callee.constructs or not isinstance(callee.function, cst.FunctionDef):
            return []
        return [callee.function]

    def _report_keys_of(self, function: cst.FunctionDef, entry: cst.FunctionDef | cst.Lambda, how: str) -> None:
        """Reports the constant keys of `function` that it draws from itself: a key it only hands on
        (`model.init(PRNGKey(0), x)` for the parameters' structure, a zero carry's initializer, a
        deterministic sampler) is often a placeholder that code ignores, which nothing here shows."""
        for node, text, bound in self.in_function.get(id(function), ()):
            if id(node) in self.reported:
                continue
            if id(node) not in self.drawn_calls and (bound is None or bound not in self.drawn_names):
                continue
            self.reported.add(id(node))
            where = how if function is entry else f"`{function.name.value}`, reached from {how}"
            self.report(node, (
                f"`{text}` in {where}: the same seed gives the same key on every call, so every "
                f"iteration draws the same numbers; pass a key in and split it per iteration "
                f"(`key, subkey = jax.random.split(key)`)"),
                headline=f"`{text}` makes the same key on every iteration of a loop")

    def _report_named(self) -> None:
        """`key = jax.random.key(0)` in a loop: reported unless every read of `key` in that scope is the
        key argument of `fold_in` (`jax.random.fold_in(key, step)` differs per iteration)."""
        reads: dict[tuple[int, str], list[int]] = {}
        for name, scope, parent in self.analysis.semantic.name_occurrences({n for _, n, _, _ in self.named}):
            if is_reference(name, parent) and not (isinstance(parent, cst.AssignTarget) and parent.target is name):
                reads.setdefault((id(scope.node), name.value), []).append(id(name))
        for node, name, message, scope in self.named:
            uses = reads.get((id(scope.node), name), [])
            if uses and all(use in self.folded for use in uses):
                continue
            self.report(node, message)

    def _constant(self, seed: cst.BaseExpression) -> bool:
        """A literal seed, or a name bound once at module level to a literal (`SEED = 0`)."""
        if isinstance(seed, cst.Integer):
            return True
        if isinstance(seed, cst.UnaryOperation) and isinstance(seed.expression, cst.Integer):
            return True
        if not isinstance(seed, cst.Name):
            return False
        found = self.walk.scope.lookup(seed.value)
        if found is None:
            return False
        owner, binding = found
        if owner.kind != "module" or len(binding.nodes) != 1:
            return False
        return self.analysis.module_state.assigns_integer_literal(binding.nodes[0])


def _seed(node: cst.Call) -> cst.BaseExpression | None:
    for arg in node.args:
        if arg.keyword is None and not arg.star:
            return arg.value
        if arg.keyword is not None and arg.keyword.value == "seed":
            return arg.value
    return None
