"""One abstract interpreter for Python's control flow, parametrised by a value domain.

`FlowInterpreter` runs over one function body (or a module's top level) in source order and owns
everything that decides *which* state a statement sees: `if`/`elif`/`else` and `match` joins, loops
run to a bounded fixed point, `try`/`except`/`else`/`finally`, `return`/`raise`/`break`/`continue`
ending paths, `with`, comprehensions in their own scope, walrus bindings, and the environment a
nested function or lambda closes over. The domain says what values *are*: how an expression
evaluates, how values join, what iterating or unpacking one gives.

The result holds the value of every expression it evaluated (by node id), the environment at the
exit, the join of every `return` value, and the effects the domain emitted, in order. Code that no
path reaches (after `return`, `raise`, `break`, `continue`) is still evaluated, in the last state
before it, so that rules see it; `unreachable` tells a domain, and nothing it does reaches a live
path.

Besides the names, each path may carry one more state of the domain's own (`path_state`: for the
pending-work domain, the device queue): it is copied wherever the path branches, joined by the
domain's `join_path` where paths meet, and kept with the names, so every construct treats it alike.

A domain may also ask for control flow inside an expression: `alternatives` evaluates branches of
which one runs (`a if t else b`, the right side of `and`), and `apply_in_place` runs a function
once per element where a call applies it (`jax.tree.map(f, tree)`), as a loop body.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Iterable, Iterator, Protocol, Sequence, TypeVar

import libcst as cst

from ..syntax.walk import COMPREHENSIONS, ENUMERATORS, EXPRESSION_TYPES, node_types, target_names
from .patterns import irrefutable, pattern_captures

V = TypeVar("V")
#: name -> value; None stands for "no path reaches here"
Env = dict[str, V]

#: how often a loop body is re-run before its head state is taken as it is
MAX_LOOP_PASSES = 4
#: Re-runs (passes after a loop's first) that one run may make in all: this many, plus
#: MAX_LOOP_PASSES - 1 for each loop of the body (a comprehension, a function applied in place once
#: per element, are loops too). A loop inside loops runs again on every pass of
#: each loop around it, so the bound per loop alone allows a number of passes exponential in the
#: nesting depth; with the budget per run, the work is at most (budget + 1) × the body's size.
#: Loops past the budget take their head after one pass, as after MAX_LOOP_PASSES.
LOOP_PASS_BUDGET = 64
#: where a path keeps the domain's own state (`path_state`): no Python name can spell it
PATH_STATE = "<path state>"

TRY_TYPES = (cst.Try, cst.TryStar) if hasattr(cst, "TryStar") else (cst.Try,)


class Domain(Protocol[V]):
    """What values are. The interpreter calls these; `evaluate` calls back `flow.eval(child)` for the
    sub-expressions it reads, so that every evaluated expression gets its value recorded (a domain
    that needs the values of names only may read `flow.env` itself, and hand `flow.eval` just what
    the interpreter owns: `:=`, lambdas, comprehensions)."""

    def join(self, a: V, b: V) -> V:
        """The value on a path that may have come either way."""

    def unbound(self, name: str) -> V:
        """A name the environment does not hold: a global, a builtin, a name from outside."""

    def opaque(self, node: cst.CSTNode) -> V:
        """What a binding the domain is not asked about holds (an import, a class, `except … as e`,
        a `with … as f` target, a `match` capture), and what `del` leaves in a name or stores."""

    def evaluate(self, node: cst.BaseExpression, flow: "FlowInterpreter[V]") -> V:
        """Every expression but names, `:=`, lambdas and comprehensions, which the interpreter owns."""

    def function(self, node: cst.FunctionDef | cst.Lambda) -> V:
        """The value a `def` binds, or a lambda evaluates to."""

    def comprehension(self, node: cst.BaseExpression, elements: Sequence[V]) -> V:
        """The value of a comprehension whose element (for a dict: key, value) evaluated to `elements`."""

    def iterate(self, target: cst.BaseExpression, iterable: cst.BaseExpression, value: V,
                flow: "FlowInterpreter[V]") -> None:
        """Binds a `for` target (through `flow.bind`) to what iterating `value` gives."""

    def unpack(self, value: V, count: int, starred: int | None) -> list[V]:
        """`a, *b, c = value`: the value bound to each of `count` targets (`starred`: the index of `*b`)."""

    def augmented(self, current: V, operand: V, operator: cst.BaseAugOp) -> V:
        """`x op= operand` where `x` held `current`."""

    def assigned(self, name: str, value: V, source: cst.BaseExpression | None) -> None:
        """Called for each name binding, with the expression it came from when there is one."""


#: Hooks a domain may define, for what Python does implicitly at a statement (looked up once):
#:   truth(test, value, flow)      the value of an `if`/`while`/`assert` test, a comprehension's
#:                                 `if` or a `match` subject is taken as a bool (or compared)
#:   store(target, value, flow)    `obj.attr = value`, `obj[i] = value` (default: the target is read)
#:   exit_with(node, flow)         a `with` block is left normally: its managers' `__exit__` run
#:   enter_handler(node, handler, flow)  an `except` clause of `node` (a `try`) starts, in the
#:                                 state where the exception left
#:   known_truth(value)            True/False when the value of an `if` test is a constant the
#:                                 domain knows (the other branch is dead), else None
#:   bound(name, value, target, flow)  what a name holds once bound to `value` (default: `value`);
#:                                 `target` is the node that binds it (a Name target, a `def`, a
#:                                 class, an import alias, an `except` clause, a `match` capture)
#:   returning(node, value, flow)  a `return` statement (or a lambda's body, `node` then being that
#:                                 expression) leaves with `value` in the current state; called for
#:                                 unreachable ones too (`flow.unreachable` tells)
#:   join_path(a, b)               the path state where two paths meet (default: `join`)
#:   narrowed(test, holds, flow)   names whose value an `if` test tells inside a branch (`holds`:
#:                                 the branch where the test is true): {name: value}, or None
#:   iterates(node)                whether a `for` loop is taken to run its body at least once:
#:                                 the state after it is then the state after an iteration, without
#:                                 the path that skips the body (default: that path is kept)
#:   absent(name)                  what a name holds, where paths meet, on a path that has not bound
#:                                 it (default: `unbound`); a domain whose join can leave such a
#:                                 path out (reading the name there raises NameError) returns its
#:                                 bottom
#:   enter_statement(node, flow)   a statement (simple or compound, of any block) is about to run
#:   leave_statement(node, flow)   a statement has run, on the paths that go on after it (a domain
#:                                 defines both hooks or neither)
#: and an attribute: `reads_closures = True` for a domain that reads `flow.closures` (the state
#: where each `def` and lambda was met); for others that state is not copied.
OPTIONAL_HOOKS = ("truth", "store", "exit_with", "enter_handler", "known_truth", "bound", "returning",
                  "join_path", "narrowed", "iterates", "absent", "enter_statement", "leave_statement")


@dataclass
class FlowResult(Generic[V]):
    """What one run of the interpreter found."""

    #: id(expression) -> its value where it was (last) evaluated
    values: dict[int, Any]
    #: the environment where the body ends normally; None when no path reaches the end
    exit: dict[str, Any] | None
    #: the join of every `return <value>`; None when the body never returns a value
    returned: Any | None
    #: what the domain emitted, in evaluation order
    effects: list[Any] = field(default_factory=list)
    #: id(nested def or lambda) -> the environment where it was defined
    closures: dict[int, dict[str, Any]] = field(default_factory=dict)

    def value_at(self, node: cst.CSTNode) -> Any | None:
        return self.values.get(id(node))

    @property
    def exit_path_state(self) -> Any | None:
        """The domain's path state where the body ends normally (None when no path reaches it)."""
        return self.exit.get(PATH_STATE) if self.exit is not None else None


@dataclass
class _Loop:
    #: the loop: a `for` or `while`, a comprehension, or the call that applies a function per element
    node: cst.CSTNode | None = None
    breaks: list[dict] = field(default_factory=list)
    continues: list[dict] = field(default_factory=list)


@dataclass
class _Try:
    #: the join of the states at every statement of the `try` body: where an exception may leave it
    raised: dict | None = None


class FlowInterpreter(Generic[V]):
    """Runs a domain over one body. Create one per run; read the result from `run`."""

    def __init__(self, domain: Domain[V]) -> None:
        self.domain = domain
        self.env: dict[str, V] | None = {}
        self.values: dict[int, V] = {}
        self.effects: list[Any] = []
        self.closures: dict[int, dict[str, V]] = {}
        self._returned: V | None = None
        self._loops: list[_Loop] = []
        #: re-runs of loop bodies left to this run (LOOP_PASS_BUDGET), and the loops met so far
        self._passes_left = LOOP_PASS_BUDGET
        self._loops_met: set[int] = set()
        self._tries: list[_Try] = []
        #: evaluating unreachable code: its returns, breaks and raises reach nothing
        self._dead = False
        #: the simple statement being interpreted (`x = f(y)`, `f(y)`, `return y` …), None outside one
        self.current_statement: cst.BaseSmallStatement | None = None
        #: for each function applied in place (`apply_in_place`): the states its `return`s leave in
        self._applied: list[list[dict]] = []
        (self._truth, self._store, self._exit_with, self._enter_handler, self._known_truth, self._bound,
         self._returning, join_path, self._narrowed, self._iterates, absent, self._enter_statement,
         self._leave_statement) = (
            getattr(domain, hook, None) for hook in OPTIONAL_HOOKS)
        self._join_path = join_path or domain.join
        self._absent = absent or domain.unbound
        #: the state at each `def` and lambda is copied only for a domain that reads it: a copy of a
        #: module's state per function made memory quadratic in the functions of a large file
        self._keeps_closures = getattr(domain, "reads_closures", False)

    # -- entry ----------------------------------------------------------------------------------
    def run(self, body: cst.CSTNode | Sequence[cst.CSTNode], entry: dict[str, V] | None = None,
            path_state: Any | None = None) -> FlowResult[V]:
        """Runs a function (its body), a module, a suite or a list of statements from `entry`, with
        the domain's own state of the path (if it keeps one) starting as `path_state`."""
        self.env = dict(entry or {})
        if path_state is not None:
            self.env[PATH_STATE] = path_state
        if type(body) in (cst.FunctionDef, cst.Lambda):
            body = body.body
        if type(body) in EXPRESSION_TYPES:  # a lambda's body is what it returns
            self._return(self.eval(body), body)
        else:
            self.block(body)
        return FlowResult(self.values, self.env, self._returned, self.effects, self.closures)

    def emit(self, effect: Any) -> None:
        """Records an effect of the domain (a key consumed, work queued …) in evaluation order."""
        self.effects.append(effect)

    def value_at(self, node: cst.CSTNode) -> V | None:
        return self.values.get(id(node))

    @property
    def path_state(self) -> Any | None:
        """The domain's own state of the current path (None where no path reaches)."""
        env = self.env
        return env.get(PATH_STATE) if env is not None else None

    @path_state.setter
    def path_state(self, state: Any) -> None:
        if self.env is not None:
            self.env[PATH_STATE] = state

    @property
    def unreachable(self) -> bool:
        """Whether the code being interpreted is reached by no path (its effects reach nothing)."""
        return self._dead

    @property
    def loops(self) -> list[cst.CSTNode]:
        """The loops around the code being interpreted, innermost last: `for` and `while` statements,
        comprehensions, and calls that apply a function in place (`apply_in_place`)."""
        return [loop.node for loop in self._loops]

    # -- statements -----------------------------------------------------------------------------
    def block(self, body: cst.CSTNode | Sequence[cst.CSTNode]) -> None:
        if type(body) is cst.SimpleStatementSuite:
            # a body on its compound statement's line (`for x in xs: y = f(x)`, `def f(): return 1`)
            # holds small statements, which run as the statement line they make up
            self.statement(body)
            return
        if type(body) in _BODY_HOLDERS:
            body = body.body
        for index, statement in enumerate(body):
            live = self.env
            if live is None:
                return
            self.statement(statement)
            if self.env is None and index + 1 < len(body):
                self._unreachable(body[index + 1:], live)
                return

    def _unreachable(self, statements: Sequence[cst.CSTNode], state: dict[str, V]) -> None:
        """Code no path reaches (after `return`, `raise`, `while True:` …) still gets values, read
        in the last state before it, so that rules see it; nothing it does reaches a live path."""
        dead = self._dead
        self._dead = True
        for statement in statements:
            if self.env is None:
                self.env = dict(state)
            self.statement(statement)
        self.env = None
        self._dead = dead

    def statement(self, node: cst.CSTNode) -> None:
        if self._enter_statement is None:
            self._statement(node)
            return
        self._enter_statement(node, self)
        self._statement(node)
        if self.env is not None:
            self._leave_statement(node, self)

    def _statement(self, node: cst.CSTNode) -> None:
        if self._tries and not self._dead:
            self._note_may_raise()
        kind = type(node)
        if kind is cst.SimpleStatementLine or kind is cst.SimpleStatementSuite:
            for small in node.body:
                if self.env is None:
                    return
                self.small_statement(small)
        elif kind is cst.If:
            self._if(node)
        elif kind is cst.For or kind is cst.While:
            self._loop(node)
        elif kind is cst.FunctionDef:
            self._def(node)
        elif kind is cst.ClassDef:
            for decorator in node.decorators:
                self.eval(decorator.decorator)
            for base in (*node.bases, *node.keywords):
                self.eval(base.value)
            self.bind_name(node.name.value, self.domain.opaque(node), None, node)
        elif kind is cst.With:
            for item in node.items:
                self.eval(item.item)
                if item.asname is not None:
                    self.bind(item.asname.name, self.domain.opaque(item))
            self.block(node.body)
            if self._exit_with is not None and self.env is not None:
                self._exit_with(node, self)
        elif kind in TRY_TYPES:
            self._try(node)
        elif kind is cst.Match:
            self._match(node)

    def small_statement(self, node: cst.BaseSmallStatement) -> None:
        outer, self.current_statement = self.current_statement, node
        self._small_statement(node)
        self.current_statement = outer

    def _small_statement(self, node: cst.BaseSmallStatement) -> None:
        kind = type(node)
        if kind is cst.Assign:
            value = self.eval(node.value)
            for target in node.targets:
                self.bind(target.target, value, node.value)
        elif kind is cst.Expr:
            self.eval(node.value)
        elif kind is cst.Return:
            self._return(self.eval(node.value) if node.value is not None else None, node)
        elif kind is cst.AugAssign:
            operand = self.eval(node.value)
            current = self.eval(node.target)
            if isinstance(node.target, cst.Name):
                self.bind_name(node.target.value, self.domain.augmented(current, operand, node.operator), None,
                               node.target)
        elif kind is cst.AnnAssign:
            if node.value is not None:
                self.bind(node.target, self.eval(node.value), node.value)
        elif kind is cst.Raise:
            for part in (node.exc, node.cause.item if node.cause is not None else None):
                if part is not None:
                    self.eval(part)
            if self._tries and not self._dead:
                self._note_may_raise()
            self.env = None
        elif kind is cst.Assert:
            self.test(node.test)
            if node.msg is not None:
                self.eval(node.msg)
        elif kind is cst.Break:
            if self._loops and not self._dead:
                self._loops[-1].breaks.append(self.env)
            self.env = None
        elif kind is cst.Continue:
            if self._loops and not self._dead:
                self._loops[-1].continues.append(self.env)
            self.env = None
        elif kind is cst.Del:
            # `del x` unbinds `x` (a later read would fail); `del x[k]`, `del obj.attr` change an object
            self.bind(node.target, self.domain.opaque(node))
        elif kind is cst.Import or kind is cst.ImportFrom:
            if type(node.names) is cst.ImportStar:
                # which names `from m import *` binds is not in the code: any name bound before it
                # may be rebound, as an import rebinds it (names bound only by it are unbound here)
                if self.env is not None:
                    value = self.domain.opaque(node)
                    for name in [name for name in self.env if name != PATH_STATE]:
                        self.bind_name(name, value, None, node)
            else:
                for alias in node.names:
                    local = alias.asname.name if alias.asname else alias.name
                    while type(local) is cst.Attribute:  # `import a.b` binds `a`
                        local = local.value
                    if isinstance(local, cst.Name):
                        self.bind_name(local.value, self.domain.opaque(alias), None, alias)

    def _return(self, value: V | None, node: cst.CSTNode) -> None:
        if self._applied:  # the end of one application of a function run in place, not of the run
            if not self._dead:
                self._applied[-1].append(self.env)
            self.env = None
            return
        if self._returning is not None:
            self._returning(node, value, self)
        if self._dead:
            self.env = None
            return
        if value is not None:
            self._returned = value if self._returned is None else self.domain.join(self._returned, value)
        if self._tries:
            self._note_may_raise()  # a `finally` still runs
        self.env = None

    def test(self, node: cst.BaseExpression) -> V:
        """Evaluates an expression whose value is taken as a bool."""
        value = self.eval(node)
        if self._truth is not None:
            self._truth(node, value, self)
        return value

    def _if(self, node: cst.If) -> None:
        test = self.test(node.test)
        known = self._known_truth(test) if self._known_truth is not None else None
        if known is not None:
            # a test on a constant the domain knows: the other branch never runs, so it is not
            # interpreted (its expressions get no values, and rules do not judge them)
            if known:
                self.block(node.body)
            elif isinstance(node.orelse, cst.If):
                self.statement(node.orelse)
            elif node.orelse is not None:
                self.block(node.orelse.body)
            return
        before = self.env
        self.env = dict(before)
        self._narrow(node.test, True)
        self.block(node.body)
        after_body = self.env
        self.env = dict(before)
        self._narrow(node.test, False)
        if type(node.orelse) is cst.If:
            self.statement(node.orelse)
        elif node.orelse is not None:
            self.block(node.orelse.body)
        self.env = self.join_envs([after_body, self.env])

    def _narrow(self, test: cst.BaseExpression, holds: bool) -> None:
        """Inside a branch, what the domain learns from its test (`if not isinstance(x, Tracer):`)."""
        if self._narrowed is None or self.env is None:
            return
        found = self._narrowed(test, holds, self)
        if found:
            self.env.update(found)

    def _loop(self, node: cst.For | cst.While) -> None:
        is_for = type(node) is cst.For
        iterated = self.eval(node.iter) if is_for else None
        loop = _Loop(node)
        self._loops.append(loop)
        head = self.env
        leaving = None  # a `while` is left from its head, once its test is evaluated false
        self._meet_loop(node)
        passes, settled = 0, False
        back = None
        while True:
            self.env = dict(head)
            if is_for:
                self.domain.iterate(node.target, node.iter, iterated, self)
            else:
                self.test(node.test)
                leaving = dict(self.env)
            self.block(node.body)
            passes += 1
            back = self.join_envs([self.env, *loop.continues])
            loop.continues.clear()
            widened = self.join_envs([head, back])
            if widened == head:
                settled = True
                break
            head = widened
            if not self._pass_again(passes):
                break
        if not settled:
            if not is_for:  # no fixed point: the test is read once more in the last head state
                self.env = dict(head)
                self.test(node.test)
                leaving = self.env
        self._loops.pop()
        if is_for:
            iterates = self._iterates is not None and back is not None and self._iterates(node)
            self.env = dict(back) if iterates else dict(head)
        else:
            self.env = None if _always_true(node.test) else leaving
        if node.orelse is not None and self.env is not None:
            self.block(node.orelse.body)
        self.env = self.join_envs([self.env, *loop.breaks])

    def _def(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            self.eval(decorator.decorator)
        self._defaults(node.params)
        if self._keeps_closures:
            self.closures[id(node)] = dict(self.env)
        self.bind_name(node.name.value, self.domain.function(node), None, node)

    def _defaults(self, params: cst.Parameters) -> None:
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None:
                self.eval(param.default)

    def _try(self, node: cst.Try) -> None:
        frame = _Try()
        self._tries.append(frame)
        self.block(node.body)
        self._tries.pop()
        body_end = self.env
        handler_entry = self.join_envs([frame.raised, body_end])
        if self._tries:  # what the handlers do not catch reaches the enclosing `try`
            outer = self._tries[-1]
            outer.raised = self.join_envs([outer.raised, frame.raised])
        ends = []
        self.env = body_end
        if node.orelse is not None and self.env is not None:
            self.block(node.orelse.body)
        ends.append(self.env)
        for handler in node.handlers:
            self.env = dict(handler_entry)
            if self._enter_handler is not None:
                self._enter_handler(node, handler, self)
            if handler.type is not None:
                self.eval(handler.type)
            if handler.name is not None:
                if isinstance(handler.name.name, cst.Name):
                    self.bind_name(handler.name.name.value, self.domain.opaque(handler), None, handler)
                else:
                    self.bind(handler.name.name, self.domain.opaque(handler))
            self.block(handler.body)
            ends.append(self.env)
        normal = self.join_envs(ends)
        if node.finalbody is not None:
            # on the normal paths it runs from their join; on the others (return, raise) it runs too
            self.env = normal if normal is not None else dict(handler_entry)
            self.block(node.finalbody.body)
            if normal is None:
                self.env = None
        else:
            self.env = normal

    def _match(self, node: cst.Match) -> None:
        self.test(node.subject)
        before = self.env
        ends = []
        exhaustive = False
        for case in node.cases:
            self.env = dict(before)
            for binder, capture in pattern_captures(case.pattern):
                self.bind_name(capture.value, self.domain.opaque(binder), None, binder)
            if case.guard is not None:
                self.eval(case.guard)
            self.block(case.body)
            ends.append(self.env)
            if case.guard is None and irrefutable(case.pattern):
                exhaustive = True
                break
        if not exhaustive:
            ends.append(before)
        self.env = self.join_envs(ends)

    def _note_may_raise(self) -> None:
        frame = self._tries[-1]
        joined = self.join_envs([frame.raised, self.env])
        # the current state keeps changing in place: the frame keeps its own copy
        frame.raised = dict(joined) if joined is self.env and joined is not None else joined

    # -- bindings -------------------------------------------------------------------------------
    def bind(self, target: cst.BaseExpression, value: V, source: cst.BaseExpression | None = None) -> None:
        """Binds an assignment target (a name, a tuple/list of targets, an attribute or subscript)."""
        kind = type(target)
        if kind is cst.Name:
            self.bind_name(target.value, value, source, target)
        elif kind is cst.Tuple or kind is cst.List:
            elements = target.elements
            starred = next((i for i, e in enumerate(elements) if type(e) is cst.StarredElement), None)
            if (starred is None and type(source) in (cst.Tuple, cst.List) and len(source.elements) == len(elements)
                    and not any(isinstance(e, cst.StarredElement) for e in source.elements)):
                # `a, b = x, y`: each target gets its own element
                for element, given in zip(elements, source.elements):
                    self.bind(element.value, self.values.get(id(given.value), value), given.value)
                return
            for element, part in zip(elements, self.domain.unpack(value, len(elements), starred)):
                inner = element.value
                self.bind(inner.value if type(inner) is cst.StarredElement else inner, part)
        elif kind is cst.StarredElement:
            self.bind(target.value, value)
        elif self._store is not None:  # `obj.attr = v`, `x[i] = v`
            self._store(target, value, self)
        else:  # the parts are read
            self.eval(target)

    def bind_name(self, name: str, value: V, source: cst.BaseExpression | None,
                  target: cst.CSTNode | None = None) -> None:
        """Binds one name; `target` is the node that binds it, when there is one."""
        if self._bound is not None:
            value = self._bound(name, value, target, self)
        if self.env is not None:
            self.env[name] = value
        self.domain.assigned(name, value, source)

    def join_envs(self, envs: Iterable[dict[str, V] | None]) -> dict[str, V] | None:
        """The join of the states of several paths; None when none of them is reachable."""
        live = [env for env in envs if env is not None]
        if not live:
            return None
        if len(live) == 1:
            return live[0]
        first, join, unbound = live[0], self.domain.join, self._absent
        merged = dict(first)
        for env in live[1:]:
            if env is first:
                continue
            for name, value in env.items():
                current = merged.get(name)
                if current is None:
                    merged[name] = join(unbound(name), value)
                elif current is not value and current != value:
                    merged[name] = join(current, value) if name is not PATH_STATE else self._join_path(current, value)
            for name in merged.keys() - env.keys():
                merged[name] = join(merged[name], unbound(name))
        return merged

    # -- expressions ----------------------------------------------------------------------------
    def eval(self, node: cst.BaseExpression) -> V:
        """The value of an expression in the current state; recorded by node id."""
        kind = type(node)
        if kind is cst.Name:
            env = self.env
            value = env.get(node.value) if env is not None else None
            if value is None:
                value = self.domain.unbound(node.value)
        elif kind is cst.NamedExpr:
            value = self.eval(node.value)
            self.bind(node.target, value, node.value)
        elif kind is cst.Lambda:
            self._defaults(node.params)
            if self._keeps_closures:
                self.closures[id(node)] = dict(self.env or {})
            value = self.domain.function(node)
        elif kind in _COMPREHENSION_TYPES:
            value = self._comprehension(node)
        else:
            value = self.domain.evaluate(node, self)
        self.values[id(node)] = value
        return value

    def eval_children(self, node: cst.CSTNode) -> None:
        """Evaluates every expression directly below a node (through arguments, slices, elements)."""
        for child in expressions_below(node):
            self.eval(child)

    def _comprehension(self, node) -> V:
        """A comprehension is a loop in a scope of its own: its first iterable is evaluated once, in
        the enclosing scope; the rest runs once per element, to a fixed point like a loop body, so
        that what one element leaves in the state (a `:=`, an effect the domain keeps) is seen by the
        next. The loop variables are the comprehension's own; a `:=` inside binds in the enclosing
        scope."""
        saved = self.env
        first = node.for_in
        iterated = self.eval(first.iter)
        bound: set[str] = set()
        comp: cst.CompFor | None = first
        while comp is not None:
            bound.update(target_names(comp.target))
            comp = comp.inner_for_in
        head = dict(self.env or {})
        shadowed = {name: head[name] for name in bound if name in head}
        loop = _Loop(node)
        self._loops.append(loop)
        self._meet_loop(node)
        passes = 0
        while True:
            self.env = dict(head)
            comp = first
            while comp is not None:
                if comp is not first:
                    iterated = self.eval(comp.iter)
                self.domain.iterate(comp.target, comp.iter, iterated, self)
                for condition in comp.ifs:
                    self.test(condition.test)
                comp = comp.inner_for_in
            if type(node) is cst.DictComp:
                elements = [self.eval(node.key), self.eval(node.value)]
            else:
                elements = [self.eval(node.elt)]
            end = self.env
            for name in bound:  # rebound by every element: what goes round is the rest
                if name in shadowed:
                    end[name] = shadowed[name]
                else:
                    end.pop(name, None)
            passes += 1
            widened = self.join_envs([head, end])
            if widened == head:
                break
            head = widened
            if not self._pass_again(passes):
                break
        self._loops.pop()
        self.env = head if saved is not None else None
        return self.domain.comprehension(node, elements)

    def _meet_loop(self, node: cst.CSTNode) -> None:
        """The first visit of a loop adds its own re-runs to the run's budget (LOOP_PASS_BUDGET)."""
        if id(node) not in self._loops_met:
            self._loops_met.add(id(node))
            self._passes_left += MAX_LOOP_PASSES - 1

    def _pass_again(self, passes: int) -> bool:
        """Whether a loop body that has run `passes` times without settling runs once more."""
        if passes == MAX_LOOP_PASSES or not self._passes_left:
            return False
        self._passes_left -= 1
        return True

    # -- for domains: expression-level control flow ---------------------------------------------
    def alternatives(self, *branches: cst.BaseExpression | None,
                     test: cst.BaseExpression | None = None) -> list[V | None]:
        """Evaluates expressions of which only one runs (`body` or `orelse` of `a if t else b`), or
        maybe none (`(right, None)` for the right side of `a and b`): each from the current state,
        which is then the join of the states they end in. Returns their values (None for None).
        `test`: the two branches are where it holds and where it does not (`a if t else b`)."""
        before = self.env
        if before is None:
            return [self.eval(branch) if branch is not None else None for branch in branches]
        values: list[V | None] = []
        ends: list[dict[str, V] | None] = []
        for branch in branches:
            if branch is None:
                values.append(None)
                ends.append(before)
                continue
            self.env = dict(before)
            if test is not None:
                self._narrow(test, not values)
            values.append(self.eval(branch))
            ends.append(self.env)
        self.env = self.join_envs(ends)
        return values

    def apply_in_place(self, call: cst.CSTNode, function: cst.FunctionDef | cst.Lambda,
                       own_names: Iterable[str]) -> None:
        """Runs a function here, in the current state, as the body of a loop over the elements a
        `call` applies it to (`jax.tree.map(f, tree)` calls `f` once per leaf), to a fixed point:
        what one application leaves in the state is seen by the next, and the call may apply it to
        no element at all. The function's own names (parameters, locals) are not the caller's: each
        application starts without them, and the caller's are kept. A `return` ends one
        application; `call` stands for the loop in `loops` meanwhile."""
        if self.env is None:
            return
        own = set(own_names)
        kept = {name: self.env[name] for name in own if name in self.env}
        head = {name: value for name, value in self.env.items() if name not in own}
        returns: list[dict] = []
        self._applied.append(returns)
        self._loops.append(_Loop(call))
        self._meet_loop(call)
        body = function.body
        passes = 0
        while True:
            self.env = dict(head)
            if isinstance(body, cst.BaseExpression):
                self.eval(body)
            else:
                self.block(body)
            back = self.join_envs([self.env, *returns])
            returns.clear()
            if back is not None:
                back = {name: value for name, value in back.items() if name not in own}
            passes += 1
            widened = self.join_envs([head, back])
            if widened == head:
                break
            head = widened
            if not self._pass_again(passes):
                break
        self._loops.pop()
        self._applied.pop()
        head = dict(head)
        head.update(kept)
        self.env = head


_COMPREHENSION_TYPES = frozenset(COMPREHENSIONS)
_BODY_HOLDERS = node_types(cst.Module, cst.BaseSuite)


def expressions_below(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """The outermost expressions under a node that is not one (an argument, a slice, an element)."""
    enumerator = ENUMERATORS[type(node)]
    if enumerator is None:
        return
    for _, child in enumerator(node):
        if type(child) in EXPRESSION_TYPES:
            yield child
        else:
            yield from expressions_below(child)


def _always_true(test: cst.BaseExpression) -> bool:
    """`while True:` / `while 1:`: the loop is left only through `break` (or return/raise)."""
    if isinstance(test, cst.Name):
        return test.value == "True"
    return isinstance(test, cst.Integer) and test.value not in ("0", "0x0", "0o0", "0b0")
