"""Which values reverse-mode differentiation reaches, and the singular points a `where` masks: the
facts behind NaN gradients through `jnp.where`.

A function is differentiated where a reverse-mode transform is applied to it (`jax.grad`,
`value_and_grad`, `jacrev`, `hessian`, the libraries' grad transforms from the framework table,
`jax.vjp(f, x)`), with respect to the parameters its `argnums` name, and where a differentiated
function calls it with a differentiated value whose result counts towards its own output. Forward
mode (`jacfwd`) is left out: there a `where` selects the tangent it keeps, and the masked branch's
infinite tangent never reaches the result.

A value is differentiated when it is computed from a differentiated parameter through operations
whose reverse pass multiplies the incoming cotangent (arithmetic, indexing, fields of a pytree,
reductions, the functions in `_TRANSPARENT_CALLS`), so that a NaN cotangent reaches the parameter.
A `where`, `maximum`, `clip`, `relu` or `stop_gradient` on the way may drop it (their reverse pass
selects), and so may any call the analysis does not know: a value made that way is not
differentiated here. Every binding of a name must give a differentiated value: a name made safe on
one path is not.

A value counts towards a function's output when it is part of what the function returns (the first
element only under `has_aux=True`), directly or through the names it is assigned to; a metric
computed beside the loss has no gradient.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from ..semantic.literals import Literals
from ..semantic.model import SemanticModel
from ..semantic.scopes import Scope
from ..syntax.arguments import Passing
from ..syntax.walk import walk
from .applications import differentiated_params
from .name_origins import ARRAY_METHODS
from .signatures import function_scope, positional_params
from .transforms import short_name
from .values import STATIC_ATTRIBUTES

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile
    from .calls import Callee
    from .traced import TracedFunctions

FunctionNode = cst.FunctionDef | cst.Lambda

#: grad-mode transforms that differentiate forward: a `where` selects the tangent, the masked
#: branch's infinity never reaches the result
FORWARD_MODE = frozenset({"jax.jacfwd", "equinox.filter_jacfwd"})
#: `jax.vjp(f, *primals)`: `f` differentiated with respect to every primal
VJP = "jax.vjp"

#: selections between arrays by a mask: (condition, on_true, on_false) positions
WHERE_CALLS = frozenset({"jax.numpy.where", "jax.lax.select"})
#: `jnp.select(condlist, choicelist, default)`
SELECT_CALLS = frozenset({"jax.numpy.select"})
SELECTIONS = WHERE_CALLS | SELECT_CALLS

#: functions whose reverse pass multiplies the cotangent by a derivative of their input (or passes it
#: on, sliced or reshaped): a NaN cotangent of their output reaches their input
_TRANSPARENT_CALLS = frozenset({
    *(f"jax.numpy.{name}" for name in (
        "sum", "mean", "prod", "cumsum", "square", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt",
        "cbrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "arctan", "dot", "matmul", "einsum", "tensordot",
        "inner", "outer", "vdot", "reshape", "transpose", "squeeze", "expand_dims", "ravel", "negative",
        "multiply", "add", "subtract", "divide", "true_divide", "power", "abs", "absolute", "diag", "diagonal",
        "trace", "stack", "concatenate", "var", "linalg.norm")),
    *(f"jax.nn.{name}" for name in ("sigmoid", "softmax", "log_softmax", "softplus", "logsumexp", "silu", "swish")),
    "jax.scipy.special.logsumexp",
})
#: methods of an array with the same property: all but those that round, select or concretize
_TRANSPARENT_METHODS = ARRAY_METHODS - {"astype", "max", "min", "clip", "round", "argmax", "argmin", "block_until_ready"}
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.MatrixMultiply, cst.Power)
_DEFINITIONS = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


@dataclass(frozen=True)
class Interval:
    """A set of real numbers between two bounds, each bound in the set or not."""

    low: float
    low_closed: bool
    high: float
    high_closed: bool

    def meets(self, other: "Interval") -> bool:
        low, low_closed = max((self.low, self.low_closed), (other.low, other.low_closed),
                              key=lambda b: (b[0], not b[1]))
        high, high_closed = min((self.high, self.high_closed), (other.high, other.high_closed),
                                key=lambda b: (b[0], b[1]))
        return low < high or low == high and low_closed and high_closed


_INF = math.inf
_NON_POSITIVE = (Interval(-_INF, False, 0.0, True),)
_NEGATIVE = (Interval(-_INF, False, 0.0, False),)
_ZERO = (Interval(0.0, True, 0.0, True),)
_OUTSIDE_UNIT = (Interval(-_INF, False, -1.0, True), Interval(1.0, True, _INF, False))

#: function -> (the inputs where its derivative is infinite, or where it is NaN itself; how a message
#: says so; a value where it is smooth, for the safe input a message suggests)
SINGULAR_FUNCTIONS: dict[str, tuple[tuple[Interval, ...], str, str]] = {
    **{name: (_NON_POSITIVE, "has an infinite derivative at 0 and is NaN below it", "1.0") for name in (
        "jax.numpy.sqrt", "jax.lax.sqrt", "jax.lax.rsqrt")},
    **{name: (_NON_POSITIVE, "has an infinite derivative at 0 and is NaN below it", "1.0") for name in (
        "jax.numpy.log", "jax.lax.log", "jax.numpy.log2", "jax.numpy.log10")},
    **{name: ((Interval(-_INF, False, -1.0, True),), "has an infinite derivative at -1 and is NaN below it", "0.0")
       for name in ("jax.numpy.log1p", "jax.lax.log1p")},
    **{name: (_OUTSIDE_UNIT, "has an infinite derivative at -1 and 1 and is NaN beyond them", "0.0") for name in (
        "jax.numpy.arccos", "jax.numpy.arcsin", "jax.numpy.acos", "jax.numpy.asin", "jax.lax.acos",
        "jax.lax.asin", "jax.numpy.arctanh", "jax.numpy.atanh", "jax.lax.atanh")},
    **{name: (_ZERO, "has an infinite derivative at 0", "1.0") for name in (
        "jax.numpy.reciprocal", "jax.numpy.cbrt", "jax.lax.cbrt")},
}
_DIVISIONS = frozenset({"jax.numpy.divide", "jax.numpy.true_divide"})
_POWERS = frozenset({"jax.numpy.power"})


@dataclass(frozen=True)
class MaskedSingularity:
    """A function applied in one branch of a `where` to a value whose singular points the condition
    masks from that branch."""

    #: the call (or `/`, `**`) that is singular there
    node: cst.CSTNode
    #: the value it is applied to, written as the condition writes it
    argument: cst.BaseExpression
    #: how a message names it (`jnp.sqrt`, `1 / d`, `x ** 0.5`) and says where it is singular
    shown: str
    singular: str
    #: a value where it is smooth (`1.0`), to stand in for the masked inputs
    safe: str
    #: the condition, and whether the branch is taken where it is false
    condition: cst.BaseExpression
    taken_when_false: bool


class Differentiation:
    """The differentiated functions of a file, with respect to which parameters and by what; which
    values in them are differentiated and which count towards their output (module docstring).
    Built on first use from the traced functions' applications and calls: one pass over the file's
    calls per round, until no function gains a differentiated parameter."""

    def __init__(self, file: "SourceFile", traced: "TracedFunctions") -> None:
        self.file = file
        self.traced = traced
        self.model = SemanticModel.of(file)
        #: id(function) -> its differentiated parameters
        self.params: dict[int, set[str]] = {}
        #: id(function) -> how it comes to be differentiated (`jax.grad`, a call from `loss_fn`)
        self.origin: dict[int, str] = {}
        #: id(function) -> only the first element of what it returns is differentiated (`has_aux`)
        self._aux: dict[int, bool] = {}
        self._memo: dict[int, dict[str, bool]] = {}
        self._contributing: dict[int, set[int]] = {}
        self._seed()
        self._propagate()

    @classmethod
    def of(cls, file: "SourceFile", traced: "TracedFunctions") -> "Differentiation":
        return file.fact(cls, lambda: cls(file, traced))

    # -- questions ---------------------------------------------------------------------------------
    def differentiated(self, function: FunctionNode | None) -> bool:
        return function is not None and bool(self.params.get(id(function)))

    def reaches(self, expr: cst.BaseExpression, function: FunctionNode) -> bool:
        """Whether `expr` is computed, in `function`, from a parameter it is differentiated with
        respect to through operations that pass a NaN cotangent back to it."""
        if not self.differentiated(function):
            return False
        return self._reaches(expr, function, set())

    def counts(self, node: cst.CSTNode, function: FunctionNode) -> bool:
        """Whether the value of `node` counts towards what `function` returns (its differentiated
        output), directly or through the names it is assigned to."""
        key = id(function)
        if key not in self._contributing:
            self._contributing[key] = self._contributing_nodes(function)
        return id(node) in self._contributing[key]

    def masked_singularities(self, call: cst.Call, scope: Scope) -> list[MaskedSingularity]:
        """For a `jnp.where`, `lax.select` or `jnp.select` call: the singular functions in its branches
        applied to the value its condition compares, where the condition masks some of their singular
        points from that branch."""
        found = []
        for condition, branch, when_false in self._branches(call, scope):
            compared = _comparison(condition)
            if compared is None:
                continue
            subject, operator, bound_expr = compared
            bound = self._constant(bound_expr, scope)
            if bound is None:
                continue
            masked = _masked_region(operator, bound, not when_false)
            written = _written(self.file, subject)
            for site in self._singular_sites(branch, scope):
                if _written(self.file, site.argument) != written:
                    continue
                bad, singular, safe = site.bad
                if any(m.meets(b) for m in masked for b in bad):
                    found.append(MaskedSingularity(site.node, site.argument, site.shown, singular, safe, condition,
                                                   when_false))
        return found

    # -- seeds and propagation ---------------------------------------------------------------------
    def _seed(self) -> None:
        traced = self.traced
        for function in traced.functions:
            if id(function) in traced.external:
                continue
            for use in traced.applications.get(id(function), ()):
                if use.mode != "grad" or use.transform in FORWARD_MODE:
                    continue
                params = self._params_of(function, use)
                if params:
                    self._add(function, params, f"`{short_name(use.transform)}`")
                    aux = use.keywords.get("has_aux")
                    if aux is not None and not (type(aux) is cst.Name and aux.value == "False"):
                        self._aux[id(function)] = True
        for site in self.model.sites_of(cst.Call):
            call = site.node
            if self.file.names.qualified_name(call.func, site.scope) != VJP or not call.args:
                continue
            callee = traced.callee(call.args[0].value, site.scope)
            if callee is None or id(callee.function) in traced.external:
                continue
            primals = [a for a in call.args[1:] if a.keyword is None]
            bound = callee.bind(primals)
            params = {p for p, passed in bound.items() if passed.how is Passing.ARGUMENT}
            if params and len(primals) == len(call.args) - 1 and not any(a.star for a in primals):
                self._add(callee.function, params, "`jax.vjp`")

    def _params_of(self, function: FunctionNode, use) -> set[str]:
        positional = positional_params(function)
        receiver = positional[0] if id(function) in self.traced.methods and positional else None
        return differentiated_params(use, positional[use.bound_positional:]) - {receiver}

    def _add(self, function: FunctionNode, params: set[str], origin: str) -> bool:
        known = self.params.setdefault(id(function), set())
        if params <= known:
            return False
        known |= params
        self.origin.setdefault(id(function), origin)
        self._memo.pop(id(function), None)
        return True

    def _propagate(self) -> None:
        """A function a differentiated function calls, with a differentiated argument whose result
        counts towards the caller's output, is differentiated with respect to that parameter."""
        calls = [(site.node, function_scope(site.scope)) for site in self.model.sites_of(cst.Call)
                 if id(site.node) in self.traced.callees]
        for _ in range(8):  # helpers nest a few deep; each round follows one more level
            grew = False
            for call, scope in calls:
                caller = scope.node if scope is not None else None
                if not self.differentiated(caller) or not self.counts(call, caller):
                    continue
                callee: Callee = self.traced.callees[id(call)]
                if id(callee.function) in self.traced.external:
                    continue
                params = set()
                for param, passed in callee.bind(call.args).items():
                    if passed.how is Passing.ARGUMENT and len(passed.values) == 1 \
                            and self.reaches(passed.values[0], caller):
                        params.add(param)
                if params:
                    grew |= self._add(callee.function, params, f"a call from `{_name(caller)}`")
            if not grew:
                return

    # -- which values are differentiated -----------------------------------------------------------
    def _reaches(self, expr: cst.BaseExpression, function: FunctionNode, visiting: set[str]) -> bool:
        kind = type(expr)
        if kind is cst.Name:
            return self._name_reaches(expr.value, function, visiting)
        if kind is cst.BinaryOperation:
            return isinstance(expr.operator, _ARITHMETIC) and (
                self._reaches(expr.left, function, visiting) or self._reaches(expr.right, function, visiting))
        if kind is cst.UnaryOperation:
            return isinstance(expr.operator, (cst.Minus, cst.Plus)) and self._reaches(expr.expression, function, visiting)
        if kind is cst.Subscript:
            return self._reaches(expr.value, function, visiting)
        if kind is cst.Attribute:
            return expr.attr.value not in STATIC_ATTRIBUTES and self._reaches(expr.value, function, visiting)
        if kind is cst.Call:
            func = expr.func
            if type(func) is cst.Attribute and func.attr.value in _TRANSPARENT_METHODS \
                    and self._reaches(func.value, function, visiting):
                return True
            scope = self.model.scopes.get(id(function))
            if scope is None or self.file.names.qualified_name(func, scope) not in _TRANSPARENT_CALLS:
                return False
            return any(self._reaches(value, function, visiting) for value in _operands(expr))
        return False

    def _name_reaches(self, name: str, function: FunctionNode, visiting: set[str]) -> bool:
        memo = self._memo.setdefault(id(function), {})
        if name in memo:
            return memo[name]
        if name in visiting:
            return True  # a binding that feeds itself: the others decide
        scope = self.model.scopes.get(id(function))
        found = scope.lookup(name) if scope is not None else None
        if found is None or found[0] is not scope:
            memo[name] = False  # closed over, global or a builtin: not what the transform differentiates
            return False
        visiting.add(name)
        reached = False
        for node, statement in zip(found[1].nodes, found[1].statements):
            kind = type(statement)
            if kind is cst.Param:
                reached = name in self.params.get(id(function), ())
            elif kind is cst.AugAssign:
                continue  # `x += y` keeps what the other bindings of `x` are
            elif kind in (cst.Assign, cst.AnnAssign) and statement.value is not None and _sole_target(statement) is node:
                reached = self._reaches(statement.value, function, visiting)
            else:
                reached = False
            if not reached:
                break
        visiting.discard(name)
        memo[name] = reached
        return reached

    # -- what counts towards the output ------------------------------------------------------------
    def _contributing_nodes(self, function: FunctionNode) -> set[int]:
        outputs = list(self._outputs(function))
        scope = self.model.scopes.get(id(function))
        live: set[str] = set()
        pending = list(outputs)
        expressions: list[cst.CSTNode] = []
        while pending:
            expr = pending.pop()
            expressions.append(expr)
            for name in _names_in(expr):
                if name in live or scope is None:
                    continue
                live.add(name)
                found = scope.lookup(name)
                if found is None or found[0] is not scope:
                    continue
                for statement in found[1].statements:
                    if type(statement) in (cst.Assign, cst.AnnAssign, cst.AugAssign) and statement.value is not None:
                        pending.append(statement.value)
        nodes: set[int] = set()
        for expr in expressions:
            walk(expr, lambda node, _field: nodes.add(id(node)) or type(node) not in _DEFINITIONS, None)
        return nodes

    def _outputs(self, function: FunctionNode) -> Iterator[cst.BaseExpression]:
        """What the function returns, where the transform differentiates it: under `has_aux`, the
        first element of a returned tuple (a return of anything else is not known to split)."""
        aux = self._aux.get(id(function), False)
        if type(function) is cst.Lambda:
            returned = [function.body]
        else:
            returned = []

            def enter(node: cst.CSTNode, _field: str) -> bool:
                if type(node) is cst.Return and node.value is not None:
                    returned.append(node.value)
                return type(node) not in _DEFINITIONS or node is function
            walk(function, enter, None)
        for value in returned:
            if not aux:
                yield value
            elif type(value) is cst.Tuple and value.elements and type(value.elements[0]) is cst.Element:
                yield value.elements[0].value

    # -- where, select and the singular functions in their branches --------------------------------
    def _branches(self, call: cst.Call, scope: Scope) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression, bool]]:
        """(condition, branch, whether the branch is taken where the condition is false)."""
        name = self.file.names.qualified_name(call.func, scope)
        args = call.args
        if any(a.keyword is not None or a.star for a in args):
            return
        if name in WHERE_CALLS and len(args) == 3:
            yield args[0].value, args[1].value, False
            yield args[0].value, args[2].value, True
        elif name in SELECT_CALLS and len(args) in (2, 3):
            conditions, choices = args[0].value, args[1].value
            if type(conditions) not in (cst.List, cst.Tuple) or type(choices) not in (cst.List, cst.Tuple) \
                    or len(conditions.elements) != len(choices.elements):
                return
            for condition, choice in zip(conditions.elements, choices.elements):
                yield condition.value, choice.value, False
                if len(args) == 3:  # the default is taken where every condition is false
                    yield condition.value, args[2].value, True

    def _singular_sites(self, branch: cst.BaseExpression, scope: Scope) -> list["_Site"]:
        sites: list[_Site] = []
        names = self.file.names
        code = self.file.module.code_for_node

        def enter(node: cst.CSTNode, _field: str) -> bool:
            kind = type(node)
            if kind in _DEFINITIONS:
                return False
            if kind is cst.BinaryOperation:
                if type(node.operator) is cst.Divide:
                    sites.append(_Site(node, node.right, f"`{code(node)}`", (_ZERO, "has an infinite derivative where its divisor is 0", "1.0")))
                elif type(node.operator) is cst.Power:
                    bad = _power_singularity(node.right)
                    if bad is not None:
                        sites.append(_Site(node, node.left, f"`{code(node)}`", bad))
            elif kind is cst.Call:
                name = names.qualified_name(node.func, scope)
                if name in WHERE_CALLS or name in SELECT_CALLS:
                    return False  # a selection of its own: its branches are its own question
                positional = [a.value for a in node.args if a.keyword is None and not a.star]
                if name in SINGULAR_FUNCTIONS and len(positional) == 1:
                    sites.append(_Site(node, positional[0], f"`{_shown(name)}`", SINGULAR_FUNCTIONS[name]))
                elif name in _DIVISIONS and len(positional) == 2:
                    sites.append(_Site(node, positional[1], f"`{code(node)}`", (_ZERO, "has an infinite derivative where its divisor is 0", "1.0")))
                elif name in _POWERS and len(positional) == 2:
                    bad = _power_singularity(positional[1])
                    if bad is not None:
                        sites.append(_Site(node, positional[0], f"`{code(node)}`", bad))
            return True
        walk(branch, enter, None)
        return sites

    def _constant(self, expr: cst.BaseExpression, scope: Scope) -> float | None:
        """A number the expression certainly is: a literal, a name bound only to one, or the machine
        epsilon of `jnp.finfo` (a tiny positive number, which the bounds here treat alike)."""
        number = _number(expr)
        if number is not None:
            return number
        if type(expr) is cst.Name:
            values = Literals.of(self.file).values_of(expr.value, scope)
            numbers = {_number(v) for v in values} if values else {None}
            return numbers.pop() if len(numbers) == 1 else None
        if type(expr) is cst.Attribute and expr.attr.value in ("eps", "tiny", "smallest_normal") \
                and type(expr.value) is cst.Call \
                and self.file.names.qualified_name(expr.value.func, scope) in ("jax.numpy.finfo", "numpy.finfo"):
            return 1e-30
        return None


@dataclass(frozen=True)
class _Site:
    node: cst.CSTNode
    argument: cst.BaseExpression
    shown: str
    bad: tuple[tuple[Interval, ...], str, str]


def _power_singularity(exponent: cst.BaseExpression) -> tuple[tuple[Interval, ...], str, str] | None:
    """`x ** p` for a written exponent: a fractional one below 1 has an infinite derivative at 0, any
    fractional one is NaN below 0, a negative integer one is infinite at 0."""
    p = _number(exponent)
    if p is None:
        return None
    if float(p).is_integer():
        return (_ZERO, "has an infinite derivative at 0", "1.0") if p < 0 else None
    if p < 1:
        return _NON_POSITIVE, "has an infinite derivative at 0 and is NaN below it", "1.0"
    return _NEGATIVE, "is NaN below 0", "1.0"


def _number(expr: cst.BaseExpression) -> float | None:
    sign = 1.0
    if type(expr) is cst.UnaryOperation and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        sign = -1.0 if isinstance(expr.operator, cst.Minus) else 1.0
        expr = expr.expression
    if type(expr) in (cst.Integer, cst.Float):
        return sign * float(expr.evaluated_value)
    return None


_FLIPPED = {cst.GreaterThan: cst.LessThan, cst.LessThan: cst.GreaterThan, cst.GreaterThanEqual: cst.LessThanEqual,
            cst.LessThanEqual: cst.GreaterThanEqual, cst.Equal: cst.Equal, cst.NotEqual: cst.NotEqual}


def _comparison(condition: cst.BaseExpression) -> tuple[cst.BaseExpression, type, cst.BaseExpression] | None:
    """`x > c` as (x, >, c); `c < x` as (x, >, c) too when `c` is a written number. The caller decides
    whether `c` is a constant."""
    if type(condition) is not cst.Comparison or len(condition.comparisons) != 1:
        return None
    target = condition.comparisons[0]
    operator = type(target.operator)
    if operator not in _FLIPPED:
        return None
    if _number(condition.left) is not None:
        return target.comparator, _FLIPPED[operator], condition.left
    return condition.left, operator, target.comparator


def _masked_region(operator: type, bound: float, taken_when_true: bool) -> tuple[Interval, ...]:
    """Where the branch is not taken, for the condition `x OP bound`."""
    above, below = Interval(bound, False, _INF, False), Interval(-_INF, False, bound, False)
    at_or_above, at_or_below = Interval(bound, True, _INF, False), Interval(-_INF, False, bound, True)
    at = Interval(bound, True, bound, True)
    holds = {cst.GreaterThan: (above,), cst.GreaterThanEqual: (at_or_above,), cst.LessThan: (below,),
             cst.LessThanEqual: (at_or_below,), cst.Equal: (at,), cst.NotEqual: (below, above)}
    fails = {cst.GreaterThan: (at_or_below,), cst.GreaterThanEqual: (below,), cst.LessThan: (at_or_above,),
             cst.LessThanEqual: (above,), cst.Equal: (below, above), cst.NotEqual: (at,)}
    return fails[operator] if taken_when_true else holds[operator]


def _operands(call: cst.Call) -> Iterator[cst.BaseExpression]:
    """The positional arguments of a call, and the elements of a list or tuple among them
    (`jnp.stack([a, b])`)."""
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            continue
        if type(arg.value) in (cst.List, cst.Tuple):
            yield from (element.value for element in arg.value.elements)
        else:
            yield arg.value


def _sole_target(statement: cst.Assign | cst.AnnAssign) -> cst.CSTNode | None:
    if type(statement) is cst.AnnAssign:
        return statement.target
    return statement.targets[0].target if len(statement.targets) == 1 else None


def _names_in(expr: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    def enter(node: cst.CSTNode, _field: str) -> bool:
        if type(node) is cst.Name:
            found.add(node.value)
        return type(node) not in (cst.FunctionDef, cst.ClassDef)
    walk(expr, enter, None)
    return found


def _written(file: "SourceFile", expr: cst.CSTNode) -> str:
    return "".join(file.module.code_for_node(expr).split())


def _shown(name: str) -> str:
    for full, short in (("jax.numpy.", "jnp."), ("jax.lax.", "lax.")):
        if name.startswith(full):
            return short + name[len(full):]
    return name


def _name(function: FunctionNode) -> str:
    return function.name.value if type(function) is cst.FunctionDef else "<lambda>"
