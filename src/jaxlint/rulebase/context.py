"""The one walk over a file: keeps scopes and ancestors, and calls every enabled rule's handlers."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

import libcst as cst

from ..model.settings import Settings
from ..semantic.names import NameResolver
from ..semantic.scopes import COMPREHENSIONS, CollectedBindings, Scope
from ..syntax.walk import ENUMERATORS
from .rule import NodeFix, Rule

if TYPE_CHECKING:
    from ..jaxmodel.jax_names import JaxNames
    from ..jaxmodel.traced import TraceInfo, TracedFunctions
    from ..jaxmodel.values import Kind

LOOPS = (cst.For, cst.While)
FUNCTIONS = (cst.FunctionDef, cst.Lambda)
_SCOPE_OWNERS = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
#: exact types: `isinstance` against libcst's abstract classes is slow on the hot path
_SCOPE_OWNER_TYPES = frozenset(_SCOPE_OWNERS)
_FUNCTION_TYPES = frozenset(FUNCTIONS)
_COMPREHENSION_TYPES = frozenset(COMPREHENSIONS)

#: a per-file fact (`FileContext.fact`)
T = TypeVar("T")


class FileContext:
    """What rules know about the file being checked, and where the walk is in it."""

    @staticmethod
    def line_label(line: int) -> str:
        """How a message names another line of the file (a notebook replaces this per file)."""
        return f"line {line}"

    def __init__(self, path: str, source: str, module: cst.Module, settings: Settings,
                 collected: CollectedBindings | None = None) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.settings = settings
        self.names = NameResolver()
        self.module_scope = Scope(module, None, collected)
        self.module_scope.may_have_walrus = ":=" in source
        self.scope = self.module_scope
        self.ancestors: list[cst.CSTNode] = []
        self.reports: list[tuple[Rule, cst.CSTNode, str, NodeFix | None]] = []
        self._jax: "JaxNames | None" = None
        self._traced: "TracedFunctions | None" = None
        self._facts: dict[type, Any] = {}

    def sibling(self) -> "FileContext":
        """A fresh context for another walk of the same file; scopes collect their names only once."""
        return type(self)(self.path, self.source, self.module, self.settings, self.module_scope.collected)

    # -- facts ---------------------------------------------------------------------------------
    def fact(self, kind: type[T], build: Callable[[], T] | None = None) -> T:
        """The per-file fact `kind` (`kind(self)` unless `build` is given), computed on first use and
        shared by every rule that asks during this walk of the file."""
        found = self._facts.get(kind)
        if found is None:
            found = self._facts[kind] = build() if build is not None else kind(self)
        return found

    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        """`jnp.sum` -> `jax.numpy.sum` as seen from the current scope; None when unknown."""
        return self.names.qualified_name(node, self.scope)

    @property
    def jax(self) -> "JaxNames":
        if self._jax is None:
            from ..jaxmodel.jax_names import JaxNames

            self._jax = JaxNames(self.settings)
        return self._jax

    @property
    def traced(self) -> "TracedFunctions":
        """Which functions JAX traces and the kinds of values in them (computed on first use)."""
        if self._traced is None:
            from ..jaxmodel.traced import TracedFunctions

            self._traced = TracedFunctions(self)
        return self._traced

    def function(self) -> cst.FunctionDef | cst.Lambda | None:
        """The innermost function or lambda around the current node."""
        ancestors = self.ancestors
        for index in range(len(ancestors) - 2, -1, -1):
            node = ancestors[index]
            if type(node) in _FUNCTION_TYPES:
                return node
        return None

    def trace_info(self) -> "TraceInfo | None":
        """How the function around the current node is traced, or None if it is not."""
        return self.traced.info(self.function())

    def kind(self, expr: cst.BaseExpression) -> "Kind":
        """The kind of value an expression in the current function holds (traced array, …)."""
        return self.traced.kind(expr, self.function())

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
        chain = self.ancestors
        for index in range(len(chain) - 2, -1, -1):
            node, child = chain[index], chain[index + 1]
            if isinstance(node, (*FUNCTIONS, cst.ClassDef)):
                return None
            if isinstance(node, LOOPS) and child is node.body:
                return node
            if isinstance(node, cst.While) and child is node.test:
                return node
            if isinstance(node, cst.CompFor):
                outermost = not isinstance(chain[index - 1], cst.CompFor)
                if child is node.target or (child is node.iter and outermost):
                    continue
                return next(n for n in reversed(chain[:index]) if isinstance(n, COMPREHENSIONS))
            if isinstance(node, COMPREHENSIONS) and child is not node.for_in:
                return node
        return None

    # -- reporting -----------------------------------------------------------------------------
    def add_finding(self, rule: Rule, node: cst.CSTNode, message: str, fix: NodeFix | None) -> None:
        self.reports.append((rule, node, message, fix))


class Walker:
    """Walks the tree once, keeping the context current and dispatching to rule handlers."""

    def __init__(self, ctx: FileContext, rules: list) -> None:
        self.ctx = ctx
        self.visitors: dict[type, list[Callable]] = {}
        self.leavers: dict[type, list[Callable]] = {}
        for rule in rules:
            for node_type, method in handlers(type(rule), "visit_"):
                self.visitors.setdefault(node_type, []).append(getattr(rule, method))
            for node_type, method in handlers(type(rule), "leave_"):
                self.leavers.setdefault(node_type, []).append(getattr(rule, method))
        self.scope_owners: list[cst.CSTNode] = []
        #: rules that raised, with the exception; they are dropped for the rest of the file
        self.failures: list[tuple[object, BaseException]] = []

    def run(self, module: cst.Module) -> None:
        """`walk(module, self.enter, self.leave)`, with `enter` and `leave` written into the loop.

        Every walk of every file goes through here, and calling two methods per node was a third
        of the cost of the walk. The loop is `facts.walk.walk`'s; the two copies below are `enter`
        and `leave`, which stay the reference.
        """
        ctx = self.ctx
        ancestors = ctx.ancestors
        visitors, leavers, scope_owners, call = self.visitors, self.leavers, self.scope_owners, self._call
        enumerators = ENUMERATORS
        self.enter(module, "")
        enumerator = enumerators[type(module)]
        if enumerator is None:
            self.leave(module)
            return
        stack: list[tuple[cst.CSTNode, Iterator]] = [(module, enumerator(module))]
        while stack:
            node, pending = stack[-1]
            for field, child in pending:
                # enter(child, field)
                kind = type(child)
                if field == "body" and ancestors and type(ancestors[-1]) in _SCOPE_OWNER_TYPES:
                    ctx.scope = Scope(ancestors[-1], ctx.scope)
                    scope_owners.append(child)
                elif kind in _COMPREHENSION_TYPES:
                    ctx.scope = Scope(child, ctx.scope)
                    scope_owners.append(child)
                ancestors.append(child)
                if kind in visitors:
                    call(visitors, child)
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
            else:
                stack.pop()
                # leave(node)
                if type(node) in leavers:
                    call(leavers, node)
                ancestors.pop()
                if scope_owners and scope_owners[-1] is node:
                    scope_owners.pop()
                    ctx.scope = ctx.scope.parent

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
            ctx.scope = Scope(ancestors[-1], ctx.scope)
            self.scope_owners.append(node)
        elif kind in _COMPREHENSION_TYPES:
            ctx.scope = Scope(node, ctx.scope)
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


_HANDLER_CACHE: dict[tuple[type, str], list[tuple[type, str]]] = {}


def handlers(rule_class: type[Rule], prefix: str) -> list[tuple[type, str]]:
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


class _NameCollector:
    def __init__(self, ctx: FileContext, wanted: frozenset[str]) -> None:
        self.ctx = ctx
        self.wanted = wanted
        self.found: list[tuple[cst.Name, Scope, cst.CSTNode | None]] = []

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.wanted:
            self.found.append((node, self.ctx.scope, self.ctx.parent))


def name_occurrences(ctx: FileContext, names: set[str]) -> list[tuple[cst.Name, Scope, cst.CSTNode | None]]:
    """Every Name node spelling one of `names`, with the scope it is in and its parent.

    A second, narrow walk: rules that rename (rare) pay for it, the common path does not.
    """
    walk_ctx = ctx.sibling()
    collector = _NameCollector(walk_ctx, frozenset(names))
    Walker(walk_ctx, [collector]).run(ctx.module)
    return collector.found


_NAMED_DEFINITIONS = frozenset({cst.Param, cst.FunctionDef, cst.ClassDef})


def is_reference(name: cst.Name, parent: cst.CSTNode | None) -> bool:
    """Whether a Name node stands for a variable (not an attribute, keyword, or parameter name)."""
    kind = type(parent)  # exact types: this runs for every Name, in several rules
    if kind is cst.Attribute:
        return parent.attr is not name
    if kind is cst.Arg:
        return parent.keyword is not name
    if kind in _NAMED_DEFINITIONS:
        return parent.name is not name
    return kind is not cst.ImportAlias
