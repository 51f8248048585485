"""The control-flow semantics of the generic interpreter, pinned with a toy domain.

The toy domain's value is the set of literals an expression may hold (a join is a union), so every
test reads "which assignments can reach this point" — independently of JAX.
"""
import textwrap

import libcst as cst

from jaxlint.dataflow import FlowInterpreter, SettledSummaries, Summaries
from jaxlint.dataflow.interpreter import MAX_LOOP_PASSES

EMPTY = frozenset()


class Literals:
    """Values are frozensets of the literal texts (and opaque markers) an expression may hold."""

    reads_closures = True

    def join(self, a, b):
        return a | b

    def unbound(self, name):
        return EMPTY

    def opaque(self, node):
        return frozenset({"opaque"})

    def function(self, node):
        return frozenset({"function"})

    def evaluate(self, node, flow):
        if isinstance(node, (cst.Integer, cst.SimpleString)):
            return frozenset({node.value})
        if isinstance(node, cst.Call):
            found = EMPTY
            for arg in node.args:
                found |= flow.eval(arg.value)
            if isinstance(node.func, cst.Name):
                flow.emit(node.func.value)  # a call happens once its arguments are evaluated
            return found
        found = EMPTY
        for child in _below(node):
            found |= flow.eval(child)
        return found

    def comprehension(self, node, elements):
        return frozenset().union(*elements)

    def iterate(self, target, iterable, value, flow):
        flow.bind(target, value)

    def unpack(self, value, count, starred):
        return [value] * count

    def augmented(self, current, operand, operator):
        return current | operand

    def assigned(self, name, value, source):
        pass


def _below(node):
    from jaxlint.dataflow.interpreter import expressions_below
    return expressions_below(node)


def run(source, entry=None):
    module = cst.parse_module(textwrap.dedent(source))
    return module, FlowInterpreter(Literals()).run(module, entry)


def function(source):
    module = cst.parse_module(textwrap.dedent(source))
    node = next(n for n in module.body if isinstance(n, cst.FunctionDef))
    return node, FlowInterpreter(Literals()).run(node)


def names(module, name):
    """Every Name node spelling `name`, in source order."""
    found = []

    class Collect(cst.CSTVisitor):
        def visit_Name(self, node):
            if node.value == name:
                found.append(node)

    module.visit(Collect())
    return found


def test_if_else_joins_both_branches():
    _, result = run("""
        if c:
            x = 1
        else:
            x = 2
    """)
    assert result.exit["x"] == {"1", "2"}


def test_if_without_else_joins_with_the_state_before():
    _, result = run("""
        x = 0
        if c:
            x = 1
        elif d:
            x = 2
    """)
    assert result.exit["x"] == {"0", "1", "2"}


def test_return_ends_its_path_and_returned_is_the_join():
    node, result = function("""
        def f(c):
            if c:
                x = 1
                return x
            x = 2
            return x
            x = 3
            return x
    """)
    assert result.returned == {"1", "2"}  # the unreachable `return` adds nothing
    assert result.exit is None
    dead = node.body.body[-2].body[0]
    assert result.value_at(dead.value) == {"3"}  # but rules still get values for unreachable code
    assert result.value_at(node.body.body[-1].body[0].value) == {"3"}


def test_returned_is_none_when_no_value_is_returned():
    _, result = function("""
        def f(c):
            if c:
                return
            x = 1
    """)
    assert result.returned is None
    assert result.exit["x"] == {"1"}


def test_loop_body_sees_values_carried_round_the_loop():
    module, result = run("""
        x = 0
        while c:
            y = x
            x = 1
    """)
    read = names(module, "x")[1]  # `y = x`
    assert result.value_at(read) == {"0", "1"}
    assert result.exit["x"] == {"0", "1"}
    assert result.exit["y"] == {"0", "1"}


def test_break_and_continue_paths_reach_the_right_places():
    _, result = run("""
        x = 0
        for i in xs:
            if c:
                x = 1
                break
            if d:
                x = 2
                continue
            x = 3
    """)
    assert result.exit["x"] == {"0", "1", "2", "3"}

    _, result = run("""
        x = 0
        for i in xs:
            if c:
                x = 1
                continue
            y = x
            x = 2
    """)
    assert result.exit["y"] == {"0", "1", "2"}  # the `continue` state goes round the loop


def test_while_true_is_left_only_through_break():
    _, result = run("""
        x = 0
        while True:
            x = 1
            if c:
                break
            x = 2
    """)
    assert result.exit["x"] == {"1"}


def test_loop_else_runs_on_the_normal_exit_only():
    _, result = run("""
        for i in xs:
            if c:
                found = 1
                break
        else:
            found = 2
    """)
    assert result.exit["found"] == {"1", "2"}


def test_loop_fixed_point_is_bounded():
    class Growing(Literals):
        def augmented(self, current, operand, operator):
            return current | {str(len(current))}

    module = cst.parse_module("x = 0\nwhile c:\n    x += 1\n")
    result = FlowInterpreter(Growing()).run(module)
    assert len(result.exit["x"]) <= MAX_LOOP_PASSES + 1


def test_handlers_start_from_the_join_of_the_try_body_states():
    _, result = run("""
        x = 0
        try:
            x = 1
            x = 2
        except ValueError as error:
            y = x
        else:
            z = x
    """)
    assert result.exit["y"] == {"0", "1", "2"}  # the handler may start before any statement ran
    assert result.exit["z"] == {"2"}
    assert result.exit["error"] == {"opaque"}
    assert result.exit["x"] == {"0", "1", "2"}


def test_else_runs_from_the_end_of_the_try_body():
    _, result = run("""
        try:
            x = 1
        except ValueError:
            x = 2
        else:
            y = x
    """)
    assert result.exit["y"] == {"1"}
    assert result.exit["x"] == {"1", "2"}


def test_finally_runs_after_a_return_and_the_path_still_ends():
    node, result = function("""
        def f():
            try:
                return 1
            finally:
                cleanup = 5
    """)
    assert result.returned == {"1"}
    assert result.exit is None
    finally_value = node.body.body[0].finalbody.body.body[0].body[0].value
    assert result.value_at(finally_value) == {"5"}


def test_raise_ends_the_path():
    _, result = function("""
        def f(c):
            x = 1
            if c:
                x = 2
                raise ValueError(x)
            return x
    """)
    assert result.returned == {"1"}


def test_comprehension_variables_stay_in_their_scope_but_walrus_escapes():
    _, result = run("""
        i = 0
        ys = [i for i in (1, 2)]
        zs = [(last := v) for v in (3,)]
        after = i
    """)
    assert result.exit["after"] == {"0"}
    assert result.exit["ys"] == {"1", "2"}
    assert "v" not in result.exit
    assert result.exit["last"] == {"3"}


def test_walrus_binds_in_a_condition():
    _, result = run("""
        if (n := 3):
            m = n
    """)
    assert result.exit["m"] == {"3"}


def test_closures_record_the_state_where_a_function_is_defined():
    module, result = run("""
        x = 1
        def f():
            return x
        g = lambda: x
        x = 2
    """)
    f = module.body[1]
    g = module.body[2].body[0].value
    assert result.closures[id(f)]["x"] == {"1"}
    assert result.closures[id(g)]["x"] == {"1"}
    assert result.exit["f"] == {"function"}
    assert result.exit["x"] == {"2"}


def test_a_domain_that_reads_no_closures_gets_no_copy_of_the_state_per_function():
    class NoClosures(Literals):
        reads_closures = False

    source = "x = 1\n" + "".join(f"def f{i}():\n    return x\n" for i in range(50))
    result = FlowInterpreter(NoClosures()).run(cst.parse_module(source))
    assert result.closures == {}
    assert result.exit["f49"] == {"function"} and result.exit["x"] == {"1"}


def test_match_joins_cases_and_the_no_match_path():
    _, result = run("""
        x = 0
        match v:
            case 1:
                x = 1
            case [a, *rest]:
                x = 2
    """)
    assert result.exit["x"] == {"0", "1", "2"}
    assert result.exit["rest"] == {"opaque"}  # bound on one path only

    _, result = run("""
        x = 0
        match v:
            case 1:
                x = 1
            case _:
                x = 2
    """)
    assert result.exit["x"] == {"1", "2"}  # a wildcard case: no path skips every case


def test_with_binds_its_target_and_runs_its_body():
    _, result = run("""
        with open(p) as handle:
            x = 1
    """)
    assert result.exit["handle"] == {"opaque"}
    assert result.exit["x"] == {"1"}


def test_tuple_targets_take_their_own_elements_from_a_tuple_display():
    _, result = run("a, b = 1, 2")
    assert result.exit["a"] == {"1"} and result.exit["b"] == {"2"}


def test_effects_are_ordered_as_evaluated():
    _, result = run("""
        first()
        if c:
            second()
        third(fourth())
    """)
    assert result.effects == ["first", "second", "fourth", "third"]


def test_summaries_are_memoised_by_signature_and_cut_recursion():
    module = cst.parse_module(textwrap.dedent("""
        def f(n):
            return f(n)
    """))
    f = module.body[0]
    seen = []

    def compute(function, signature):
        seen.append(signature)
        inner = summaries.get(function, signature)  # recursion: cut to unknown
        return ("summary", signature, inner)

    summaries = Summaries(compute, unknown="unknown")
    first = summaries.get(f, ("int",))
    assert first == ("summary", ("int",), "unknown")
    assert summaries.get(f, ("int",)) is first
    assert seen == [("int",)]
    summaries.get(f, ("float",))
    assert seen == [("int",), ("float",)]
    assert summaries.computed == 2


def test_settled_summaries_rerun_only_the_readers_of_a_summary_that_changed():
    module = cst.parse_module(textwrap.dedent("""
        def a():
            b()

        def b():
            c()

        def c():
            mark()

        def alone():
            pass

        def ping():
            pong()

        def pong():
            ping()
            mark()
    """))
    functions = {f.name.value: f for f in module.body}
    runs = []

    def analyse(function):
        """The names of the functions a call chain from `function` reaches `mark()` through."""
        runs.append(function.name.value)
        found = frozenset()
        for statement in function.body.body:
            call = statement.body[0]
            if not isinstance(call, cst.Expr):
                continue
            name = call.value.func.value
            if name == "mark":
                found |= {function.name.value}
            elif settled.read(functions[name]):
                found |= {function.name.value} | settled.read(functions[name])
        return found

    settled = SettledSummaries(analyse, frozenset(), max_runs=4)
    settled.solve(functions.values())
    assert settled.get(functions["a"]) == {"a", "b", "c"}  # its helpers are defined after it
    assert settled.get(functions["alone"]) == frozenset()
    assert settled.get(functions["ping"]) == {"ping", "pong"}  # mutual recursion settles
    # a and b run again once each, as c's and then b's summary change; `alone` reads nothing
    assert runs.count("a") == 2 and runs.count("b") == 2 and runs.count("c") == 1 and runs.count("alone") == 1
    assert settled.runs == len(runs)


def test_settled_summaries_bound_the_runs_of_a_function():
    module = cst.parse_module("def f():\n    f()\n")
    f = module.body[0]
    count = []

    def analyse(function):
        count.append(1)
        return len(count) + settled.read(function)  # changes every time it is read

    settled = SettledSummaries(analyse, 0, max_runs=3)
    settled.solve([f])
    assert len(count) == 3


def test_unreachable_code_changes_no_live_path():
    module, result = run("""
        x = 0
        for i in xs:
            x = 1
            continue
            x = 2
            break
        while True:
            pass
        y = x
    """)
    assert result.exit is None  # nothing leaves `while True:` without a break
    y_value = module.body[-1].body[0].value
    assert result.value_at(y_value) == {"0", "1"}  # the dead `x = 2` and `break` reach nothing


def test_a_star_import_may_rebind_every_name_bound_before_it():
    """Which names `from m import *` binds is not in the code: those bound before may be rebound
    (as an import binds them), those bound after it are not."""
    _, result = run("""
        x = 1
        from m import *
        y = 2
    """)
    assert result.exit["x"] == {"opaque"}
    assert result.exit["y"] == {"2"}
    assert "z" not in result.exit
