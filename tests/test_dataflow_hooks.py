"""The interpreter's optional hooks (what Python does implicitly at a statement) and the state a
`while` loop is left in, pinned with a toy domain that records what it is told, in order."""
import textwrap

import libcst as cst

from jaxlint.dataflow import FlowInterpreter

from test_dataflow import Literals


class Recorder(Literals):
    """The literal-sets domain of `test_dataflow`, whose hooks append what they are told to `log`."""

    def __init__(self, hooks=True):
        self.log = []
        if not hooks:
            self.truth = self.store = self.exit_with = self.enter_handler = None

    # -- hooks
    def truth(self, test, value, flow):
        self.log.append(("truth", cst.Module([]).code_for_node(test), value))

    def store(self, target, value, flow):
        self.log.append(("store", cst.Module([]).code_for_node(target), value))

    def exit_with(self, node, flow):
        self.log.append(("exit_with", sorted(flow.env.get("x", ()))))

    def enter_handler(self, node, handler, flow):
        self.log.append(("enter_handler", sorted(flow.env.get("x", ()))))


def run(source, domain=None):
    domain = domain or Recorder()
    module = cst.parse_module(textwrap.dedent(source))
    return domain, FlowInterpreter(domain).run(module)


def test_tests_are_reported_with_their_values():
    domain, _ = run("""
        x = 1
        if x:
            pass
        elif "a":
            pass
        while x:
            x = 2
        assert x
        ys = [y for y in (3,) if y]
        match x:
            case _:
                pass
    """)
    tests = [(entry[1], sorted(entry[2])) for entry in domain.log if entry[0] == "truth"]
    assert tests[:2] == [("x", ["1"]), ('"a"', ['"a"'])]
    assert ("x", ["1", "2"]) in tests  # the while test at the loop head sees both
    assert ("y", ["3"]) in tests
    assert tests[-1] == ("x", ["1", "2"])  # the match subject


def test_stores_into_objects_get_the_stored_value():
    domain, _ = run("""
        obj.attr = 1
        table["k"] = "v"
    """)
    assert domain.log == [("store", "obj.attr", frozenset({"1"})), ("store", 'table["k"]', frozenset({'"v"'}))]


def test_with_exit_runs_after_the_body_on_the_normal_path_only():
    domain, _ = run("""
        x = 1
        with manager():
            x = 2
        with manager():
            x = 3
            raise E
    """)
    assert domain.log == [("exit_with", ["2"])]


def test_handlers_start_in_the_state_the_exception_left():
    domain, _ = run("""
        x = 1
        try:
            x = 2
            risky()
        except E:
            pass
    """)
    assert domain.log == [("enter_handler", ["1", "2"])]


def test_a_while_loop_is_left_after_its_test():
    _, result = run("""
        x = 0
        while (y := x):
            raise StopIteration
    """)
    # the walrus in the test binds on the way out (the body never comes back to the head)
    assert result.exit["y"] == {"0"}


def test_a_while_loop_without_a_fixed_point_is_left_after_its_last_test():
    from jaxlint.dataflow.interpreter import MAX_LOOP_PASSES

    body = "\n".join(f"    x{i + 1} = x{i}" for i in range(MAX_LOOP_PASSES + 2))
    _, result = run(f"x0 = 1\nwhile (y := x{MAX_LOOP_PASSES + 2}):\n{body}\n")
    assert "y" in result.exit


def test_without_hooks_targets_are_read_and_nothing_is_reported():
    domain, result = run("""
        obj.attr = 1
        if x:
            pass
    """, Recorder(hooks=False))
    assert domain.log == []
    assert result.exit is not None


class Iterating(Literals):
    """Takes every `for` loop to run its body at least once."""

    def iterates(self, node):
        return True


def test_a_for_loop_taken_to_iterate_is_left_in_the_state_after_its_body():
    source = """
        x = 1
        for item in items:
            x = 2
    """
    _, kept = run(source, Literals())
    _, iterated = run(source, Iterating())
    assert sorted(kept.exit["x"]) == ["1", "2"]  # the path that skips the body is kept
    assert sorted(iterated.exit["x"]) == ["2"]


def test_a_loop_taken_to_iterate_still_joins_its_breaks_and_else():
    _, result = run("""
        x = 1
        for item in items:
            if item:
                x = 3
                break
            x = 2
        else:
            x = 4
    """, Iterating())
    assert sorted(result.exit["x"]) == ["3", "4"]


class Statements(Literals):
    """Records each statement entered and left, and the values of `x` at each."""

    def __init__(self):
        self.log = []

    def enter_statement(self, node, flow):
        self.log.append(("enter", cst.Module([]).code_for_node(node).strip().split("\n")[0],
                         sorted(flow.env.get("x", ()))))

    def leave_statement(self, node, flow):
        self.log.append(("leave", cst.Module([]).code_for_node(node).strip().split("\n")[0],
                         sorted(flow.env.get("x", ()))))


def test_statements_are_entered_and_left_in_order_on_the_paths_that_go_on():
    domain, _ = run("""
        x = 1
        def f():
            return 3
        if x:
            x = 2
            raise E
        x = 4
    """, Statements())
    assert domain.log == [
        ("enter", "x = 1", []), ("leave", "x = 1", ["1"]),
        ("enter", "def f():", ["1"]), ("leave", "def f():", ["1"]),  # its body is not run here
        ("enter", "if x:", ["1"]),
        ("enter", "x = 2", ["1"]), ("leave", "x = 2", ["2"]),
        ("enter", "raise E", ["2"]),  # no path goes on after it: never left
        ("leave", "if x:", ["1"]),  # the path that skips the branch goes on
        ("enter", "x = 4", ["1"]), ("leave", "x = 4", ["4"]),
    ]


def test_a_body_on_its_compound_statements_line_runs():
    domain, result = run("""
        x = 1
        for i in (2,): x = 2
        if x: y = 3
        while x: x = 4; break
        def f(): return 5
        with open(p): z = 6
    """, Statements())
    assert sorted(result.exit["x"]) == ["1", "2", "4"] and sorted(result.exit["y"]) == ["3"]
    assert sorted(result.exit["z"]) == ["6"]
    assert ("enter", "x = 4; break", ["1", "2"]) in domain.log
