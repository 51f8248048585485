"""A walk of one file that knows where it is: the scope and the ancestors of the current node.

`Walker` drives it, calling the `visit_<Node>`/`leave_<Node>` methods of its visitors (the rules,
or a fact's own collector) and keeping the state current; `syntax.walk` is the plain walk below it.
"""
from __future__ import annotations

from typing import Callable, Container, Iterator

import libcst as cst

from ..syntax.walk import ENUMERATORS
from .scopes import COMPREHENSIONS, Scope
from .source_file import SourceFile

LOOPS = (cst.For, cst.While)
FUNCTIONS = (cst.FunctionDef, cst.Lambda)
_SCOPE_OWNERS = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
#: exact types: `isinstance` against libcst's abstract classes is slow on the hot path
_SCOPE_OWNER_TYPES = frozenset(_SCOPE_OWNERS)
_FUNCTION_TYPES = frozenset(FUNCTIONS)
_COMPREHENSION_TYPES = frozenset(COMPREHENSIONS)
#: the node types `innermost_loop` stops at; the others it passes without a look
_LOOP_RELEVANT_TYPES = frozenset({cst.For, cst.While, cst.CompFor, *_SCOPE_OWNERS, *COMPREHENSIONS})
#: How many ancestors a question about the current node looks at one by one; past them the answers
#: are remembered per ancestor, so that the thousands of nodes of a deep chain (`a and b and …`,
#: `x.f().f()…`) do not each scan the whole chain again.
_NEAR = 48
#: a step of an ancestor scan that did not decide
_ON = object()


class WalkState:
    """Where a walk is in a file: the scope and the chain of ancestors of the node being visited."""

    def __init__(self, file: SourceFile) -> None:
        self.file = file
        self.scope = file.module_scope
        self.ancestors: list[cst.CSTNode] = []
        #: id(node) -> the answer of `function` / `innermost_loop` scanning from the node's parent up
        self._functions: dict[int, cst.CSTNode | None] = {}
        self._loops: dict[int, cst.CSTNode | None] = {}
        #: the last answer of `function`, for the node it was asked at (several rules ask at each call)
        self._function_at: tuple[cst.CSTNode | None, int, cst.CSTNode | None] = (None, -1, None)
        self._loop_at: tuple[cst.CSTNode | None, int, cst.CSTNode | None] = (None, -1, None)
        #: the file's name resolver's answers, read here first (rules ask about most calls and names)
        self._answers = file.names.answers

    def _scan(self, step: Callable[[list, int], object], memo: dict[int, object]) -> object:
        """The first decision of `step(ancestors, index)` from the parent of the current node up
        (None if none decides); deeper than `_NEAR` the answer is remembered for every ancestor
        passed, keyed by the child the step at that index reads (it decides the answer from there)."""
        chain = self.ancestors
        index = len(chain) - 2
        stop = index - _NEAR
        passed: list[int] = []
        result = None
        while index >= 0:
            if index <= stop:
                key = id(chain[index + 1])
                known = memo.get(key, _ON)
                if known is not _ON:
                    result = known
                    break
                passed.append(key)
            found = step(chain, index)
            if found is not _ON:
                result = found
                break
            index -= 1
        for key in passed:
            memo[key] = result
        return result

    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        """`jnp.sum` -> `jax.numpy.sum` as seen from the current scope; None when unknown."""
        # `NameResolver.qualified_name`'s memo, probed here: most questions were asked before
        answer = self._answers.get(id(node))
        if answer is not None and answer[0] is self.scope:
            return answer[1]
        return self.file.names.qualified_name(node, self.scope)

    def written_name(self, node: cst.BaseExpression) -> str | None:
        """The qualified name with JAX's old paths kept as written (`jax.api.grad`, not `jax.grad`)."""
        return self.file.names.written_name(node, self.scope)

    def function(self) -> cst.FunctionDef | cst.Lambda | None:
        """The innermost function or lambda around the current node."""
        ancestors = self.ancestors
        depth = len(ancestors)
        at, at_depth, found = self._function_at
        if at_depth == depth and depth and at is ancestors[-1]:
            return found
        found = self._function(ancestors)
        self._function_at = (ancestors[-1] if ancestors else None, depth, found)
        return found

    def _function(self, ancestors: list[cst.CSTNode]) -> cst.FunctionDef | cst.Lambda | None:
        index = len(ancestors) - 2
        for index in range(index, max(index - _NEAR, -1), -1):
            node = ancestors[index]
            if type(node) in _FUNCTION_TYPES:
                return node
        if index <= 0:
            return None
        return self._scan(_function_step, self._functions)

    @property
    def parent(self) -> cst.CSTNode | None:
        """The parent of the node being visited."""
        return self.ancestors[-2] if len(self.ancestors) >= 2 else None

    def enclosing_functions(self) -> Iterator[cst.FunctionDef | cst.Lambda]:
        """Functions and lambdas around the current node, innermost first."""
        ancestors = self.ancestors
        for index in range(len(ancestors) - 2, -1, -1):
            node = ancestors[index]
            if type(node) in _FUNCTION_TYPES:
                yield node

    def innermost_loop(self) -> cst.CSTNode | None:
        """The loop or comprehension that runs the current node once per iteration, if any.

        Stops at the enclosing function: a loop around a `def` does not run its body.
        """
        ancestors = self.ancestors
        depth = len(ancestors)
        at, at_depth, found = self._loop_at
        if at_depth == depth and depth and at is ancestors[-1]:
            return found
        found = self._scan(_loop_step, self._loops)
        self._loop_at = (ancestors[-1] if ancestors else None, depth, found)
        return found


def _function_step(chain: list[cst.CSTNode], index: int) -> object:
    node = chain[index]
    return node if type(node) in _FUNCTION_TYPES else _ON


def _loop_step(chain: list[cst.CSTNode], index: int) -> object:
    node = chain[index]
    kind = type(node)
    if kind not in _LOOP_RELEVANT_TYPES:
        return _ON
    child = chain[index + 1]
    if kind in _SCOPE_OWNER_TYPES:
        return None
    if kind is cst.For:
        return node if child is node.body else _ON
    if kind is cst.While:
        return node if child is node.body or child is node.test else _ON
    if kind is cst.CompFor:
        outermost = type(chain[index - 1]) is not cst.CompFor
        if child is node.target or (child is node.iter and outermost):
            return _ON
        return next(n for n in reversed(chain[:index]) if type(n) in _COMPREHENSION_TYPES)
    return node if child is not node.for_in else _ON  # a comprehension


class Walker:
    """Walks the tree once, keeping the walk state current and dispatching to the visitors' handlers
    (a visitor that raises is dropped for the rest of the file; `failures` says which and why)."""

    def __init__(self, ctx: WalkState, rules: list, scopes: dict[int, Scope] | None = None) -> None:
        self.ctx = ctx
        self.visitors: dict[type, list[Callable]] = {}
        self.leavers: dict[type, list[Callable]] = {}
        for rule in rules:
            for node_type, method in handlers(type(rule), "visit_"):
                self.visitors.setdefault(node_type, []).append(getattr(rule, method))
            for node_type, method in handlers(type(rule), "leave_"):
                self.leavers.setdefault(node_type, []).append(getattr(rule, method))
        self.scope_owners: list[cst.CSTNode] = []
        #: id(function, lambda, class or comprehension) -> the scope this walk made for it
        self.scopes: dict[int, Scope] = scopes if scopes is not None else {}
        #: visitors that raised, with the exception; they are dropped for the rest of the file
        self.failures: list[tuple[object, BaseException]] = []

    def run(self, module: cst.Module, events: list | None = None) -> None:
        """`walk(module, self.enter, self.leave)`, with `enter` and `leave` written into the loop;
        `events` (if given) receives what `replay` needs to walk the tree again without reading it.

        Every walk of every file goes through here, and calling two methods per node was a third
        of the cost of the walk. The loop is `facts.walk.walk`'s; the two copies below are `enter`
        and `leave`, which stay the reference.

        The events, in walk order: a node where it is entered, None where the innermost node
        entered is left, and a `Scope` where the current scope changes (before the node whose
        field starts it is entered, after the node that ends it is left). A leaf (a node of a type
        with no children: a name, a literal, an operator) is left where it is entered, and has no
        None of its own.
        """
        ctx = self.ctx
        root = ctx.file.module_scope
        if root.recorded is None:  # the scopes this walk makes read the bindings the model records
            root.ensure_recorded()
        ancestors = ctx.ancestors
        visitors, leavers, scope_owners, call = self.visitors, self.leavers, self.scope_owners, self._call
        scopes = self.scopes
        enumerators = ENUMERATORS
        if events is None:
            events = []
        record = events.append
        self.enter(module, "")
        record(module)
        enumerator = enumerators[type(module)]
        if enumerator is None:
            self.leave(module)
            record(None)
            return
        stack: list[tuple[cst.CSTNode, Iterator]] = [(module, enumerator(module))]
        while stack:
            node, pending = stack[-1]
            for field, child in pending:
                # enter(child, field)
                kind = type(child)
                if field == "body" and ancestors and type(ancestors[-1]) in _SCOPE_OWNER_TYPES:
                    ctx.scope = _scope_of(ancestors[-1], ctx.scope, scopes)
                    scope_owners.append(child)
                    record(ctx.scope)
                elif kind in _COMPREHENSION_TYPES:
                    ctx.scope = scopes[id(child)] = Scope(child, ctx.scope)
                    scope_owners.append(child)
                    record(ctx.scope)
                ancestors.append(child)
                record(child)
                handlers_ = visitors.get(kind)
                if handlers_:
                    for handler in handlers_:  # `_call`, written out: it runs for most nodes
                        try:
                            handler(child)
                        except Exception as exc:  # noqa: BLE001 - as in `_call`
                            self._drop(handler.__self__, exc)
                enumerator = enumerators[kind]
                if enumerator is not None:
                    stack.append((child, enumerator(child)))
                    break
                # a leaf: leave(child) at once, then on with its next sibling
                if kind in leavers:
                    call(leavers, child)
                ancestors.pop()
                if scope_owners and scope_owners[-1] is child:
                    scope_owners.pop()
                    ctx.scope = ctx.scope.parent
                    record(ctx.scope)
            else:
                stack.pop()
                # leave(node)
                if type(node) in leavers:
                    call(leavers, node)
                ancestors.pop()
                record(None)
                if scope_owners and scope_owners[-1] is node:
                    scope_owners.pop()
                    ctx.scope = ctx.scope.parent
                    record(ctx.scope)

    def replay(self, events: list) -> None:
        """The walk `run` recorded in `events`, again, for this walker's visitors: the same handler
        calls in the same order, with the same scopes (the very `Scope` objects) and ancestors,
        without reading the tree (no child enumerators, no tests of fields).

        A visitor with a `names_wanted()` method (asked here, once) has its `visit_Name` called on
        the Names of those spellings only (all of them for None)."""
        ctx = self.ctx
        ancestors = ctx.ancestors
        visitors, leavers, call = self.visitors, self.leavers, self._call
        enumerators = ENUMERATORS
        scope_type = Scope
        name_type = cst.Name
        names = self._name_handlers()
        names_left = name_type in leavers
        for item in events:
            if item is None:
                if type(ancestors[-1]) in leavers:
                    call(leavers, ancestors[-1])
                ancestors.pop()
                continue
            kind = type(item)
            if kind is name_type:  # a leaf: entered and left here
                if names or names_left:
                    ancestors.append(item)
                    spelling = item.value
                    for handler, wanted in names:
                        if wanted is None or spelling in wanted:
                            try:
                                handler(item)
                            except Exception as exc:  # noqa: BLE001 - as in `_call`
                                self._drop(handler.__self__, exc)
                                names[:] = [pair for pair in names if pair[0].__self__ is not handler.__self__]
                    if names_left:
                        call(leavers, item)
                    ancestors.pop()
                continue
            if kind is scope_type:
                ctx.scope = item
                continue
            ancestors.append(item)
            handlers_ = visitors.get(kind)
            if handlers_:
                for handler in handlers_:  # `_call`, written out: it runs for most nodes
                    try:
                        handler(item)
                    except Exception as exc:  # noqa: BLE001 - as in `_call`
                        self._drop(handler.__self__, exc)
            if enumerators[kind] is None:  # a leaf: no None follows
                if kind in leavers:
                    call(leavers, item)
                ancestors.pop()

    def _name_handlers(self) -> list[tuple[Callable, Container[str] | None]]:
        """(visit_Name, the spellings it wants or None) of each visitor, in dispatch order; a visitor
        whose `names_wanted` raises is dropped, as if its handler had."""
        pairs: list[tuple[Callable, Container[str] | None]] = []
        for handler in list(self.visitors.get(cst.Name, ())):
            wanted_of = getattr(handler.__self__, "names_wanted", None)
            try:
                wanted = wanted_of() if wanted_of is not None else None
            except Exception as exc:  # noqa: BLE001 - as in `_call`
                self._drop(handler.__self__, exc)
                continue
            pairs.append((handler, wanted))
        return pairs

    def _call(self, table: dict[type, list[Callable]], node: cst.CSTNode) -> None:
        for handler in table.get(type(node), ()):
            try:
                handler(node)
            except Exception as exc:  # one broken rule must not cost the file its other findings
                self._drop(handler.__self__, exc)

    def _drop(self, rule: object, exc: BaseException) -> None:
        self.failures.append((rule, exc))
        for table in (self.visitors, self.leavers):
            for handlers_ in table.values():
                handlers_[:] = [h for h in handlers_ if h.__self__ is not rule]

    def enter(self, node: cst.CSTNode, field: str) -> bool:
        ctx = self.ctx
        ancestors = ctx.ancestors
        kind = type(node)
        if field == "body" and ancestors and type(ancestors[-1]) in _SCOPE_OWNER_TYPES:
            ctx.scope = _scope_of(ancestors[-1], ctx.scope, self.scopes)
            self.scope_owners.append(node)
        elif kind in _COMPREHENSION_TYPES:
            ctx.scope = self.scopes[id(node)] = Scope(node, ctx.scope)
            self.scope_owners.append(node)
        ancestors.append(node)
        if kind in self.visitors:
            self._call(self.visitors, node)
        return True

    def leave(self, node: cst.CSTNode) -> None:
        if type(node) in self.leavers:
            self._call(self.leavers, node)
        ctx = self.ctx
        ctx.ancestors.pop()
        scope_owners = self.scope_owners
        if scope_owners and scope_owners[-1] is node:
            scope_owners.pop()
            ctx.scope = ctx.scope.parent


def _scope_of(owner: cst.CSTNode, outer: Scope, scopes: dict[int, Scope]) -> Scope:
    """The scope of a function, lambda or class whose body the walk enters: made by a visitor
    where the walk met the node (the model's binds the parameters there), or made now."""
    scope = scopes.get(id(owner))
    if scope is None:
        scope = scopes[id(owner)] = Scope(owner, outer)
    return scope


_HANDLER_CACHE: dict[tuple[type, str], list[tuple[type, str]]] = {}


def handlers(rule_class: type, prefix: str) -> list[tuple[type, str]]:
    """(node type, method name) for each `visit_<Node>` or `leave_<Node>` method of a rule."""
    key = (rule_class, prefix)
    if key not in _HANDLER_CACHE:
        found = []
        for attr in dir(rule_class):
            if attr.startswith(prefix):
                node_type = getattr(cst, attr[len(prefix):], None)
                if not (isinstance(node_type, type) and issubclass(node_type, cst.CSTNode)):
                    raise TypeError(f"{rule_class.__name__}.{attr}: no libcst node named {attr[len(prefix):]}")
                found.append((node_type, attr))
        _HANDLER_CACHE[key] = found
    return _HANDLER_CACHE[key]
