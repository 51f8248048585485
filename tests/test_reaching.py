"""Which bindings reach a read of a name: joins, loops, `break`/`continue`, `return`, `try`."""
import textwrap

import libcst as cst
import pytest

from jaxlint.dataflow.reaching import scope_facts
from jaxlint.semantic.scopes import Scope

from conftest import recorded_scope


def reaching(source: str) -> dict[str, list[str]]:
    """probe name -> the values (as written) of the bindings that reach `probeN(x)` in `f`."""
    module = cst.parse_module(textwrap.dedent(source))
    function = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    facts = scope_facts(Scope(function, recorded_scope(module)))
    probes: dict[str, list[str]] = {}

    class Probes(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value.startswith("probe"):
                held = facts.reaching.get(id(node.args[0].value))
                probes[node.func.value] = None if held is None else sorted(
                    module.code_for_node(o.value) if o.value is not None else o.kind for o in held)

    module.visit(Probes())
    return probes


def test_a_rebinding_replaces_what_reaches_later_reads():
    found = reaching("""
        def f(board):
            probe1(board)
            board = jnp.asarray(board)
            probe2(board)
    """)
    assert found == {"probe1": ["param"], "probe2": ["jnp.asarray(board)"]}


def test_branches_join_and_a_returning_branch_does_not():
    found = reaching("""
        def f(c):
            x = np.zeros(3)
            if c:
                x = jnp.zeros(3)
            probe1(x)
            if c:
                y = np.zeros(3)
                return y
            else:
                y = jnp.zeros(3)
            probe2(y)
    """)
    assert found == {"probe1": ["jnp.zeros(3)", "np.zeros(3)"], "probe2": ["jnp.zeros(3)"]}


def test_a_loop_carries_its_last_binding_round_to_its_first_read():
    found = reaching("""
        def f(n):
            x = np.zeros(3)
            for i in range(n):
                probe1(x)
                x = jnp.asarray(x)
                probe2(x)
            probe3(x)
    """)
    assert found == {"probe1": ["jnp.asarray(x)", "np.zeros(3)"], "probe2": ["jnp.asarray(x)"],
                     "probe3": ["jnp.asarray(x)", "np.zeros(3)"]}


def test_break_and_continue_lead_where_python_goes():
    found = reaching("""
        def f(items):
            x = 0
            for item in items:
                probe1(x)
                if item:
                    x = 1
                    continue
                x = 2
                if x:
                    x = 3
                    break
            probe2(x)
    """)
    assert found == {"probe1": ["0", "1", "2"], "probe2": ["0", "1", "2", "3"]}


def test_while_true_is_left_through_break():
    found = reaching("""
        def f(items):
            x = 0
            while True:
                if items:
                    x = 1
                    break
                if not items:
                    x = 2
                    continue
                x = 3
            probe1(x)
    """)
    assert found["probe1"] == ["1"]  # `while True` is left only through its `break`


def test_a_handler_starts_from_any_state_of_its_try_body_and_finally_from_the_normal_ways_out():
    found = reaching("""
        def f(path):
            w = None
            try:
                w = np.load(path)
                w = jnp.asarray(w)
            except OSError:
                probe1(w)
                w = jnp.zeros(3)
            finally:
                probe2(w)
            probe3(w)
    """)
    assert found["probe1"] == ["None", "jnp.asarray(w)", "np.load(path)"]
    # the `try` body's end and the handler's: what an exception the handler does not catch leaves
    # in `w` is not what the code after the `try` sees, and rules judge the paths that go on
    assert found["probe2"] == ["jnp.asarray(w)", "jnp.zeros(3)"]
    assert found["probe3"] == ["jnp.asarray(w)", "jnp.zeros(3)"]


def test_reads_in_comprehensions_run_in_place_and_in_lambdas_are_not_recorded():
    found = reaching("""
        def f(xs):
            scale = [1.0]
            a = [probe1(scale) for _ in xs]
            g = lambda: probe2(scale)
            scale = jnp.asarray(scale)
            b = [probe3(x) for x in xs]
            return a, b, g
    """)
    assert found["probe1"] == ["[1.0]"]
    assert found["probe2"] is None  # runs whenever the lambda is called: every binding applies
    assert found["probe3"] is None  # `x` is the comprehension's own name


@pytest.mark.parametrize("source, expected", [
    ("def f():\n    x = 1\n    del x\n    probe1(x)\n", ["other"]),
    ("def f(x):\n    x += 1\n    probe1(x)\n", ["1", "param"]),
    ("def f():\n    probe1(x)\n    x = 1\n", []),
])
def test_deletion_augmentation_and_reads_before_any_binding(source, expected):
    assert reaching(source)["probe1"] == expected


def test_reads_in_a_generator_body_are_not_recorded_but_its_first_iterable_is():
    found = reaching("""
        def f(xs):
            scale = np.ones(3)
            g = (probe1(scale) for _ in probe2(scale))
            scale = jnp.asarray(scale)
            return g
    """)
    assert found["probe1"] is None  # runs when the generator is consumed: every binding applies
    assert found["probe2"] == ["np.ones(3)"]


def _facts(source: str):
    module = cst.parse_module(textwrap.dedent(source))
    function = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    return module, scope_facts(Scope(function, recorded_scope(module)))


def test_item_writes_keep_the_value_only_of_a_plain_assignment():
    module, facts = _facts("""
        def f(w):
            params = {"w": w}
            params["w"] = w * 2
            params["b"] += 1
            params["enc"]["k"], other = w, 0
            del params["w"]
            params.update(extra)
            init(params)
            return params
    """)
    writes = sorted((path, module.code_for_node(value) if value is not None else "")
                    for path, value in facts.item_writes["params"].values())
    assert writes == [(("b",), ""), (("enc", "k"), ""), (("w",), ""), (("w",), "w * 2")]
    assert facts.updated == {"params"}
    assert [module.code_for_node(call) for call in facts.passed["params"]] == ["init(params)"]
    assert [module.code_for_node(value) for value in facts.returns] == ["params"]
    assert not facts.falls_off and not facts.generator


def test_every_binding_has_one_origin_and_a_walrus_in_a_comprehension_adds_one_the_scope_does_not_show():
    _, facts = _facts("""
        def f(xs, *rest):
            import os
            a, *b = xs
            for i in xs:
                pass
            with open(p) as fh:
                pass
            match xs:
                case [head, *tail]:
                    pass
            ys = [(n := x) for x in xs]
            n = 0
            yield n
    """)
    kinds = {name: [o.kind for o in origins] for name, origins in facts.origins.items()}
    assert kinds == {"xs": ["param"], "rest": ["other"], "os": ["other"], "a": ["element"], "b": ["other"],
                     "i": ["iteration"], "fh": ["other"], "head": ["other"], "tail": ["other"], "ys": ["value"],
                     "n": ["value", "other"]}  # the `:=` in the comprehension: one more than the scope's one
    assert facts.generator


def consumed_reaching(source: str) -> dict[str, list[str]]:
    """Like `reaching`, with every call of `take` consuming the names it is given."""
    module = cst.parse_module(textwrap.dedent(source))
    function = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    calls: dict[int, tuple[str, ...]] = {}
    probes: dict[str, list[str]] = {}

    class Takes(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "take":
                calls[id(node)] = tuple(a.value.value for a in node.args if isinstance(a.value, cst.Name))

    module.visit(Takes())
    facts = scope_facts(Scope(function, recorded_scope(module)), calls)

    class Probes(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value.startswith("probe"):
                held = facts.reaching.get(id(node.args[0].value))
                probes[node.func.value] = sorted(o.kind for o in held)

    module.visit(Probes())
    return probes


def test_a_consuming_call_reaches_the_reads_after_it_until_the_name_is_bound_again():
    found = consumed_reaching("""
        def f(x, batches, c):
            y = take(x)
            probe1(x)
            x = y
            probe2(x)
            for b in batches:
                probe3(x)
                z = take(x)
            if c:
                take(x)
            probe4(x)
            x = take(x)
            probe5(x)
    """)
    assert found == {"probe1": ["consumed"], "probe2": ["value"], "probe3": ["consumed", "value"],
                     "probe4": ["consumed", "consumed", "value"], "probe5": ["value"]}
