"""JAX504: a clock read that closes a timing of JAX work nobody waited for."""
from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from ..facts.dispatch import WAIT_FUNCTIONS, WAIT_METHODS, WORK, Dispatch
from ..facts.values import STATIC_ATTRIBUTES
from ..facts.walk import children, walk
from ..rule import Rule

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
#: Container methods that store a value without reading it (`losses.append(loss)`).
STORE_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft", "extendleft", "setdefault", "update"})
#: Functions and methods named like this are taken to wait for everything queued (`sync_global_devices`).
SYNC_NAMES = re.compile(r"sync|block|wait|barrier|ready", re.IGNORECASE)
#: Context managers known not to wait for JAX work when they close (JAX's own, but its profiler, too).
QUIET_CONTEXTS = frozenset({
    "builtins.open", "io.open", "contextlib.suppress", "contextlib.nullcontext", "contextlib.redirect_stdout",
    "contextlib.redirect_stderr", "warnings.catch_warnings", "numpy.errstate", "numpy.printoptions",
    "tempfile.TemporaryDirectory", "tempfile.NamedTemporaryFile", "threading.Lock",
})
STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
BLOCKS = (cst.Module, cst.IndentedBlock, cst.SimpleStatementSuite)
SCOPE_BOUNDARIES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


class UnblockedTiming(Rule):
    code = "JAX504"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._aliases: frozenset[str] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = _last_name(func)
        if last not in CLOCK_NAMES and not (isinstance(func, cst.Name) and last in self._clock_aliases()):
            return
        ctx = self.ctx
        clock = ctx.qualified_name(func)
        if clock not in CLOCKS or SYNC_DISPATCH_FLAG in ctx.source:
            return
        start = self._start_name(node)
        found = self._opening(start) if start is not None else None
        if found is None:
            return
        if ctx.trace_info() is not None or ctx.jax.inside_jitted_function(ctx):
            return  # read while tracing: JAX304's concern
        items, first, closing = found
        region = _Region(self, node, {id(n) for n in ctx.ancestors})
        try:
            for item in items[first:closing + 1]:
                region.statement(item)
        except _Reached:
            pass
        else:
            return  # the read is not reached on this path (a decorator, an exception handler)
        pending = region.pending()
        if pending:
            self.report(node, _message(ctx.module.code_for_node(func), pending[-1], ctx.module))

    def _clock_aliases(self) -> frozenset[str]:
        """Module-level names imported as clocks under another name (`from time import perf_counter as pc`)."""
        if self._aliases is None:
            self._aliases = frozenset() if "time" not in self.ctx.source else frozenset(
                name for name, binding in self.ctx.module_scope.bindings.items()
                if name not in CLOCK_NAMES and binding.is_import_only and set(binding.targets) <= CLOCKS)
        return self._aliases

    # -- pairing --------------------------------------------------------------------------------
    def _start_name(self, node: cst.Call) -> str | None:
        """The name holding the opening read, for `clock() - t0` or `t1 = clock()` … `t1 - t0`."""
        chain = self.ctx.ancestors
        parent = chain[-2] if len(chain) >= 2 else None
        if _is_duration(parent, node):
            if len(chain) >= 3 and isinstance(chain[-3], cst.Comparison):
                return None  # `clock() - t0 > budget`: a deadline, not a measurement
            return parent.right.value
        end = _assigned_name(parent, node)
        if end is None:
            return None
        for container, index in self._containers():
            for item in _items(container)[index + 1:]:
                start = _subtraction_from(item, end)
                if start is not None:
                    return start
                if end in _bound_names(item):
                    return None
        return None

    def _opening(self, start: str) -> tuple[list[cst.CSTNode], int, int] | None:
        """A statement list, and the first and last of its items from the opening read `start = clock()`
        to the one holding the closing read."""
        for container, index in self._containers():
            items = _items(container)
            for position in range(index - 1, -1, -1):
                item = items[position]
                if self._is_opening(item, start):
                    return items, position + 1, index
                if start in _bound_names(item):
                    return None
        return None

    def _containers(self):
        """(statement list, index of the item on the path to the current node), innermost first."""
        chain = self.ctx.ancestors
        for k in range(len(chain) - 2, -1, -1):
            node = chain[k]
            if isinstance(node, SCOPE_BOUNDARIES):
                return
            if isinstance(node, BLOCKS):
                child = chain[k + 1]
                if isinstance(child, cst.SimpleStatementLine):
                    child = chain[k + 2]
                items = _items(node)
                index = next((i for i, item in enumerate(items) if item is child), None)
                if index is not None:
                    yield node, index

    def _is_opening(self, item: cst.CSTNode, start: str) -> bool:
        if isinstance(item, cst.Assign) and len(item.targets) == 1:
            target, value = item.targets[0].target, item.value
        elif isinstance(item, cst.AnnAssign) and item.value is not None:
            target, value = item.target, item.value
        else:
            return False
        return (isinstance(target, cst.Name) and target.value == start and isinstance(value, cst.Call)
                and self.ctx.qualified_name(value.func) in CLOCKS)


class _Reached(Exception):
    """The walk through the region got to the closing clock read."""


@dataclass
class _Dispatched:
    index: int
    node: cst.CSTNode
    weight: str
    name: str | None = None


class _Region:
    """Replays the statements between the two clock reads in order, tracking queued and waited-for work.

    Every dispatch gets a sequence number; every name remembers the latest dispatch its value comes
    from. Waiting for a value waits for its dispatch and, as the device runs its queue in order, for
    everything queued before. Anything that might read a value (an unknown call given it, a test, a
    format) counts as a wait: the rule reports only work that certainly was not waited for.
    Loop bodies are replayed once, as their last iteration; of exclusive branches, only the one
    holding the closing read is replayed when it is inside one.
    """

    def __init__(self, rule: UnblockedTiming, stop: cst.Call, path: set[int]) -> None:
        self.ctx = rule.ctx
        self.scope = rule.ctx.scope
        self.dispatch = Dispatch.of(rule.ctx)
        self.stop = stop
        self.path = path
        self.count = 0
        self.waited = 0
        self.dispatched: list[_Dispatched] = []
        #: name -> sequence number of the latest dispatch its value depends on
        self.taint: dict[str, int] = {}

    def pending(self) -> list[_Dispatched]:
        return [d for d in self.dispatched if d.index > self.waited and d.weight == WORK]

    def wait(self, index: int) -> None:
        self.waited = max(self.waited, index)

    def queue(self, node: cst.CSTNode, weight: str) -> int:
        self.count += 1
        self.dispatched.append(_Dispatched(self.count, node, weight))
        return self.count

    # -- statements -----------------------------------------------------------------------------
    def run(self, body) -> None:
        for item in _items(body):
            self.statement(item)

    def statement(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small(small)
        elif isinstance(node, cst.BaseSmallStatement):
            self.small(node)
        elif isinstance(node, cst.If):
            self.wait(self.ev(node.test))
            in_body = id(node.body) in self.path
            in_else = node.orelse is not None and id(node.orelse) in self.path
            if not in_else:
                self.run(node.body)
            if node.orelse is not None and not in_body:
                if isinstance(node.orelse, cst.If):
                    self.statement(node.orelse)
                else:
                    self.run(node.orelse.body)
        elif isinstance(node, cst.For):
            self.bind(node.target, self.ev(node.iter))
            self.run(node.body)
            if node.orelse is not None:
                self.run(node.orelse.body)
        elif isinstance(node, cst.While):
            self.wait(self.ev(node.test))
            self.run(node.body)
            self.wait(self.ev(node.test))  # the test that ends the loop reads the last iteration's values
            if node.orelse is not None:
                self.run(node.orelse.body)
        elif isinstance(node, cst.With):
            for item in node.items:
                value = self.ev(item.item)
                if item.asname is not None:
                    self.bind(item.asname.name, value)
            self.run(node.body)
            if any(self._may_wait_on_exit(item.item) for item in node.items):
                self.wait(self.count)  # a timer or profiler context may wait when it closes
        elif isinstance(node, (cst.Try, getattr(cst, "TryStar", cst.Try))):
            handler = next((h for h in node.handlers if id(h) in self.path), None)
            if handler is not None:
                self.run(handler.body)  # how much of the body ran before the exception is unknown
                return
            self.run(node.body)
            if node.orelse is not None:
                self.run(node.orelse.body)
            if node.finalbody is not None:
                self.run(node.finalbody.body)
        elif isinstance(node, cst.FunctionDef):
            # calling it later may read what it closes over
            self._set(node.name.value, self._free_taint(node.body))
        elif isinstance(node, cst.ClassDef):
            self.taint.pop(node.name.value, None)
        elif isinstance(node, cst.Match):
            self.wait(self.ev(node.subject))
            chosen = [c for c in node.cases if id(c) in self.path] or node.cases
            for case in chosen:
                self.run(case.body)

    def small(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Assign):
            value = self.ev(node.value)
            for target in node.targets:
                self.bind(target.target, value)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.bind(node.target, self.ev(node.value))
        elif isinstance(node, cst.AugAssign):
            value = self.ev(node.value)
            self.bind(node.target, max(value, self.ev(node.target)))
        elif isinstance(node, (cst.Expr, cst.Return)):
            if node.value is not None:
                self.ev(node.value)
        elif isinstance(node, cst.Assert):
            self.wait(self.ev(node.test))
            if node.msg is not None:
                self.wait(self.ev(node.msg))
        elif isinstance(node, cst.Raise):
            if node.exc is not None:
                self.wait(self.ev(node.exc))
        elif isinstance(node, cst.Del):
            for name in _target_names(node.target):
                self.taint.pop(name, None)

    def bind(self, target: cst.BaseExpression, value: int) -> None:
        if isinstance(target, cst.Name):
            if value:
                self.taint[target.value] = value
                for record in self.dispatched:
                    if record.index == value and record.name is None:
                        record.name = target.value
            else:
                self.taint.pop(target.value, None)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind(element.value, value)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, value)
        else:  # `self.params = …`, `out[i] = …`: the object now holds the value
            self.ev(target)
            root = _root_name(target)
            if root is not None and value:
                self.taint[root] = max(self.taint.get(root, 0), value)

    # -- expressions ----------------------------------------------------------------------------
    def ev(self, node: cst.BaseExpression) -> int:
        """Evaluates an expression in order; returns the sequence number of the work its value depends on."""
        if node is self.stop:
            raise _Reached
        if isinstance(node, cst.Name):
            return self.taint.get(node.value, 0)
        if isinstance(node, cst.Attribute):
            value = self.ev(node.value)
            return 0 if node.attr.value in STATIC_ATTRIBUTES else value
        if isinstance(node, cst.Call):
            return self.call(node)
        if isinstance(node, cst.Subscript):
            value = self.ev(node.value)
            for element in node.slice:
                value = max(value, self._children(element))
            return value
        if isinstance(node, cst.BinaryOperation):
            left, right = self.ev(node.left), self.ev(node.right)
            if isinstance(node.operator, cst.Modulo) and isinstance(node.left, STRINGS):
                self.wait(right)  # `"%.3f" % loss` formats, which reads the value
                return 0
            if self.dispatch.jax_value(node, self.scope):
                return self.queue(node, WORK)
            return max(left, right)
        if isinstance(node, cst.UnaryOperation):
            value = self.ev(node.expression)
            if isinstance(node.operator, cst.Not):
                self.wait(value)
                return 0
            return value
        if isinstance(node, cst.BooleanOperation):
            left = self.ev(node.left)
            self.wait(left)  # `a and b` converts `a` to bool
            right = self.ev(node.right)
            self.wait(right)
            return 0
        if isinstance(node, cst.Comparison):
            value = self.ev(node.left)
            for target in node.comparisons:
                value = max(value, self.ev(target.comparator))
                if isinstance(target.operator, (cst.In, cst.NotIn)):
                    self.wait(value)  # membership compares and converts to bool
            return value
        if isinstance(node, cst.IfExp):
            self.wait(self.ev(node.test))
            return max(self.ev(node.body), self.ev(node.orelse))
        if isinstance(node, cst.FormattedString):
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    self.wait(self.ev(part.expression))
                    if part.format_spec:
                        for spec in part.format_spec:
                            if isinstance(spec, cst.FormattedStringExpression):
                                self.wait(self.ev(spec.expression))
            return 0
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._comprehension(node)
        if isinstance(node, cst.NamedExpr):
            value = self.ev(node.value)
            self.bind(node.target, value)
            return value
        if isinstance(node, cst.Lambda):
            return self._free_taint(node.body)
        if isinstance(node, (cst.Yield, cst.Await)):
            self._children(node)
            self.wait(self.count)  # the caller or the event loop may do anything meanwhile
            return 0
        return self._children(node)

    def _children(self, node: cst.CSTNode) -> int:
        value = 0
        for _, child in children(node):
            if isinstance(child, cst.BaseExpression):
                value = max(value, self.ev(child))
            elif not isinstance(child, (cst.BaseSuite, cst.BaseStatement)):
                value = max(value, self._children(child))
        return value

    def call(self, node: cst.Call) -> int:
        func = node.func
        qname = self.ctx.names.qualified_name(func, self.scope)
        receiver = self.ev(func.value) if isinstance(func, cst.Attribute) and qname is None else 0
        if isinstance(func, cst.Call):
            self.ev(func)
        given = 0
        for arg in node.args:
            given = max(given, self.ev(arg.value))
        weight = self.dispatch.call(node, self.scope)
        if weight is not None:
            return self.queue(node, weight)
        inputs = max(receiver, given, self._callee_taint(func))
        if qname is not None:
            if qname in WAIT_FUNCTIONS:
                self.wait(inputs)
                return 0
            if qname in PASS_THROUGH:
                return inputs
            if qname in OPAQUE or qname in CLOCKS:
                return 0
        elif isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in WAIT_METHODS:
                self.wait(inputs)
                return receiver if method == "block_until_ready" else 0
            if method in STORE_METHODS:
                root = _root_name(func.value)
                if root is not None and given:
                    self.taint[root] = max(self.taint.get(root, 0), given)
                return 0
        if self.ctx.traced.application(node, self.scope) is not None:
            return 0  # `jax.jit(f)`: builds a function, runs nothing
        name = _last_name(func)
        if name is not None and SYNC_NAMES.search(name):
            self.wait(self.count)
            return 0
        self.wait(inputs)  # an unknown call may read what it is given
        return inputs

    def _callee_taint(self, func: cst.BaseExpression) -> int:
        """A closure or a function of this module reading values of the region may wait for them."""
        if not isinstance(func, cst.Name):
            return 0
        value = self.taint.get(func.value, 0)
        found = self.scope.lookup(func.value)
        if found is not None:
            for definition in found[1].nodes:
                if isinstance(definition, cst.FunctionDef):
                    value = max(value, self._free_taint(definition.body))
        return value

    def _may_wait_on_exit(self, manager: cst.BaseExpression) -> bool:
        """A context manager built by a call of unknown code (`with Timer("step"):`) may wait on exit."""
        if not isinstance(manager, cst.Call):
            return False
        qname = self.ctx.names.qualified_name(manager.func, self.scope)
        if qname is None:
            return True
        return qname not in QUIET_CONTEXTS and not (qname.startswith("jax.") and not qname.startswith("jax.profiler."))

    def _set(self, name: str, value: int) -> None:
        if value:
            self.taint[name] = value
        else:
            self.taint.pop(name, None)

    def _comprehension(self, node) -> int:
        saved = dict(self.taint)
        value = 0
        comp = node.for_in
        while comp is not None:
            iterated = self.ev(comp.iter)
            value = max(value, iterated)
            self.bind(comp.target, iterated)
            for condition in comp.ifs:
                self.wait(self.ev(condition.test))
            comp = comp.inner_for_in
        if isinstance(node, cst.DictComp):
            value = max(value, self.ev(node.key), self.ev(node.value))
        else:
            value = max(value, self.ev(node.elt))
        self.taint = saved
        return value

    def _free_taint(self, body: cst.CSTNode) -> int:
        """A lambda runs later, if at all: what it could read decides what a call given it may wait for."""
        found = [0]

        def enter(node: cst.CSTNode, field: str) -> bool:
            if isinstance(node, cst.Name):
                found[0] = max(found[0], self.taint.get(node.value, 0))
            return True

        walk(body, enter, lambda node: None)
        return found[0]


def _message(clock: str, work: _Dispatched, module: cst.Module) -> str:
    node = work.node
    if isinstance(node, cst.Call):
        what = f"`{_shorten(module.code_for_node(node.func))}(...)`"
    else:
        what = f"`{_shorten(module.code_for_node(node))}`"
    if work.name is not None:
        cure = f"call `jax.block_until_ready({work.name})` before reading the clock"
    else:
        cure = "keep its result and call `jax.block_until_ready(...)` on it before reading the clock"
    return (f"`{clock}()` stops the clock while {what} may still be running: JAX dispatches work asynchronously "
            f"and returns before the device finishes, so this times the dispatch, not the computation; {cure}")


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


def _is_duration(parent: cst.CSTNode | None, node: cst.Call) -> bool:
    return (isinstance(parent, cst.BinaryOperation) and parent.left is node
            and isinstance(parent.operator, cst.Subtract) and isinstance(parent.right, cst.Name))


def _assigned_name(parent: cst.CSTNode | None, node: cst.Call) -> str | None:
    if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1:
        target = parent.targets[0].target
    elif isinstance(parent, cst.AnnAssign) and parent.value is node:
        target = parent.target
    else:
        return None
    return target.value if isinstance(target, cst.Name) else None


def _subtraction_from(item: cst.CSTNode, end: str) -> str | None:
    """In `item`, the first `end - start` that is not a deadline test: returns `start`."""
    found: list[str] = []

    def enter(node: cst.CSTNode, field: str) -> bool:
        if found or isinstance(node, SCOPE_BOUNDARIES):
            return False
        if isinstance(node, cst.Comparison):
            return False
        if (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)
                and isinstance(node.left, cst.Name) and node.left.value == end
                and isinstance(node.right, cst.Name) and node.right.value != end):
            found.append(node.right.value)
            return False
        return True

    walk(item, enter, lambda node: None)
    return found[0] if found else None


def _items(container: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements of a block, with the small statements of each simple line listed one by one."""
    items: list[cst.CSTNode] = []
    for statement in container.body:
        if isinstance(statement, cst.SimpleStatementLine):
            items.extend(statement.body)
        else:
            items.append(statement)
    return items


def _bound_names(item: cst.CSTNode) -> set[str]:
    """Names a statement binds, nested blocks included and nested scopes left out."""
    names: set[str] = set()

    def enter(node: cst.CSTNode, field: str) -> bool:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            names.add(node.name.value)
            return False
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return False
        if isinstance(node, cst.Assign):
            for target in node.targets:
                names.update(_target_names(target.target))
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            names.update(_target_names(node.target))
        elif isinstance(node, (cst.For, cst.CompFor)):
            names.update(_target_names(node.target))
        elif isinstance(node, cst.NamedExpr):
            names.update(_target_names(node.target))
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            names.update(_target_names(node.asname.name))
        elif isinstance(node, cst.Del):
            names.update(_target_names(node.target))
        elif isinstance(node, cst.ExceptHandler) and node.name is not None:
            names.update(_target_names(node.name.name))
        elif isinstance(node, cst.ImportAlias):
            local = node.asname.name if node.asname else node.name
            while isinstance(local, cst.Attribute):
                local = local.value
            if isinstance(local, cst.Name):
                names.add(local.value)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            names.update(n.name.value for n in node.names)
        return True

    walk(item, enter, lambda node: None)
    return names


def _target_names(target: cst.CSTNode) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


def _root_name(expr: cst.BaseExpression) -> str | None:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _last_name(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None
