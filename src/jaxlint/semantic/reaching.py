"""Which bindings of a name can reach each place the name is read, in one scope.

A walk over one scope's own statements in execution order (nested functions, classes and lambdas
are left to their own scopes) keeps, for every name the scope binds, the bindings that may hold at
that point: an `if` joins its branches, loops run to a fixed point with `break` and `continue`
joined where they lead, `return` and `raise` end a path, an `except` handler starts from any state
its `try` body passed through, `finally` from every way out. Each read of a name is recorded with
the bindings that reach it, so "what can `x` hold at this line" is a look-up. The same walk records
every binding of each name (as `origins`), what the scope returns, and the item assignments made on
its names (`params["w"] = …`).

Reads inside a list, set or dict comprehension run at once and are recorded with the state where
the comprehension stands; reads inside nested functions, lambdas and generator bodies may run at
any later time and are not recorded (a question about them gets every binding).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from .scopes import COMPREHENSIONS, Scope
from ..syntax.walk import walk


@dataclass(frozen=True, eq=False)
class Origin:
    """One binding of a name.

    kind: "value" (`x = value`), "element" (`a, x = value`), "iteration" (`for x in value`),
    "augmented" (`x += value`), "annotation" (`x: T`), "param" (a parameter; `node` is the Param and
    `function` its function), or "other" (import, `with … as`, `del`, def, class, except, match).
    """

    kind: str
    value: cst.BaseExpression | None = None
    node: cst.CSTNode | None = None
    function: cst.CSTNode | None = None


#: name -> the bindings that may hold it here; None for a point no path reaches
State = dict[str, tuple[Origin, ...]]
#: the keys from a name down to an item: `params["enc"]["w"]` -> ("enc", "w"); a key that is not a
#: string literal is None (`params[name][0]` -> (None, None))
KeyPath = tuple["str | None", ...]
#: Methods of a dict that put new values in it.
DICT_WRITERS = frozenset({"update", "setdefault", "__setitem__", "__ior__"})


@dataclass
class ScopeFacts:
    #: name -> every binding of it in the scope, in source order
    origins: dict[str, list[Origin]] = field(default_factory=dict)
    #: id(Name read) -> the bindings that can reach it (empty: none does)
    reaching: dict[int, tuple[Origin, ...]] = field(default_factory=dict)
    #: values of the `return` statements (None for a bare `return`)
    returns: list[cst.BaseExpression | None] = field(default_factory=list)
    #: the end of the body can be reached (the function may return None by falling off it)
    falls_off: bool = True
    #: the body yields (a generator or coroutine: calling it returns no array)
    generator: bool = False
    #: name -> id(target) -> (key path, assigned value; None for `del` or an update) for each `name[…] = value`
    item_writes: dict[str, dict[int, tuple[KeyPath, cst.BaseExpression | None]]] = field(default_factory=dict)
    #: names whose items are changed by a method (`params.update(…)`)
    updated: set[str] = field(default_factory=set)
    #: name -> the calls it is passed to as a whole (`init(params)`), which may change its items
    passed: dict[str, list[cst.Call]] = field(default_factory=dict)


_SKIPPED_FIELDS = frozenset({"attr", "keyword"})
_MAX_LOOP_PASSES = 3
#: Re-runs of loop bodies one scope may make in all, plus _MAX_LOOP_PASSES - 1 per loop in it: an
#: inner loop runs again on every pass of the loops around it, so without a bound for the whole
#: scope the passes grow exponentially with the nesting depth (as in `FlowInterpreter`).
_LOOP_PASS_BUDGET = 64


class _Loop:
    __slots__ = ("breaks", "continues")

    def __init__(self) -> None:
        self.breaks: State | None = None
        self.continues: State | None = None


class ScopeFlow:
    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        bindings = scope.bindings
        #: names this scope binds for itself (a `global` or `nonlocal` name belongs elsewhere)
        self.tracked = {n for n in bindings if n not in scope.globals and n not in scope.nonlocals}
        self.facts = ScopeFacts()
        self.state: State | None = {}
        self.loops: list[_Loop] = []
        #: for each enclosing `try`: every binding that may hold when an exception leaves its body
        self.tries: list[State] = []
        self._made: dict[int, Origin] = {}
        self._passes_left = _LOOP_PASS_BUDGET
        self._loops_met: set[int] = set()

    def run(self) -> ScopeFacts:
        node = self.scope.node
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            params = node.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                self._bind(param.name.value, param, "param", None, param, node)
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    self._bind(star.name.value, star, "other", None, star, node)
            if isinstance(node.body, cst.BaseExpression):
                self.expression(node.body)
            else:
                self.block(node.body)
        elif isinstance(node, cst.ClassDef):
            self.block(node.body)
        elif isinstance(node, cst.Module):
            self.statements(node.body)
        else:
            return self.facts  # comprehension scopes: their targets are read in place
        self.facts.falls_off = self.state is not None
        return self.facts

    # -- bindings -------------------------------------------------------------------------------
    def _bind(self, name: str, key_node: cst.CSTNode, kind: str, value: cst.BaseExpression | None,
              node: cst.CSTNode | None, function: cst.CSTNode | None = None) -> None:
        origin = self._made.get(id(key_node))
        if origin is None:
            origin = self._made[id(key_node)] = Origin(kind, value, node, function)
            self.facts.origins.setdefault(name, []).append(origin)
        if name not in self.tracked or kind == "annotation":
            return
        state = self.state
        if state is not None:
            state[name] = state.get(name, ()) + (origin,) if kind == "augmented" else (origin,)
        for escaping in self.tries:
            held = escaping.get(name, ())
            if origin not in held:
                escaping[name] = held + (origin,)

    def target(self, node: cst.BaseExpression, kind: str, value: cst.BaseExpression | None,
               statement: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            self._bind(node.value, node, kind, value, statement)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                if isinstance(element, cst.StarredElement):
                    self.target(element.value, "other", None, statement)
                else:
                    self.target(element.value, "element" if kind == "value" else kind, value, statement)
        elif isinstance(node, cst.StarredElement):
            self.target(node.value, "other", None, statement)
        else:
            if isinstance(node, cst.Subscript):
                self._item_write(node, value if kind == "value" else None)
            self.expression(node)

    def _item_write(self, node: cst.Subscript, value: cst.BaseExpression | None) -> None:
        path: list[str | None] = []
        base: cst.BaseExpression = node
        while isinstance(base, cst.Subscript):
            path.append(literal_key(base))
            base = base.value
        if isinstance(base, cst.Name) and base.value in self.tracked:
            self.facts.item_writes.setdefault(base.value, {})[id(node)] = (tuple(reversed(path)), value)

    # -- statements -----------------------------------------------------------------------------
    def block(self, suite: cst.BaseSuite) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self.statements(suite.body)
        else:  # `if x: y = 1` on one line
            for small in suite.body:
                self.small(small)

    def statements(self, body) -> None:
        for statement in body:
            self.statement(statement)

    def statement(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind is cst.SimpleStatementLine:
            for small in node.body:
                self.small(small)
        elif kind is cst.FunctionDef:
            for decorator in node.decorators:
                self.expression(decorator.decorator)
            for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
                if param.default is not None:
                    self.expression(param.default)
            self._bind(node.name.value, node, "other", None, node)
        elif kind is cst.ClassDef:
            for decorator in node.decorators:
                self.expression(decorator.decorator)
            for arg in (*node.bases, *node.keywords):
                self.expression(arg.value)
            self._bind(node.name.value, node, "other", None, node)
        elif kind is cst.If:
            self.expression(node.test)
            before = _copy(self.state)
            self.block(node.body)
            after_body = self.state
            self.state = before
            if isinstance(node.orelse, cst.If):
                self.statement(node.orelse)
            elif node.orelse is not None:
                self.block(node.orelse.body)
            self.state = _join(after_body, self.state)
        elif kind is cst.For:
            self.expression(node.iter)
            self._loop(node, lambda: (self.target(node.target, "iteration", node.iter, node), self.block(node.body)))
        elif kind is cst.While:
            self._loop(node, lambda: (self.expression(node.test), self.block(node.body)))
        elif kind is cst.Try or kind.__name__ == "TryStar":
            self._try(node)
        elif kind is cst.With:
            for item in node.items:
                self.expression(item.item)
                if item.asname is not None:
                    self.target(item.asname.name, "other", None, item)
            self.block(node.body)
        elif kind is cst.Match:
            self.expression(node.subject)
            before = _copy(self.state)
            after = _copy(before)
            for case in node.cases:
                self.state = _copy(before)
                walk(case.pattern, self._enter_pattern, _ignore)
                if case.guard is not None:
                    self.expression(case.guard)
                self.block(case.body)
                after = _join(after, self.state)
            self.state = after

    def _loop(self, node: cst.For | cst.While, iteration) -> None:
        before = self.state
        loop = _Loop()
        self.loops.append(loop)
        head = _copy(before)
        if id(node) not in self._loops_met:
            self._loops_met.add(id(node))
            self._passes_left += _MAX_LOOP_PASSES - 1
        for passes in range(1, _MAX_LOOP_PASSES + 1):
            self.state = _copy(head)
            iteration()
            widened = _join(_join(_copy(before), self.state), loop.continues)
            if widened == head:
                break
            head = widened
            if passes < _MAX_LOOP_PASSES:
                if not self._passes_left:
                    break
                self._passes_left -= 1
        self.loops.pop()
        if isinstance(node, cst.While) and isinstance(node.test, cst.Name) and node.test.value == "True":
            self.state = None  # `while True:` is only left through `break` (its `else` never runs)
        else:
            self.state = head  # the test fails, or the iterable is exhausted, at the loop's head
            if node.orelse is not None:
                self.block(node.orelse.body)
        self.state = _join(self.state, loop.breaks)

    def _try(self, node) -> None:
        escaping = _copy(self.state) or {}
        self.tries.append(escaping)
        self.block(node.body)
        if node.orelse is not None:
            self.block(node.orelse.body)
        ends = self.state
        for handler in node.handlers:
            self.state = _copy(escaping)
            if handler.type is not None:
                self.expression(handler.type)
            if handler.name is not None and isinstance(handler.name.name, cst.Name):
                self._bind(handler.name.name.value, handler, "other", None, handler)
            self.block(handler.body)
            ends = _join(ends, self.state)
        self.tries.pop()
        if node.finalbody is not None:
            self.state = _join(ends, escaping)
            self.block(node.finalbody.body)
        else:
            self.state = ends

    def small(self, node: cst.BaseSmallStatement) -> None:
        kind = type(node)
        if kind is cst.Assign:
            self.expression(node.value)
            for target in node.targets:
                self.target(target.target, "value", node.value, node)
        elif kind is cst.AnnAssign:
            if node.value is not None:
                self.expression(node.value)
                self.target(node.target, "value", node.value, node)
            elif isinstance(node.target, cst.Name):
                self._bind(node.target.value, node.target, "annotation", None, node)
            else:
                self.expression(node.target)
        elif kind is cst.AugAssign:
            self.expression(node.value)
            self.expression(node.target)
            if isinstance(node.target, cst.Name):
                self._bind(node.target.value, node.target, "augmented", node.value, node)
            elif isinstance(node.target, cst.Subscript):
                self._item_write(node.target, None)
        elif kind is cst.Return:
            self.facts.returns.append(node.value)
            if node.value is not None:
                self.expression(node.value)
            self.state = None
        elif kind is cst.Raise:
            for part in (node.exc, node.cause):
                if part is not None:
                    self.expression(part)
            self.state = None
        elif kind is cst.Break:
            if self.loops:
                self.loops[-1].breaks = _join(self.loops[-1].breaks, self.state)
            self.state = None
        elif kind is cst.Continue:
            if self.loops:
                self.loops[-1].continues = _join(self.loops[-1].continues, self.state)
            self.state = None
        elif kind is cst.Del:
            self._delete(node.target, node)
        elif kind is cst.Import:
            for alias in node.names:
                local = alias.asname.name if alias.asname else alias.name
                while isinstance(local, cst.Attribute):
                    local = local.value
                if isinstance(local, cst.Name):
                    self._bind(local.value, alias, "other", None, node)
        elif kind is cst.ImportFrom:
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    local = alias.asname.name if alias.asname else alias.name
                    if isinstance(local, cst.Name):
                        self._bind(local.value, alias, "other", None, node)
        elif kind in (cst.Expr, cst.Assert):
            for child in (node.value,) if kind is cst.Expr else (node.test, node.msg):
                if child is not None:
                    self.expression(child)

    def _delete(self, target: cst.BaseExpression, statement: cst.Del) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._delete(element.value, statement)
        elif isinstance(target, cst.Name):
            self._bind(target.value, target, "other", None, statement)
        else:
            if isinstance(target, cst.Subscript):
                self._item_write(target, None)
            self.expression(target)

    # -- expressions ----------------------------------------------------------------------------
    def expression(self, node: cst.BaseExpression) -> None:
        walk(node, self._enter, _ignore)

    def _enter(self, node: cst.CSTNode, field: str) -> bool:
        kind = type(node)
        if kind is cst.Name:
            if field not in _SKIPPED_FIELDS and node.value in self.tracked and self.state is not None:
                self.facts.reaching[id(node)] = self.state.get(node.value, ())
            return False
        if kind is cst.Lambda:
            for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
                if param.default is not None:
                    self.expression(param.default)
            return False
        if kind is cst.NamedExpr:
            self.expression(node.value)
            self.target(node.target, "value", node.value, node)
            return False
        if kind in _COMPREHENSION_TYPES:
            self._comprehension(node)
            return False
        if kind is cst.Yield or kind is cst.Await:
            self.facts.generator = self.facts.generator or kind is cst.Yield
        elif kind is cst.Call:
            func = node.func
            if (type(func) is cst.Attribute and func.attr.value in DICT_WRITERS
                    and type(func.value) is cst.Name and func.value.value in self.tracked):
                self.facts.updated.add(func.value.value)
            for arg in node.args:
                value = arg.value
                if type(value) is cst.Name and value.value in self.tracked:
                    self.facts.passed.setdefault(value.value, []).append(node)
        return True

    def _comprehension(self, node) -> None:
        # The first iterable runs here; the rest runs here too, except in a generator expression,
        # whose body runs when it is consumed.
        self.expression(node.for_in.iter)
        if isinstance(node, cst.GeneratorExp):
            return
        shadowed: set[str] = set()
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            walk(comp.target, lambda n, f: shadowed.add(n.value) if type(n) is cst.Name else True, _ignore)
            comp = comp.inner_for_in
        tracked = self.tracked
        self.tracked = tracked - shadowed
        try:
            comp = node.for_in
            while comp is not None:
                if comp is not node.for_in:
                    self.expression(comp.iter)
                for condition in comp.ifs:
                    self.expression(condition.test)
                comp = comp.inner_for_in
            parts = (node.key, node.value) if isinstance(node, cst.DictComp) else (node.elt,)
            for part in parts:
                self.expression(part)
        finally:
            self.tracked = tracked

    def _enter_pattern(self, node: cst.CSTNode, field: str) -> bool:
        if isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
            self._bind(node.name.value, node, "other", None, node)
        elif isinstance(node, cst.BaseExpression) and not isinstance(node, cst.Name):
            self.expression(node)  # a value pattern: `case Color.RED:`
            return False
        return True


def literal_key(subscript: cst.Subscript) -> str | None:
    """The string in `d["w"]`, else None."""
    if len(subscript.slice) != 1:
        return None
    index = subscript.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
        return index.value.raw_value
    return None


_COMPREHENSION_TYPES = frozenset(COMPREHENSIONS)


def _copy(state: State | None) -> State | None:
    return dict(state) if state is not None else None


def _join(a: State | None, b: State | None) -> State | None:
    """The bindings that may hold after either of two paths (None: a path that never gets here)."""
    if a is None:
        return _copy(b)
    if b is None:
        return a
    for name, origins in b.items():
        held = a.get(name)
        if held is None:
            a[name] = origins
        elif held is not origins:
            extra = tuple(o for o in origins if o not in held)
            if extra:
                a[name] = held + extra
    return a


def _ignore(node: cst.CSTNode) -> None:
    return None
