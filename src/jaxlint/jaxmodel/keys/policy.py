"""Deliberate use: the reuses that are written on purpose and are not reported (a periodic
evaluation under `if step % every == 0`, draws that keep a batch aligned, a warm-up whose result is
thrown away), and where code is test code."""
from __future__ import annotations


import libcst as cst

from ...semantic.scopes import Scope
from ...syntax.walk import last_name, walk
from .state import Consumption
from .tables import ALIGNING_DRAWS, INDEXING_CALLS, INIT_NAME, TEST_FILE


FunctionNode = cst.FunctionDef | cst.Lambda


def periodic(loop: cst.CSTNode | None, node: cst.CSTNode) -> bool:
    """Whether `node` runs under an `if` of the loop body that tests a remainder (`if step % every ==
    0:`): a periodic evaluation or sample, given the same key each time so that what it shows differs
    only by the model being trained."""
    if not isinstance(loop, (cst.For, cst.While)):
        return False
    periodic: list[bool] = []
    found = False

    def enter(current: cst.CSTNode, _field: str) -> bool:
        nonlocal found
        if isinstance(current, cst.If):  # pushed whatever follows: `leave` pops every `If` entered
            periodic.append(tests_remainder(current.test))
        if found or isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if current is node:
            found = any(periodic)
            return False
        return True

    def leave(current: cst.CSTNode) -> None:
        if isinstance(current, cst.If):
            periodic.pop()

    walk(loop.body, enter, leave)
    return found


def tests_remainder(test: cst.BaseExpression) -> bool:
    """`step % every == 0`, `i % n == 0 or last`: the test of a periodic evaluation or log."""
    stack = [test]
    while stack:
        current = stack.pop()
        if type(current) is cst.BinaryOperation and type(current.operator) is cst.Modulo:
            return True
        if type(current) in (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.BinaryOperation):
            stack.extend(current.children)
        elif type(current) is cst.ComparisonTarget:
            stack.append(current.comparator)
    return False


def same_run_again(first: Consumption, again: Consumption) -> bool:
    """The same key handed twice to the same function (as written), one jaxlint cannot see into
    (`mcmc.run(key, ...)` for two models, `solve(key, ...)` for two solvers), or the same model
    initialised twice (`model.init(key, x)` for the online and the target network, as written both
    times): the same computation run again from the same randomness, which is how runs are made
    comparable or two models made to start equal. An initialiser given other arguments the second
    time (`init_layer(key, 8, 8)` after `init_layer(key, 4, 8)`) makes another layer from the same
    numbers: the layers' weights repeat one another."""
    if first.direct or again.direct:
        return False
    code = cst.Module([]).code_for_node
    if code(first.node.func) != code(again.node.func):
        return False
    if first.via is None and again.via is None:
        return True
    return bool(INIT_NAME.match(last_name(again.node.func) or "")) and code(first.node) == code(again.node)


def alternatives_on_the_same_inputs(first: Consumption, again: Consumption) -> bool:
    """`run_svgd(key, init_batch)`, then `run_langevin(key, init_batch)`: two procedures handed the
    same key and the same other inputs, as written: methods compared on common random numbers, so
    that their results differ only by the method. Draws made here (`jax.random.normal(key, shape)`
    twice) are never such a comparison."""
    if first.direct or again.direct or first.where is not None or again.where is not None:
        return False
    one, other = first.node, again.node
    if len(one.args) < 2 or len(one.args) != len(other.args):
        return False
    code = cst.Module([]).code_for_node
    if code(one.func) == code(other.func):
        return False  # the same function again: `same_run_again` decides
    return all(_keyword(a) == _keyword(b) and a.star == b.star and code(a.value) == code(b.value)
               for a, b in zip(one.args, other.args))


def _keyword(arg: cst.Arg) -> str | None:
    return arg.keyword.value if arg.keyword is not None else None


def over_mapping_values(loop: cst.CSTNode | None) -> bool:
    """`for name, x in batch.items()` / `for x in batch.values()`: a loop over the arrays of one
    structure, as a tree map goes over its leaves (never a loop over epochs or steps)."""
    return isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and not loop.iter.args \
        and isinstance(loop.iter.func, cst.Attribute) and loop.iter.func.attr.value in ("items", "values")


def discarded_call(value: cst.BaseExpression) -> cst.Call | None:
    """The call whose result an expression statement throws away, also when it only waits for it:
    `f(x)`, `f(x).block_until_ready()`, `jax.block_until_ready(f(x))`."""
    if not isinstance(value, cst.Call):
        return None
    if last_name(value.func) == "block_until_ready":
        if isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Call) and not value.args:
            return value.func.value
        if len(value.args) == 1 and isinstance(value.args[0].value, cst.Call):
            return value.args[0].value
    return value


def drawn_by(consumption: Consumption) -> Consumption:
    """The `jax.random` draw at the end of a consumption through functions of the module."""
    while consumption.via is not None:
        consumption = consumption.via
    return consumption


def index_draw_arguments(draw: Consumption) -> tuple[str | None, dict[str, str]] | None:
    """The source of the array an index draw is made from, and of its other parameters (defaults
    filled in); None when a `*args`/`**kwargs` hides them, or a `choice` is weighted by `p`."""
    parameters, population = ALIGNING_DRAWS[draw.draw]
    names = [name for name, _ in parameters]
    code = cst.Module([]).code_for_node
    given: dict[str, str] = {}
    for index, arg in enumerate(draw.node.args[1:]):
        if arg.star:
            return None
        name = arg.keyword.value if arg.keyword is not None else (names[index] if index < len(names) else None)
        if name is None:
            return None
        given[name] = "".join(code(arg.value).split())
    if given.get("p", "None") != "None":
        return None
    shaping = {name: given.get(name, default) for name, default in parameters if name != population}
    return (given.get(population) if population else None), shaping


def index_draws(within: cst.CSTNode) -> set[int]:
    """The calls in a function (or module) whose result indexes an array: written in a subscript
    (`x[jax.random.randint(...)]`), given as the indices of `jnp.take`/`lax.dynamic_slice`, or bound to
    a name used so. Asked only for an index draw that would otherwise be reported: a rare walk."""
    from ...syntax.walk import walk

    assigned: dict[str, list[int]] = {}
    index_expressions: list[cst.CSTNode] = []

    def enter(node: cst.CSTNode, field: str) -> bool:
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name \
                and isinstance(node.value, cst.Call):
            assigned.setdefault(node.targets[0].target.value, []).append(id(node.value))
        elif type(node) is cst.Subscript:
            index_expressions.extend(element.slice for element in node.slice)
        elif type(node) is cst.Call and last_name(node.func) in INDEXING_CALLS:
            # `jnp.take(x, idx)` and `x.take(idx)` alike: every argument is taken as an index
            index_expressions.extend(arg.value for arg in node.args)
        return True

    walk(within, enter, None)
    found: set[int] = set()

    def mark(node: cst.CSTNode, field: str) -> bool:
        if isinstance(node, cst.Call):
            found.add(id(node))
        elif isinstance(node, cst.Name):
            found.update(assigned.get(node.value, ()))
        return True

    for expression in index_expressions:
        walk(expression, mark, None)
    return found


def is_test_file(path: str | None) -> bool:
    """`test_*.py`, `*_test.py`, `conftest.py`: where fixed seeds and shared keys are deliberate."""
    if not path:
        return False
    return TEST_FILE.search(path.replace("\\", "/").rsplit("/", 1)[-1]) is not None


def in_test_function(scope: Scope | None) -> bool:
    """Whether a scope is, or is nested in, a function named `test*`."""
    while scope is not None:
        node = scope.node
        if type(node) is cst.FunctionDef and node.name.value.startswith("test"):
            return True
        scope = scope.parent
    return False
