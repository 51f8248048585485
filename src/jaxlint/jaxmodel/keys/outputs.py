"""Whether what a key's consumption made is ever read: two uses of one key repeat each other's
numbers only where both uses' numbers are seen, so a consumption whose outputs are dead (bound to
names that are rebound before any read, or never read at all, or thrown away) makes no later use of
the key a reuse.

Two questions, both answered only when the answer is certain (else "not known", and the reuse
stands):

* `returned_positions(function, param)`: where a function's return value carries what it makes from
  a key parameter: the positions of its returned tuple (`return model, (state, keys)` gives `(1, 1)`
  for `keys`), `()` for the whole value, no position when nothing made from the key leaves it. Not
  known when anything made from the key reaches something else than the return value: a call that
  may keep or show it (anything but `jax.random`, `jax.numpy`, NumPy and a few builtins, or a
  function of the module whose own answer is known), an attribute or item store, a nested function,
  a loop or branch test, a `yield`.
* `dead(consumption, scope, until)`: the consumption's statement binds its outputs (all of a direct
  draw's, those at the returned positions of a function's) to names no read is reached by (the
  reaching bindings of `dataflow.reaching`), or throws them away. With `until`, a later use of the
  key in the same function whose statement rebinds those names: no read may run between the two
  (none written before the later use's end or in a loop around it); a read written after it sees
  the new value on every path through it. At a module's top level and in a class body nothing is
  dead: other modules and methods read those names.
"""
from __future__ import annotations

import libcst as cst

from ...semantic.bindings import ReferenceContext
from ...semantic.model import SemanticModel
from ...semantic.scopes import Scope
from ...syntax.walk import COMPREHENSIONS, walk
from ..jax_names import PARTIAL
from ..name_origins import NameOrigins
from .policy import discarded_call
from .state import Consumption, KeyFacts
from .tables import KEY_ATTRIBUTES

FunctionNode = cst.FunctionDef | cst.Lambda
#: Positions in a returned tuple (`(1, 0)`: first element of the second element); `()` is the whole.
Positions = frozenset[tuple[int, ...]]

#: Calls that compute a value from their arguments and keep or show nothing of them.
PURE_PREFIXES = ("jax.random.", "jax.numpy.", "numpy.")
PURE_BUILTINS = frozenset(f"builtins.{name}" for name in (
    "len", "tuple", "list", "int", "float", "bool", "zip", "range", "enumerate", "min", "max", "sum", "abs",
    "sorted", "reversed", "dict"))
#: Decorators that compile or transform a function without keeping or showing what it returns.
TRANSPARENT_DECORATORS = ("jax.", "equinox.", "flax.", "builtins.staticmethod", "builtins.classmethod")
#: How many functions deep `returned_positions` follows a key.
MAX_DEPTH = 4
_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda, *COMPREHENSIONS)
_COMPOUND_HEADERS = {cst.If: ("test",), cst.While: ("test",), cst.For: ("iter", "target"), cst.With: ("items",),
                     cst.Match: ("subject",)}


class ConsumptionOutputs:
    """The two questions of the module docstring, for one file."""

    def __init__(self, facts: KeyFacts) -> None:
        self.facts = facts
        self.ctx = facts.ctx
        self._positions: dict[tuple[int, str], Positions | None] = {}
        self._references: dict[int, list] | None = None
        self._binding_ids: dict[int, int] | None = None
        #: id(function) -> id(Name) -> the small statement of its own body that holds the Name
        self._statements: dict[int, dict[int, cst.CSTNode]] = {}
        #: id(Name) -> its rank among the names of the file, in source order
        self._order: dict[int, int] | None = None
        #: the names some scope of the file declares `nonlocal`
        self._nonlocal_names: frozenset[str] | None = None

    # -- what a function returns of a key it is given -----------------------------------------
    def returned_positions(self, function: FunctionNode, param: str, depth: int = 0) -> Positions | None:
        external = self.facts.traced.external.get(id(function))
        if external is not None:
            consumed = self.facts.read_summary(function).consumed.get(param)
            return consumed.returned if consumed is not None else None
        cache_key = (id(function), param)
        if cache_key in self._positions:
            return self._positions[cache_key]
        if depth > MAX_DEPTH:
            return None
        self._positions[cache_key] = None  # met again while answering (recursion): not known
        found = self._positions[cache_key] = self._returned(function, param, depth)
        return found

    def _returned(self, function: FunctionNode, param: str, depth: int) -> Positions | None:
        scope = self.facts.traced.scopes.get(id(function))
        if scope is None or param in scope.globals or param in scope.nonlocals:
            return None
        if isinstance(function, cst.Lambda):
            body = function.body
            if not _reads(body, {param}):
                return frozenset()
            return frozenset({()}) if self._pure(body, {param}, scope, depth) else None
        if not all(self._transparent(decorator.decorator, scope) for decorator in function.decorators):
            return None  # a decorator may keep or show what the function returns
        statements, headers, nested = _own_statements(function)
        tainted = {param}
        positions: set[tuple[int, ...]] = set()
        changed = True
        while changed:
            changed = False
            if not nested.isdisjoint(tainted) or any(_reads(header, tainted) for header in headers):
                return None  # a nested function or a loop or branch test sees it
            for statement in statements:
                kind = type(statement)
                if kind is cst.Return:
                    if statement.value is None or not _reads(statement.value, tainted):
                        continue
                    found = self._return_positions(statement.value, tainted, scope, depth, ())
                    if found is None:
                        return None
                    positions |= found
                elif kind in (cst.Assign, cst.AnnAssign, cst.AugAssign):
                    value = statement.value
                    reads_target = kind is cst.AugAssign and _reads(statement.target, tainted)
                    if value is None or not (reads_target or _reads(value, tainted)):
                        continue
                    if not self._pure(value, tainted, scope, depth):
                        return None
                    targets = [t.target for t in statement.targets] if kind is cst.Assign else [statement.target]
                    for target in targets:
                        names = _plain_names(target)
                        if names is None:
                            return None  # stored in an attribute or an item: kept somewhere else
                        if not names <= tainted:
                            tainted |= names
                            changed = True
                elif kind is cst.Expr:
                    if _reads(statement.value, tainted) and not self._pure(statement.value, tainted, scope, depth):
                        return None
                elif kind in (cst.Pass, cst.Break, cst.Continue, cst.Import, cst.ImportFrom):
                    continue
                elif kind is cst.Del:
                    continue
                elif _reads(statement, tainted):
                    return None  # `assert`, `raise`, `global`, …: not followed
        return frozenset(positions)

    def _transparent(self, decorator: cst.BaseExpression, scope: Scope) -> bool:
        """A decorator that compiles or transforms the function, or makes it a static or class
        method: what the function returns is what its callers get, and nothing else sees it."""
        outer = scope.parent or self.ctx.module_scope
        if type(decorator) is cst.Call:
            qualified = self.ctx.names.qualified_name(decorator.func, outer)
            if qualified in PARTIAL and decorator.args:
                decorator = decorator.args[0].value
            else:
                decorator = decorator.func
        qualified = self.ctx.names.qualified_name(decorator, outer) or ""
        return qualified.startswith(TRANSPARENT_DECORATORS)

    def _return_positions(self, value: cst.BaseExpression, tainted: set[str], scope: Scope, depth: int,
                          at: tuple[int, ...]) -> set[tuple[int, ...]] | None:
        if type(value) in (cst.Tuple, cst.List) and not any(type(e) is cst.StarredElement for e in value.elements):
            found: set[tuple[int, ...]] = set()
            for index, element in enumerate(value.elements):
                if _reads(element.value, tainted):
                    inner = self._return_positions(element.value, tainted, scope, depth, (*at, index))
                    if inner is None:
                        return None
                    found |= inner
            return found
        return {at} if self._pure(value, tainted, scope, depth) else None

    def _pure(self, expression: cst.BaseExpression, tainted: set[str], scope: Scope, depth: int) -> bool:
        """Whether what the expression computes from the tainted names goes nowhere but its value:
        every call given one of them computes without keeping or showing it."""
        pure = True

        def enter(node: cst.CSTNode, field: str) -> bool:
            nonlocal pure
            if not pure:
                return False
            if type(node) in _NESTED:
                if _reads(node, tainted):
                    pure = False
                return False
            if type(node) is cst.Call and _reads(node, tainted) and not self._pure_call(node, tainted, scope, depth):
                pure = False
                return False
            if type(node) in (cst.Yield, cst.Await):
                pure = False
            return True

        walk(expression, enter, None)
        return pure

    def _pure_call(self, node: cst.Call, tainted: set[str], scope: Scope, depth: int) -> bool:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in KEY_ATTRIBUTES and not _reads_args(node, tainted):
            return True  # `keys.reshape(...)`, `x.astype(...)`: a method of the array itself
        qualified = self.ctx.names.qualified_name(func, scope)
        if qualified is not None and (qualified.startswith(PURE_PREFIXES) and not _keeps(qualified)
                                      or qualified in PURE_BUILTINS):
            return True
        if _reads(func, tainted):
            return False
        reached = self.facts.callee(func, scope)
        if reached is None or reached.constructs or reached.prefix:
            return False
        for param, passed in reached.bind(node.args).items():
            if any(_reads(value, tainted) for value in passed.values):
                if self.returned_positions(reached.function, param, depth + 1) is None:
                    return False
        return True

    # -- whether a consumption's outputs are read ---------------------------------------------
    def dead(self, consumption: Consumption, scope: Scope | None, until: Consumption | None = None) -> bool:
        """Whether nothing reads what this consumption made (see the module docstring); with `until`,
        a later use of the key in the same function whose statement rebinds every name holding those
        outputs: whether nothing reads them on the way there (a read that only a path around that
        use reaches sees no number that use repeats)."""
        statement = consumption.statement
        if statement is None or not consumption.certain:
            return False
        if type(statement) is not cst.Expr and (scope is None or type(scope.node) is not cst.FunctionDef):
            return False  # a module's or a class's names are read from elsewhere (`module.x`, `self.x`)
        if consumption.direct:
            positions: Positions | None = frozenset({()})
        elif consumption.reached is not None:
            positions = self.returned_positions(*consumption.reached)
        else:
            positions = None
        if positions is None:
            return False
        node = consumption.node
        kind = type(statement)
        if kind is cst.Expr:
            return self.facts.discarded(node, statement)  # thrown away, at any level
        if kind is cst.Assign and statement.value is node:
            targets = [t.target for t in statement.targets]
        elif kind is cst.AnnAssign and statement.value is node:
            targets = [statement.target]
        else:
            return False
        carrying: list[cst.Name] = []
        for target in targets:
            names = _carrying_names(target, positions, ())
            if names is None:
                return False
            carrying += names
        boundary = self._boundary(consumption, carrying, until) if until is not None else None
        return all(self._never_read(name, scope, boundary) for name in carrying)

    def _boundary(self, consumption: Consumption, carrying: list[cst.Name],
                  until: Consumption) -> "tuple[int, list[tuple[int, int]]] | None":
        """Where `until` ends (its statement's last name, in source order) and the spans of the loops
        around it, when it rebinds every carrying name after `consumption` in the same function."""
        statement = until.statement
        if until.within is not consumption.within or type(statement) is not cst.Assign \
                or statement is consumption.statement or until.line <= consumption.line:
            return None
        rebound = {n.value for target in statement.targets for n in _all_names(target.target) if type(n) is cst.Name}
        if not {name.value for name in carrying} <= rebound:
            return None
        order = self._name_order()
        end = max((order.get(id(n), -1) for n in _names_below(statement)), default=-1)
        if end < 0:
            return None
        loops = [(min(indices), max(indices)) for loop in _loops_around(until.within, statement)
                 if (indices := [order[id(n)] for n in _names_below(loop) if id(n) in order])]
        return end, loops

    def _never_read(self, target: cst.Name, scope: Scope,
                    boundary: "tuple[int, list[tuple[int, int]]] | None" = None, depth: int = 0) -> bool:
        """No read of the name is reached by this binding of it (a read in a nested function may
        run at any time: it counts). With a boundary (a later statement that rebinds the name, and the
        loops around it): no read that may run before that statement, i.e. none written before its
        end or in a loop around it; a read written after it, out of its loops, runs after the name is
        rebound whenever that statement ran. A read that only feeds a warm-up call, directly or
        through names bound to calls of functions that are themselves read only that way, is no
        read: the warm-up's result is thrown away."""
        name = target.value
        if name in scope.globals or name in scope.nonlocals or self._declared_nonlocal(name):
            return False
        bound = scope.bindings.get(name)
        if bound is None:
            return False
        ids = [id(node) for node in bound.nodes]
        if id(target) not in ids:
            return False
        if any(type(statement) is cst.AugAssign for statement in bound.statements):
            return False  # `x += …` reads the name where no read is recorded
        facts = NameOrigins.of(self.ctx).facts(scope)
        origins = facts.origins.get(name)
        if origins is None or len(origins) != len(ids):
            return False
        origin = origins[ids.index(id(target))]
        binding_id = self._binding_id(target)
        if binding_id is None:
            return False
        binding_nodes = set(ids)
        for reference in self._references_to(binding_id):
            if reference.context is not ReferenceContext.LOAD or reference.node.value != name \
                    or id(reference.node) in binding_nodes:
                continue  # a binding of the name (`a, (b, c) = …` records its inner targets as loads)
            reaching = facts.reaching.get(id(reference.node))
            if reaching is not None and origin not in reaching:
                continue
            if boundary is not None:
                position = self._name_order().get(id(reference.node), -1)
                end, loops = boundary
                if position > end and not any(low <= position <= high for low, high in loops):
                    continue
            if self._feeds_only_warm_up(reference.node, scope, depth):
                continue
            return False
        return True

    def _feeds_only_warm_up(self, read: cst.Name, scope: Scope, depth: int) -> bool:
        """The read is an argument of a warm-up call (`step(state, idx)` thrown away to compile
        `step`), or of a plain function call whose result is bound to names read only that way
        (`idx = sample_idx(k)`, then `step(state, idx)`)."""
        function = scope.node
        if depth >= MAX_DEPTH or type(function) is not cst.FunctionDef:
            return False
        statement = self._statement_of(function).get(id(read))
        if type(statement) is cst.Expr:
            call = discarded_call(statement.value)
            return call is not None and _reads_args(call, {read.value}) and not _reads(call.func, {read.value}) \
                and self.facts.warm_up(call, statement, scope)
        if type(statement) is not cst.Assign or type(statement.value) is not cst.Call:
            return False
        call = statement.value
        if type(call.func) is not cst.Name or call.func.value == read.value:
            return False  # a method may keep its argument in its object
        targets = [name for t in statement.targets for name in _all_names(t.target)]
        return all(type(name) is cst.Name for name in targets) \
            and all(self._never_read(name, scope, None, depth + 1) for name in targets)

    def _statement_of(self, function: cst.FunctionDef) -> dict[int, cst.CSTNode]:
        """id(Name) -> the small statement of the function's own body that holds it."""
        found = self._statements.get(id(function))
        if found is None:
            found = self._statements[id(function)] = {
                id(name): statement for statement in _own_statements(function)[0] for name in _names_below(statement)}
        return found

    def _declared_nonlocal(self, name: str) -> bool:
        """A nested function shares the name with `nonlocal`: its reads are not followed here."""
        if self._nonlocal_names is None:
            self._nonlocal_names = frozenset(
                name for scope in SemanticModel.of(self.ctx).scopes.values() for name in scope.nonlocals)
        return name in self._nonlocal_names

    def _name_order(self) -> dict[int, int]:
        if self._order is None:
            self._order = {id(name): index for index, (name, _, _) in enumerate(SemanticModel.of(self.ctx).names)}
        return self._order

    def _references_to(self, binding_id: int) -> list:
        """The references that may resolve to the binding, in source order (indexed once for the
        file: asking for every draw's outputs stays linear in its size)."""
        if self._references is None:
            self._references = {}
            for reference in SemanticModel.of(self.ctx).references():
                for resolved in reference.binding_ids:
                    self._references.setdefault(resolved, []).append(reference)
        return self._references.get(binding_id, [])

    def _binding_id(self, target: cst.Name) -> int | None:
        if self._binding_ids is None:
            self._binding_ids = {id(binding.node): binding.id for binding in SemanticModel.of(self.ctx).bindings}
        return self._binding_ids.get(id(target))


# -- helpers ------------------------------------------------------------------------------------


def _keeps(qualified: str) -> bool:
    """`np.save(path, x)`, `np.random.seed(...)`: functions of those modules that write a value to a
    file or into a generator's global state, where later code sees it."""
    last = qualified.rpartition(".")[2]
    return last.startswith("save") or last in ("tofile", "memmap") or qualified.startswith("numpy.random.")


def _carrying_names(target: cst.BaseExpression, positions: Positions,
                    at: tuple[int, ...]) -> list[cst.Name] | None:
    """The names of an assignment target that receive something at `positions`; None when one that
    does is not a plain name (an attribute or item keeps it elsewhere) or a `*rest` hides where
    the positions go."""
    carries = any(p[:len(at)] == at or at[:len(p)] == p for p in positions)
    if not carries:
        return []
    if type(target) is cst.Name:
        return [target]
    if type(target) in (cst.Tuple, cst.List):
        if any(type(e) is cst.StarredElement for e in target.elements):
            if any(len(p) > len(at) and p[:len(at)] == at for p in positions):
                return None
            names = [n for e in target.elements for n in _all_names(e.value)]
            return names if all(type(n) is cst.Name for n in names) else None
        found: list[cst.Name] = []
        for index, element in enumerate(target.elements):
            inner = _carrying_names(element.value, positions, (*at, index))
            if inner is None:
                return None
            found += inner
        return found
    return None


def _all_names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if type(target) in (cst.Tuple, cst.List):
        return [n for e in target.elements for n in _all_names(e.value)]
    if type(target) is cst.StarredElement:
        return _all_names(target.value)
    return [target]


def _plain_names(target: cst.BaseExpression) -> set[str] | None:
    """The names a target binds, when it binds nothing but names."""
    names = set()
    for node in _all_names(target):
        if type(node) is not cst.Name:
            return None
        names.add(node.value)
    return names


def _reads(node: cst.CSTNode, names: set[str]) -> bool:
    """Whether a name of `names` is written in the node (as a variable, not an attribute or keyword)."""
    found = False

    def enter(child: cst.CSTNode, field: str) -> bool:
        nonlocal found
        if found:
            return False
        if type(child) is cst.Name and field not in ("attr", "keyword") and child.value in names:
            found = True
            return False
        return True

    walk(node, enter, None)
    return found


def _reads_args(node: cst.Call, names: set[str]) -> bool:
    return any(_reads(arg.value, names) for arg in node.args)


def _own_statements(function: cst.FunctionDef) -> tuple[list[cst.CSTNode], list[cst.CSTNode], set[str]]:
    """The small statements of a function's own body (not of nested functions or classes), the
    headers of its compound statements, and every name written in its nested functions, classes
    and lambdas."""
    statements: list[cst.CSTNode] = []
    headers: list[cst.CSTNode] = []
    nested: set[str] = set()

    def nested_names(child: cst.CSTNode, field: str) -> bool:
        if type(child) is cst.Name:
            nested.add(child.value)
        return True

    def enter(node: cst.CSTNode, field: str) -> bool:
        kind = type(node)
        if node is not function and kind in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            walk(node, nested_names, None)
            return False
        if isinstance(node, cst.BaseSmallStatement):
            statements.append(node)
            for child in _lambdas(node):
                walk(child, nested_names, None)
            return False
        for header in _COMPOUND_HEADERS.get(kind, ()):
            part = getattr(node, header)
            headers.extend(part if isinstance(part, (list, tuple)) else [part])
        if kind is cst.Try or kind is cst.TryStar:
            headers.extend(h.type for h in node.handlers if h.type is not None)
        if isinstance(node, cst.BaseExpression):
            return False
        return True

    walk(function.body, enter, None)
    return statements, headers, nested


def _lambdas(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    def enter(child: cst.CSTNode, field: str) -> bool:
        if type(child) in _NESTED:
            found.append(child)
            return False
        return True

    walk(node, enter, None)
    return found


def _names_below(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    def enter(child: cst.CSTNode, field: str) -> bool:
        if type(child) is cst.Name:
            found.append(child)
        return True

    walk(node, enter, None)
    return found


def _loops_around(within: cst.CSTNode, statement: cst.CSTNode) -> list[cst.CSTNode]:
    """The `for` and `while` loops of a function (not of functions nested in it) that hold a statement."""
    around: list[cst.CSTNode] = []
    found: list[cst.CSTNode] = []

    def enter(node: cst.CSTNode, field: str) -> bool:
        if found or isinstance(node, cst.BaseExpression):
            return False
        if node is statement:
            found.extend(around)
            return False
        if node is not within and type(node) in (cst.FunctionDef, cst.ClassDef):
            return False
        if type(node) in (cst.For, cst.While):
            around.append(node)
        return True

    def leave(node: cst.CSTNode) -> None:
        if around and around[-1] is node:
            around.pop()

    walk(within, enter, leave)
    return found
