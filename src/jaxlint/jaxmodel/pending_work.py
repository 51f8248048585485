"""The pending-work domain: which JAX work is still queued on the device when a clock is read.

Outside a trace, JAX returns from a dispatch as soon as the work is queued (`dispatch.py` says which
calls queue work and which operations wait for a result). A timing `t0 = clock(); …; clock() - t0`
that nothing waited in measures the dispatch, not the computation. This domain follows, on the
generic `dataflow` interpreter, for every path through one scope:

* the device queue of the path, the interpreter's path state (copied where paths branch, joined
  where they meet): the clocks read so far, and the work queued and not known to be waited for,
  each entry with the clocks read before it and the work queued before it (the device runs its
  queue in order: waiting for one result waits for everything queued before it);
* for every name, the work its value may depend on, the clock reads it may hold, and the nested
  functions it may be (calling one reads what it closes over).

Joins are "may": work queued on some path is pending, work waited for on some path is waited for,
and anything that might read a value (an unknown call given it, a test, a format) waits for it —
so a timing is reported only when the work is certainly not waited for on the paths that reach it.
A clock read records the queue it sees; a subtraction of two clock reads (`end - start`, not in a
comparison: `clock() - start > budget` is a deadline) is a measured interval, emitted as an effect.

In a notebook, a magic that prints the wall-clock time of what it runs (`%time y = f(x)`, a `%%time`
cell: `syntax/magics.py`) reads a clock before its statement or its cell's first statement and
another after its statement or its cell's last: a measured interval like any other, whose closing
read is the magic's marker comment (`magic_timing`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from ..dataflow import FlowInterpreter
from ..dataflow.interpreter import expressions_below
from .dispatch import SYNC_NAMES, WAIT_FUNCTIONS, WAIT_METHODS, WORK, Dispatch
from ..semantic.containers import MUTATING_METHODS
from ..semantic.scopes import Scope
from ..semantic.source_file import CELL_BOUNDARY
from .traced import TracedFunctions
from .values import STATIC_ATTRIBUTES
from ..syntax.magics import FEW_LOOPS, MASK_MARKER, Magic, magic_of, starts_cell
from ..syntax.walk import last_name, walk

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

#: Clocks read to measure a duration (`end - start`). Process and thread CPU clocks are left out:
#: they do not count the device's (or other threads') time even when the work is waited for.
CLOCKS = frozenset({
    "time.time", "time.time_ns", "time.perf_counter", "time.perf_counter_ns", "time.monotonic",
    "time.monotonic_ns", "timeit.default_timer", "datetime.datetime.now", "datetime.datetime.utcnow",
})
CLOCK_NAMES = frozenset(name.rsplit(".", 1)[1] for name in CLOCKS)
#: Setting this flag makes the CPU backend dispatch synchronously: timings there are right.
SYNC_DISPATCH_FLAG = "jax_cpu_enable_async_dispatch"
#: Builtins that pass JAX values through without reading them.
PASS_THROUGH = frozenset(f"builtins.{name}" for name in (
    "list", "tuple", "dict", "zip", "enumerate", "reversed", "iter", "sum",
))
#: Builtins whose result says nothing about the values (and which do not read them).
OPAQUE = frozenset(f"builtins.{name}" for name in (
    "len", "isinstance", "type", "id", "hasattr", "callable", "range",
))
#: Container methods that store a value without reading it (`losses.append(loss)`): the mutating
#: ones less those that remove or reorder, which compare or hand back what the container holds.
STORE_METHODS = MUTATING_METHODS - {"pop", "popleft", "popitem", "remove", "discard", "clear", "sort", "reverse"}
#: Context managers known not to wait for JAX work when they close (JAX's own, but its profiler, too).
QUIET_CONTEXTS = frozenset({
    "builtins.open", "io.open", "contextlib.suppress", "contextlib.nullcontext", "contextlib.redirect_stdout",
    "contextlib.redirect_stderr", "warnings.catch_warnings", "numpy.errstate", "numpy.printoptions",
    "tempfile.TemporaryDirectory", "tempfile.NamedTemporaryFile", "threading.Lock",
})
#: The `timeit` module's calls that run a statement `number` times between two clock reads, with
#: where `number` is among their positional parameters (`timeit.Timer(stmt)`'s methods by name).
TIMEIT_CALLS = {"timeit.timeit": 3, "timeit.repeat": 4}
TIMER_METHODS = {"timeit": 0, "repeat": 1}
STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)

_NONE: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Work:
    """What a value may hold: results of queued work, clock reads, nested functions (ids of nodes)."""

    work: frozenset[int] = _NONE
    clocks: frozenset[int] = _NONE
    functions: frozenset[int] = _NONE
    #: it may hold something else (a parameter, a global, a value from a path that did not bind it)
    other: bool = False

    def __or__(self, other: "Work") -> "Work":
        if self is other or other is NOTHING:
            return self
        if self is NOTHING:
            return other
        return Work(self.work | other.work, self.clocks | other.clocks, self.functions | other.functions,
                    self.other or other.other)

    @property
    def clock_reads(self) -> frozenset[int]:
        """The clock reads it holds when it certainly holds one."""
        return self.clocks if not self.other and not self.work else _NONE


NOTHING = Work()
UNKNOWN = Work(other=True)


class Queued(NamedTuple):
    """One piece of queued work (its latest dispatch on the path)."""

    weight: str
    #: clock reads that came before it
    after: frozenset[int]
    #: work queued before it (waiting for this waits for that too)
    before: frozenset[int]


@dataclass(frozen=True)
class Queue:
    """The device queue on one path: the clocks read so far, the work not known to be waited for,
    and the work waited for since it was last queued, each with the clocks read after that wait."""

    clocks: frozenset[int] = _NONE
    pending: dict[int, Queued] = field(default_factory=dict)
    #: work id -> the clock reads that came after the wait for it on this path
    waited: dict[int, frozenset[int]] = field(default_factory=dict)

    def join(self, other: "Queue") -> "Queue":
        """Work waited for on one of the paths counts as waited for: two tests of one flag
        (`if jax_backend: y = step(x)` … `if jax_backend: y.block_until_ready()`) are not two
        independent choices, and a loop that waits may run at least once. A wait only answers for
        timings opened before it, though: work queued after a clock read on one path is still
        pending, for that read, where the other path waited for it before the read (the previous
        epoch's wait when the next epoch's steps run, met at the head of the inner loop)."""
        if self is other or self == other:
            return self
        waited = dict(self.waited)
        for key, since in other.waited.items():
            mine = waited.get(key)
            # a clock read after the wait on every path that waited
            waited[key] = since if mine is None else mine & since
        pending: dict[int, Queued] = {}
        for key in self.pending.keys() | other.pending.keys():
            mine, theirs = self.pending.get(key), other.pending.get(key)
            if mine is None or theirs is None:
                entry = mine or theirs
            else:
                entry = Queued(mine.weight, mine.after | theirs.after, mine.before | theirs.before)
            since = waited.get(key)
            if since is not None:
                # a timing opened before the wait on the other path counts that wait
                entry = entry._replace(after=entry.after & since)
                if not entry.after:
                    continue
            pending[key] = entry
        return Queue(self.clocks | other.clocks, pending, waited)

    def read_clock(self, clock: int) -> "Queue":
        """This read of `clock` comes after everything queued so far, and every wait so far."""
        pending = {key: entry._replace(after=entry.after - {clock}) if clock in entry.after else entry
                   for key, entry in self.pending.items()}
        waited = {key: since | {clock} for key, since in self.waited.items()}
        return Queue(self.clocks | {clock}, pending, waited)

    def queue(self, work: int, weight: str) -> "Queue":
        if not self.clocks:
            return self  # nothing queued before the first clock read is timed
        pending = dict(self.pending)
        pending.pop(work, None)  # the older dispatch of the same code is before this one
        pending[work] = Queued(weight, self.clocks, frozenset(pending))
        waited = self.waited
        if work in waited:
            waited = dict(waited)
            del waited[work]
        return Queue(self.clocks, pending, waited)

    def wait(self, work: frozenset[int]) -> "Queue":
        """Waiting for results of `work` waits for it and for everything queued before it."""
        waited = [key for key in work if key in self.pending]
        if not waited:
            return self
        pending = dict(self.pending)
        done = dict(self.waited)
        while waited:
            key = waited.pop()
            entry = pending.pop(key, None)
            if entry is not None:
                done[key] = _NONE
                waited.extend(before for before in entry.before if before in pending)
        return Queue(self.clocks, pending, done)

    def wait_all(self) -> "Queue":
        if not self.pending:
            return self
        return Queue(self.clocks, {}, {**self.waited, **dict.fromkeys(self.pending, _NONE)})

    def forget(self, work: frozenset[int]) -> "Queue":
        """Drops pending work whose state is unknown, without counting it as waited for."""
        if not any(key in work for key in self.pending):
            return self
        return Queue(self.clocks, {key: entry for key, entry in self.pending.items() if key not in work}, self.waited)


@dataclass(frozen=True)
class Interval:
    """An effect: a duration computed from the clock read `closing` and the opening reads `openings`."""

    closing: int
    openings: frozenset[int]


@dataclass
class Unwaited:
    """Work queued after the opening read of a timing and not waited for at its closing read."""

    node: cst.CSTNode
    #: the first name its result was bound to, if any
    name: str | None


class PendingWork:
    """The domain, run over one scope (a function body, a lambda, the module's top level)."""

    def __init__(self, ctx: "SourceFile", scope: Scope) -> None:
        self.ctx = ctx
        self.scope = scope
        self.dispatch = Dispatch.of(ctx)
        self.flow: FlowInterpreter[Work] = FlowInterpreter(self)
        #: id -> node, for the ids values and queues hold
        self.nodes: dict[int, cst.CSTNode] = {}
        #: dispatch id -> the order it was first queued in, and the first name its result was bound to
        self.order: dict[int, int] = {}
        self.names: dict[int, str] = {}
        #: clock read id -> the queue it saw (joined over paths and loop passes)
        self.seen: dict[int, Queue] = {}
        self._comparing = 0
        self._free_names: dict[int, frozenset[str]] = {}
        self._inside: dict[int, frozenset[int]] = {}
        #: a notebook's magics can time statements; the `%%time` cell whose timing is open
        self._magics = MASK_MARKER in ctx.source
        self._open_cell: Magic | None = None
        self._cell_opening = 0

    def run(self, node: cst.CSTNode) -> dict[int, list[Unwaited]]:
        """Closing clock read id -> the work it leaves unwaited (at least one piece of work each)."""
        entry: dict[str, Work] = {}
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            params = node.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params,
                          params.star_arg, params.star_kwarg):
                if isinstance(param, cst.Param):
                    entry[param.name.value] = UNKNOWN
        result = self.flow.run(node, entry, path_state=Queue())
        if self._open_cell is not None:
            self._close_timing(self._cell_opening, self._open_cell, self.flow)  # the last cell's end
        openings: dict[int, set[int]] = {}
        for effect in result.effects:
            if isinstance(effect, Interval):
                openings.setdefault(effect.closing, set()).update(effect.openings)
        found: dict[int, list[Unwaited]] = {}
        for closing, opened in openings.items():
            queue = self.seen.get(closing)
            if queue is None:
                continue
            unwaited = sorted((key for key, entry in queue.pending.items()
                               if entry.weight == WORK and entry.after & opened), key=self.order.__getitem__)
            if unwaited:
                found[closing] = [Unwaited(self.nodes[key], self.names.get(key)) for key in unwaited]
        return found

    # -- the queue of the current path ----------------------------------------------------------
    def _update(self, flow: FlowInterpreter, change) -> None:
        queue = flow.path_state
        if queue is not None:
            flow.path_state = change(queue)

    def _wait(self, flow: FlowInterpreter, value: Work) -> None:
        if value.work:
            self._update(flow, lambda queue: queue.wait(value.work))

    def _wait_all(self, flow: FlowInterpreter) -> None:
        self._update(flow, Queue.wait_all)

    def _queue(self, flow: FlowInterpreter, node: cst.CSTNode, weight: str) -> Work:
        key = id(node)
        self.nodes[key] = node
        self.order.setdefault(key, len(self.order))
        self._update(flow, lambda queue: queue.queue(key, weight))
        return Work(work=frozenset({key}))

    # -- the domain -----------------------------------------------------------------------------
    def join(self, a: Work, b: Work) -> Work:
        return a | b

    def join_path(self, a: Queue, b: Queue) -> Queue:
        return a.join(b)

    def unbound(self, name: str) -> Work:
        """A name of this scope not bound on a path holds nothing there (using it would fail: the
        paths that go on bound it); any other name comes from outside and may hold anything."""
        scope = self.scope
        if name in scope.bindings and name not in scope.globals and name not in scope.nonlocals:
            return NOTHING
        return UNKNOWN

    def opaque(self, node: cst.CSTNode) -> Work:
        return UNKNOWN

    def function(self, node: cst.FunctionDef | cst.Lambda) -> Work:
        self.nodes[id(node)] = node
        return Work(functions=frozenset({id(node)}))

    def comprehension(self, node: cst.BaseExpression, elements) -> Work:
        value = NOTHING
        for element in elements:
            value = value | element
        return value

    def iterate(self, target, iterable, value: Work, flow: FlowInterpreter) -> None:
        flow.bind(target, value)  # the parts of a result depend on the same work

    def unpack(self, value: Work, count: int, starred: int | None) -> list[Work]:
        return [value] * count

    def augmented(self, current: Work, operand: Work, operator) -> Work:
        return current | operand

    def assigned(self, name: str, value, source) -> None:
        if isinstance(value, Work) and value.work:
            latest = max(value.work, key=lambda key: self.order.get(key, -1))
            self.names.setdefault(latest, name)

    # -- optional hooks: what Python does implicitly --------------------------------------------
    def truth(self, test: cst.BaseExpression, value: Work, flow: FlowInterpreter) -> None:
        self._wait(flow, value)  # converting to bool reads the value

    def store(self, target: cst.BaseExpression, value: Work, flow: FlowInterpreter) -> None:
        """`self.params = …`, `out[i] = …`: the object now holds the value."""
        flow.eval(target)
        root = _root_name(target)
        if root is not None and value.work and flow.env is not None:
            flow.env[root] = flow.env.get(root, UNKNOWN) | Work(work=value.work)

    def exit_with(self, node: cst.With, flow: FlowInterpreter) -> None:
        if any(self._may_wait_on_exit(item.item) for item in node.items):
            self._wait_all(flow)  # a timer or profiler context may wait when it closes

    def enter_handler(self, node: cst.Try, handler: cst.ExceptHandler, flow: FlowInterpreter) -> None:
        """How much of the `try` body ran before the exception is unknown (and an error raised by a
        wait comes once the work is over): its work is not counted as pending in the handler."""
        inside = self._inside.get(id(node))
        if inside is None:
            inside = self._inside[id(node)] = _node_ids(node.body)
        self._update(flow, lambda queue: queue.forget(inside))

    # -- a notebook's magics that time what they run --------------------------------------------
    def enter_statement(self, node: cst.CSTNode, flow: FlowInterpreter) -> None:
        if not self._magics:
            return
        if self._open_cell is not None and starts_cell(node, CELL_BOUNDARY):
            self._close_timing(self._cell_opening, self._open_cell, flow)
            self._open_cell = None
        magic = magic_of(node)
        if magic is not None and magic.timed:
            self._read_clock(id(node), flow)
            if magic.whole_cell:
                self._open_cell, self._cell_opening = magic, id(node)

    def leave_statement(self, node: cst.CSTNode, flow: FlowInterpreter) -> None:
        if not self._magics:
            return
        magic = magic_of(node)
        if magic is not None and magic.timed and not magic.whole_cell:
            self._close_timing(id(node), magic, flow)

    def _close_timing(self, opening: int, magic: Magic, flow: FlowInterpreter) -> None:
        closing = id(magic.comment)
        self._read_clock(closing, flow)
        flow.emit(Interval(closing, frozenset({opening})))

    # -- expressions ----------------------------------------------------------------------------
    def evaluate(self, node: cst.BaseExpression, flow: FlowInterpreter) -> Work:
        kind = type(node)
        if kind is cst.Call:
            return self._call(node, flow)
        if kind is cst.Attribute:
            value = flow.eval(node.value)
            return NOTHING if node.attr.value in STATIC_ATTRIBUTES else value
        if kind is cst.BinaryOperation:
            left, right = flow.eval(node.left), flow.eval(node.right)
            if isinstance(node.operator, cst.Modulo) and isinstance(node.left, STRINGS):
                self._wait(flow, right)  # `"%.3f" % loss` formats, which reads the value
                return NOTHING
            if isinstance(node.operator, cst.Subtract) and not self._comparing:
                closing, opening = left.clock_reads, right.clock_reads
                if closing and opening:
                    for read in closing:
                        flow.emit(Interval(read, opening))
            if self.dispatch.jax_value(node, self.scope):
                return self._queue(flow, node, WORK)
            return left | right
        if kind is cst.UnaryOperation:
            value = flow.eval(node.expression)
            if isinstance(node.operator, cst.Not):
                self._wait(flow, value)
                return NOTHING
            return value
        if kind is cst.BooleanOperation:
            self._wait(flow, flow.eval(node.left))  # `a and b` converts `a` to bool
            self._wait(flow, flow.eval(node.right))
            return NOTHING
        if kind is cst.Comparison:
            # a duration compared with something is a deadline, not a measurement
            self._comparing += 1
            try:
                value = flow.eval(node.left)
                for target in node.comparisons:
                    value = value | flow.eval(target.comparator)
                    if isinstance(target.operator, (cst.In, cst.NotIn)):
                        self._wait(flow, value)  # membership compares and converts to bool
            finally:
                self._comparing -= 1
            return value
        if kind is cst.IfExp:
            self._wait(flow, flow.eval(node.test))
            return flow.eval(node.body) | flow.eval(node.orelse)
        if kind is cst.FormattedString:
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    self._wait(flow, flow.eval(part.expression))
                    for spec in part.format_spec or ():
                        if isinstance(spec, cst.FormattedStringExpression):
                            self._wait(flow, flow.eval(spec.expression))
            return NOTHING
        if kind is cst.Yield or kind is cst.Await:
            self._below(node, flow)
            self._wait_all(flow)  # the caller or the event loop may do anything meanwhile
            return NOTHING
        if kind is cst.Subscript:
            return flow.eval(node.value) | self._below_slices(node, flow)
        return self._below(node, flow)

    def _below(self, node: cst.CSTNode, flow: FlowInterpreter) -> Work:
        value = NOTHING
        for child in expressions_below(node):
            value = value | flow.eval(child)
        return value

    def _below_slices(self, node: cst.Subscript, flow: FlowInterpreter) -> Work:
        value = NOTHING
        for element in node.slice:
            value = value | self._below(element, flow)
        return value

    def _call(self, node: cst.Call, flow: FlowInterpreter) -> Work:
        func = node.func
        qname = self.ctx.names.qualified_name(func, self.scope)
        if qname in CLOCKS:
            return self._clock(node, flow)
        timed = self._timed_by_timeit(node, qname)
        if timed is not None:
            return self._timeit(node, timed, flow)
        receiver = NOTHING
        callee = NOTHING
        if isinstance(func, cst.Attribute) and qname is None:
            receiver = flow.eval(func.value)
        elif isinstance(func, (cst.Call, cst.Name)):
            callee = flow.eval(func)
        given = NOTHING
        for arg in node.args:
            given = given | flow.eval(arg.value)
        weight = self.dispatch.call(node, self.scope)
        if weight is not None:
            return self._queue(flow, node, weight)
        inputs = receiver | given
        # what the call may read: its inputs, and what the functions it may call close over
        reads = Work(work=inputs.work | self._closed_over(func, callee, inputs.functions, flow))
        if qname is not None:
            if qname in WAIT_FUNCTIONS:
                self._wait(flow, reads)
                return NOTHING
            if qname in PASS_THROUGH:
                return inputs
            if qname in OPAQUE:
                return NOTHING
        elif isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in WAIT_METHODS:
                self._wait(flow, reads)
                return receiver if method == "block_until_ready" else NOTHING
            if method in STORE_METHODS:
                root = _root_name(func.value)
                if root is not None and given.work and flow.env is not None:
                    flow.env[root] = flow.env.get(root, UNKNOWN) | Work(work=given.work)
                return NOTHING
        if self.ctx.fact(TracedFunctions).application(node, self.scope) is not None:
            return NOTHING  # `jax.jit(f)`: builds a function, runs nothing
        name = last_name(func)
        if name is not None and SYNC_NAMES.search(name):
            self._wait_all(flow)
            return NOTHING
        self._wait(flow, reads)  # an unknown call may read what it is given
        return reads

    def _timed_by_timeit(self, node: cst.Call, qname: str | None) -> cst.BaseExpression | None:
        """The callable `timeit.timeit(f, number=3)` (`timeit.repeat`, `timeit.Timer(f).timeit(3)`) runs
        a few times (`FEW_LOOPS` or fewer, written out) between its clock reads: a lambda without
        parameters or a name. None for any other call, or for the default million runs."""
        if qname in TIMEIT_CALLS:
            stmt, number = _argument(node, 0, "stmt"), _argument(node, TIMEIT_CALLS[qname], "number")
        elif type(node.func) is cst.Attribute and node.func.attr.value in TIMER_METHODS \
                and type(node.func.value) is cst.Call \
                and self.ctx.names.qualified_name(node.func.value.func, self.scope) == "timeit.Timer":
            stmt = _argument(node.func.value, 0, "stmt")
            number = _argument(node, TIMER_METHODS[node.func.attr.value], "number")
        else:
            return None
        if type(number) is not cst.Integer or not 0 < number.evaluated_value <= FEW_LOOPS:
            return None
        if type(stmt) is cst.Lambda and not stmt.params.params and not stmt.params.posonly_params \
                or type(stmt) is cst.Name:
            return stmt
        return None

    def _timeit(self, node: cst.Call, stmt: cst.BaseExpression, flow: FlowInterpreter) -> Work:
        """`timeit` reads its clock, runs the statement (what it returns is dropped) and reads it
        again: a measured interval that closes at the call."""
        for arg in node.args:
            if arg.value is not stmt:
                flow.eval(arg.value)
        opening = id(node.func)
        self._read_clock(opening, flow)
        flow.eval(stmt.body if type(stmt) is cst.Lambda else cst.Call(func=stmt))
        self._read_clock(id(node), flow)
        flow.emit(Interval(id(node), frozenset({opening})))
        return NOTHING

    def _clock(self, node: cst.Call, flow: FlowInterpreter) -> Work:
        self._read_clock(id(node), flow)
        return Work(clocks=frozenset({id(node)}))

    def _read_clock(self, key: int, flow: FlowInterpreter) -> None:
        queue = flow.path_state
        if queue is not None:
            seen = self.seen.get(key)
            self.seen[key] = queue if seen is None else seen.join(queue)
            flow.path_state = queue.read_clock(key)

    def _closed_over(self, func: cst.BaseExpression, callee: Work, given: frozenset[int],
                     flow: FlowInterpreter) -> frozenset[int]:
        """The work that the functions a call may run (the callee, functions given to it) read from
        the names of this scope, as they are now."""
        functions = [self.nodes[key] for key in callee.functions | given]
        if isinstance(func, cst.Name) and callee.other:
            found = self.scope.lookup(func.value)
            if found is not None:
                functions.extend(d for d in found[1].nodes if isinstance(d, cst.FunctionDef))
        env = flow.env
        work: frozenset[int] = _NONE
        if not functions or env is None:
            return work
        for function in functions:
            for name in self._names_in(function):
                value = env.get(name)
                if isinstance(value, Work) and value.work:
                    work = work | value.work
        return work

    def _names_in(self, function: cst.FunctionDef | cst.Lambda) -> frozenset[str]:
        found = self._free_names.get(id(function))
        if found is None:
            names: set[str] = set()

            def enter(node: cst.CSTNode, _field: str) -> bool:
                if type(node) is cst.Name:
                    names.add(node.value)
                return True

            walk(function.body, enter, None)
            found = self._free_names[id(function)] = frozenset(names)
        return found

    def _may_wait_on_exit(self, manager: cst.BaseExpression) -> bool:
        """A context manager built by a call of unknown code (`with Timer("step"):`) may wait on exit."""
        if not isinstance(manager, cst.Call):
            return False
        qname = self.ctx.names.qualified_name(manager.func, self.scope)
        if qname is None:
            return True
        return qname not in QUIET_CONTEXTS and not (qname.startswith("jax.") and not qname.startswith("jax.profiler."))


class PendingWorkFacts:
    """Per file: the unwaited work at each closing clock read, one interpreter run per scope asked about."""

    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        self._scopes: dict[int, dict[int, list[Unwaited]]] = {}

    @classmethod
    def of(cls, ctx: "SourceFile") -> "PendingWorkFacts":
        return ctx.fact(cls)

    def unwaited(self, clock: cst.CSTNode, scope: Scope) -> list[Unwaited]:
        """The work queued after the opening read of the timing `clock` closes, and not waited for
        before it, in the order it was queued; empty when `clock` closes no timing of JAX work."""
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        if scope.kind == "class":
            return []
        found = self._scopes.get(id(scope.node))
        if found is None:
            found = self._scopes[id(scope.node)] = PendingWork(self.ctx, scope).run(scope.node)
        return found.get(id(clock), [])

    def magic_timing(self, statement: cst.CSTNode, scope: Scope) -> tuple[Magic, list[Unwaited]] | None:
        """For the statement on the line of a notebook magic that times what it runs (`%time y =
        f(x)`, or the `pass` standing for a `%%time` line): the magic and the work queued in what it
        times and not waited for when it stops its clock, in the order it was queued (at least one
        piece of work); None for any other statement, or when everything was waited for."""
        magic = magic_of(statement)
        if magic is None or not magic.timed:
            return None
        unwaited = self.unwaited(magic.comment, scope)
        return (magic, unwaited) if unwaited else None


def _node_ids(node: cst.CSTNode) -> frozenset[int]:
    found: set[int] = set()

    def enter(child: cst.CSTNode, _field: str) -> bool:
        found.add(id(child))
        return True

    walk(node, enter, None)
    return frozenset(found)


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """What a call passes to a parameter, by keyword or at its position (None when not written)."""
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is not None and arg.keyword.value == keyword or arg.keyword is None and index == position:
            return arg.value
    return None


def _root_name(expr: cst.BaseExpression) -> str | None:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None
