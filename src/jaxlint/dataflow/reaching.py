"""Which bindings of a name can reach each place the name is read, in one scope: a domain of the
generic interpreter.

The interpreter runs the scope's own statements (nested functions, classes and lambdas are left to
their own scopes) and owns the control flow: an `if` joins its branches, loops and comprehensions
run to a fixed point with `break` and `continue` joined where they lead, `return` and `raise` end a
path, an `except` handler starts from any state its `try` body passed through, `finally` from the
normal ways out. The domain's values are the bindings (`Origin`s) a name may hold: a binding
replaces them (`x += …` adds to them), a join is their union, and every read of a name is recorded
with the bindings that reach it, so "what can `x` hold at this line" is a look-up. What each binding
is (its kind, value and statement) comes from the scope's bindings (`semantic.scopes.Binding`).

The same run records what the scope returns, whether it yields, the item assignments made on its
names (`params["w"] = …`), the names whose items a method changes (`params.update(…)`), and the
calls each name is passed to.

A run may also be told of calls that consume what names hold (`consumed`): once such a call has
run, the name holds a `consumed` origin, the call's own, until it is bound again, so a read that
origin reaches reads what the call left behind (a buffer JAX deleted when it was donated).

Reads inside a list, set or dict comprehension run at once and are recorded with the state where
the comprehension stands; reads inside nested functions, lambdas and generator expressions' bodies
may run at any later time and are not recorded (a question about them gets every binding).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import libcst as cst

from ..semantic.scopes import Scope
from ..syntax.walk import COMPREHENSIONS, walk
from .interpreter import FlowInterpreter
from .marker import Marker


@dataclass(frozen=True, eq=False)
class Origin:
    """One binding of a name.

    kind: "value" (`x = value`), "element" (`a, x = value`), "iteration" (`for x in value`),
    "augmented" (`x += value`), "annotation" (`x: T`), "param" (a parameter; `node` is the Param and
    `function` its function), "consumed" (not a binding: `node` is a call that consumed what the
    name held, see `scope_facts`), or "other" (import, `with … as`, `del`, def, class, except,
    match).
    """

    kind: str
    value: cst.BaseExpression | None = None
    node: cst.CSTNode | None = None
    function: cst.CSTNode | None = None


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
    #: id(consuming call) -> the innermost loop around it (a `for`, a `while`, a comprehension), or
    #: None; only for the calls a run was told consume names
    consumed_in: dict[int, "cst.CSTNode | None"] = field(default_factory=dict)


#: what a name the scope does not bind for itself holds (a global, a builtin, a comprehension's
#: own variable): its reads are not recorded
UNTRACKED = Marker("untracked")
#: the value of any expression but a name: the bindings a name gets come from its binding node
EXPRESSION = Marker("expression")
#: what iterating gives a comprehension's own variable
COMPREHENDED = Marker("comprehension variable")

_COMPREHENSION_TYPES = frozenset(COMPREHENSIONS)


def scope_facts(scope: Scope, consumed: "Mapping[int, tuple[str, ...]] | None" = None) -> ScopeFacts:
    """What one run of the scope's own statements, in execution order, finds; `consumed`: id(call)
    -> the names whose value that call consumes (see the module docstring)."""
    node = scope.node
    if type(node) in _COMPREHENSION_TYPES:
        return ScopeFacts()  # comprehension scopes: their targets are read in place
    domain = ConsumingBindings(scope, consumed) if consumed else ReachingBindings(scope)
    entry: dict[str, tuple[Origin, ...]] = {}
    if isinstance(node, (cst.FunctionDef, cst.Lambda)):
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg,
                      params.star_kwarg):
            if type(param) is cst.Param and param.name.value in domain.tracked:
                entry[param.name.value] = (domain.by_node[id(param)],)
        body = node
    elif isinstance(node, cst.ClassDef):
        body = node.body
    else:
        body = node
    result = FlowInterpreter(domain).run(body, entry)
    facts = domain.facts
    lazy = domain.lazy
    reaching = {key: value for key, value in result.values.items() if type(value) is tuple}
    reaching.update(domain.reads)
    facts.reaching = {key: value for key, value in reaching.items() if key not in lazy} if lazy else reaching
    facts.falls_off = result.exit is not None
    return facts


class ReachingBindings:
    """The domain (see the module docstring); `scope_facts` runs it."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        bindings = scope.bindings
        #: names this scope binds for itself (a `global` or `nonlocal` name belongs elsewhere)
        self.tracked = {n for n in bindings if n not in scope.globals and n not in scope.nonlocals}
        self.facts = ScopeFacts()
        #: id(binding node) -> its origin
        self.by_node: dict[int, Origin] = {}
        #: ids of the names read in a generator expression's body (run when it is consumed)
        self.lazy: set[int] = set()
        #: id(Name read) -> the bindings that reach it, for the names this domain reads itself
        self.reads: dict[int, tuple[Origin, ...]] = {}
        self._flow: FlowInterpreter | None = None
        self._returns: set[int] = set()
        function = scope.node if isinstance(scope.node, (cst.FunctionDef, cst.Lambda)) else None
        origins = self.facts.origins
        for name, binding in bindings.items():
            made = origins[name] = []
            for node, statement in zip(binding.nodes, binding.statements):
                origin = _origin(node, statement, function)
                self.by_node[id(node)] = origin
                made.append(origin)

    # -- values and joins -----------------------------------------------------------------------
    def join(self, a, b):
        if a is b:
            return a
        if type(a) is tuple and type(b) is tuple:
            extra = tuple(o for o in b if o not in a)
            return a + extra if extra else a
        return UNTRACKED

    def unbound(self, name: str):
        return () if name in self.tracked else UNTRACKED

    def opaque(self, node: cst.CSTNode):
        return EXPRESSION

    def function(self, node: cst.FunctionDef | cst.Lambda):
        return EXPRESSION

    def comprehension(self, node: cst.BaseExpression, elements):
        if type(node) is cst.GeneratorExp:
            # its body runs when it is consumed, at any later time: its reads get every binding
            self.lazy.update(_names_in(node))
            self.lazy.difference_update(_names_in(node.for_in.iter))
        return EXPRESSION

    def unpack(self, value, count: int, starred: int | None) -> list:
        return [EXPRESSION] * count

    def augmented(self, current, operand, operator: cst.BaseAugOp):
        return current

    def assigned(self, name: str, value, source: cst.BaseExpression | None) -> None:
        pass

    def iterate(self, target: cst.BaseExpression, iterable: cst.BaseExpression, value,
                flow: FlowInterpreter) -> None:
        comprehension = type(flow.loops[-1]) in _COMPREHENSION_TYPES
        flow.bind(target, COMPREHENDED if comprehension else EXPRESSION)

    # -- hooks ----------------------------------------------------------------------------------
    def bound(self, name: str, value, target: cst.CSTNode | None, flow: FlowInterpreter):
        """A binding replaces what the name held (`x += …` adds to it)."""
        if name not in self.tracked or value is COMPREHENDED:
            return UNTRACKED
        origin = self.by_node.get(id(target)) if target is not None else None
        if origin is None:
            # a binding the scope's statements do not show (a `:=` in a comprehension's element):
            # the name's bindings are not all known, so `origins` no longer matches the scope's
            origin = Origin("other", None, target)
            if target is not None:
                self.by_node[id(target)] = origin
            self.facts.origins.setdefault(name, []).append(origin)
        if origin.kind == "augmented":
            held = value if type(value) is tuple else ()
            return held if origin in held else held + (origin,)
        return (origin,)

    def returning(self, node: cst.CSTNode, value, flow: FlowInterpreter) -> None:
        if type(node) is cst.Return and id(node) not in self._returns:
            self._returns.add(id(node))
            self.facts.returns.append(node.value)

    def store(self, target: cst.BaseExpression, value, flow: FlowInterpreter) -> None:
        """`x[k] = v`, `del x[k]`, `obj.attr = v`: the parts of the target are read; an item
        assignment is recorded."""
        if type(target) is cst.Subscript:
            self._item_write(target, flow)
        flow.eval(target)

    def _item_write(self, node: cst.Subscript, flow: FlowInterpreter) -> None:
        path: list[str | None] = []
        base: cst.BaseExpression = node
        while type(base) is cst.Subscript:
            path.append(literal_key(base))
            base = base.value
        if type(base) is not cst.Name or base.value not in self.tracked:
            return
        statement = flow.current_statement
        value = None
        if type(statement) is cst.Assign:
            if any(target.target is node for target in statement.targets):
                value = statement.value
        elif type(statement) is cst.AnnAssign and statement.target is node:
            value = statement.value
        self.facts.item_writes.setdefault(base.value, {})[id(node)] = (tuple(reversed(path)), value)

    # -- expressions ----------------------------------------------------------------------------
    def evaluate(self, node: cst.BaseExpression, flow: FlowInterpreter):
        """Reads every name in the expression in the current state (a fast walk of it, not a call
        back per node: only names matter here), and hands the interpreter what binds or runs
        elsewhere: `:=`, lambdas, comprehensions."""
        self._flow = flow
        walk(node, self._enter, None)
        return EXPRESSION



    def _enter(self, node: cst.CSTNode, field: str) -> bool:
        kind = type(node)
        if kind is cst.Name:
            # `x.attr` reads `x`, not `attr`; `f(x=1)` reads no `x`
            if field != "attr" and field != "keyword" and node.value in self.tracked:
                env = self._flow.env
                if env is not None:
                    held = env.get(node.value)
                    self.reads[id(node)] = held if type(held) is tuple else ()
            return False
        if kind in _INTERPRETED:
            self._flow.eval(node)
            return False
        if kind is cst.Call:
            func = node.func
            tracked = self.tracked
            if (type(func) is cst.Attribute and func.attr.value in DICT_WRITERS
                    and type(func.value) is cst.Name and func.value.value in tracked):
                self.facts.updated.add(func.value.value)
            for arg in node.args:
                value = arg.value
                if type(value) is cst.Name and value.value in tracked:
                    self.facts.passed.setdefault(value.value, []).append(node)
        elif kind is cst.Subscript:
            statement = self._flow.current_statement
            if type(statement) is cst.AugAssign and statement.target is node:
                self._item_write(node, self._flow)  # `x["k"] += 1` updates an item
        elif kind is cst.Yield:
            self.facts.generator = True
        return True


class ConsumingBindings(ReachingBindings):
    """The reaching bindings of a scope where some calls consume what names hold (`scope_facts`'s
    `consumed`): after such a call, the name holds the call's `consumed` origin until it is bound
    again."""

    def __init__(self, scope: Scope, consumed: Mapping[int, tuple[str, ...]]) -> None:
        super().__init__(scope)
        #: id(call) -> the names it consumes
        self.consumed = consumed
        #: (id(call), name) -> the origin the consumption leaves (one per call and name, so that
        #: loop passes agree)
        self._consumptions: dict[tuple[int, str], Origin] = {}

    def evaluate(self, node: cst.BaseExpression, flow: FlowInterpreter):
        self._flow = flow
        walk(node, self._enter, self._leave)
        return EXPRESSION

    def _leave(self, node: cst.CSTNode) -> None:
        """After a consuming call has run (its arguments read first): each name it consumes holds
        the call's `consumed` origin."""
        names = self.consumed.get(id(node)) if type(node) is cst.Call else None
        env = self._flow.env
        if names is None or env is None:
            return
        loops = self._flow.loops
        self.facts.consumed_in[id(node)] = loops[-1] if loops else None
        for name in names:
            if name in self.tracked:
                origin = self._consumptions.get((id(node), name))
                if origin is None:
                    origin = self._consumptions[(id(node), name)] = Origin("consumed", None, node)
                env[name] = (origin,)


#: expressions the interpreter evaluates itself: they bind names, close over the state, or loop
_INTERPRETED = frozenset({cst.NamedExpr, cst.Lambda, *COMPREHENSIONS})


#: statements that bind a value to their targets, and where the value is
_VALUED = {cst.Assign: "value", cst.AnnAssign: "value", cst.AugAssign: "value", cst.NamedExpr: "value",
           cst.For: "iter", cst.CompFor: "iter"}


def _origin(node: cst.CSTNode, statement: cst.CSTNode, function: cst.CSTNode | None) -> Origin:
    """The origin of the binding `node` made by `statement` (see `Origin`)."""
    kind = type(statement)
    if kind is cst.Param:
        params = function.params if function is not None else None
        star = params is not None and (params.star_arg is statement or params.star_kwarg is statement)
        return Origin("other" if star else "param", None, statement, function)
    field_name = _VALUED.get(kind)
    if field_name is None:
        return Origin("other", None, statement)  # import, `with … as`, `del`, def, class, except, match
    value = getattr(statement, field_name)
    if kind is cst.AnnAssign and value is None:
        return Origin("annotation", None, statement)
    place = "direct"
    for target in ([t.target for t in statement.targets] if kind is cst.Assign else (statement.target,)):
        if target is node:
            break
        found = _place(target, node)
        if found is not None:
            place = found
            break
    if place == "starred":
        return Origin("other", None, statement)  # `a, *rest = value`: a list of some of its elements
    if field_name == "iter":
        return Origin("iteration", value, statement)
    if kind is cst.AugAssign:
        return Origin("augmented", value, statement)
    return Origin("value" if place == "direct" else "element", value, statement)


def _place(target: cst.BaseExpression, node: cst.CSTNode) -> str | None:
    """Where `node` is in an assignment target: "direct" (the target itself), "element" (inside a
    tuple or list), "starred" (under a `*`); None when it is not in it."""
    if target is node:
        return "direct"
    if type(target) in (cst.Tuple, cst.List):
        for element in target.elements:
            inner = _place(element.value, node)
            if inner is not None:
                return "starred" if type(element) is cst.StarredElement or inner == "starred" else "element"
    return None


def literal_key(subscript: cst.Subscript) -> str | None:
    """The string in `d["w"]`, else None."""
    if len(subscript.slice) != 1:
        return None
    index = subscript.slice[0].slice
    if type(index) is cst.Index and type(index.value) is cst.SimpleString:
        return index.value.raw_value
    return None


def _names_in(node: cst.CSTNode) -> set[int]:
    found: set[int] = set()

    def enter(child: cst.CSTNode, _field: str) -> bool:
        if type(child) is cst.Name:
            found.add(id(child))
        return True

    walk(node, enter, None)
    return found
