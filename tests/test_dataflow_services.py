"""What the interpreter offers a domain beyond values: comprehensions run as loops, expression-level
branches (`alternatives`), a function applied in place once per element (`apply_in_place`), the
`bound` and `returning` hooks, the statement being interpreted, and `del` unbinding — pinned with
the literal-sets domain of `test_dataflow`."""
import textwrap

import libcst as cst

from jaxlint.dataflow import FlowInterpreter

from test_dataflow import EMPTY, Literals, names


class Services(Literals):
    """`apply(f)` applies the module's `def f` in place (its own names: its parameters and `q`);
    `mark("n")` adds "marked" to what `n` holds; `where()` emits the loops around it and the
    statement it is in; `a if t else b` and `a or b` are branches."""

    def __init__(self, module):
        self.functions = {n.name.value: n for n in module.body if isinstance(n, cst.FunctionDef)}

    def evaluate(self, node, flow):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            called = node.func.value
            if called == "apply":
                function = self.functions[node.args[0].value.value]
                own = [p.name.value for p in function.params.params] + ["q"]
                flow.apply_in_place(node, function, own)
                return EMPTY
            if called == "mark":
                name = node.args[0].value.raw_value
                flow.env[name] = flow.env.get(name, EMPTY) | {"marked"}
                return EMPTY
            if called == "where":
                flow.emit((tuple(type(loop).__name__ for loop in flow.loops),
                           type(flow.current_statement).__name__))
                return EMPTY
        if isinstance(node, cst.IfExp):
            flow.eval(node.test)
            body, orelse = flow.alternatives(node.body, node.orelse)
            return body | orelse
        if isinstance(node, cst.BooleanOperation):
            left = flow.eval(node.left)
            (right, _) = flow.alternatives(node.right, None)
            return left | right
        return super().evaluate(node, flow)


def run(source, domain_class=Services):
    module = cst.parse_module(textwrap.dedent(source))
    domain = domain_class(module)
    return module, domain, FlowInterpreter(domain).run(module)


def test_a_comprehension_runs_as_a_loop_so_the_next_element_sees_what_one_left():
    module, _, result = run("""
        x = "a"
        ys = [g(x, (x := "b")) for _ in items]
    """)
    read = names(module, "x")[1]
    assert result.value_at(read) == {'"a"', '"b"'}  # the second element reads the first's `:=`
    assert result.exit["x"] == {'"a"', '"b"'}  # no element at all leaves it as it was
    assert "_" not in result.exit


def test_a_comprehension_variable_shadows_without_rebinding_the_enclosing_name():
    module, _, result = run("""
        x = "outer"
        ys = [x for x in "ab"]
    """)
    assert result.exit["x"] == {'"outer"'}
    assert result.value_at(names(module, "x")[1]) == {'"ab"'}


def test_loops_name_the_for_the_comprehension_and_the_applied_call_around_the_code():
    _, _, result = run("""
        def f(p):
            where()

        for i in items:
            ys = [where() for _ in items]
            apply(f)
        where()
    """)
    # (the loop bodies run more than once: the effects repeat)
    assert set(result.effects) == {(("For", "ListComp"), "Assign"), (("For", "Call"), "Expr"), ((), "Expr")}


def test_alternatives_join_the_branches_and_the_path_that_evaluates_nothing():
    _, _, result = run("""
        a = (x := "1") if c else (x := "2")
        b = c or (y := "3")
    """)
    assert result.exit["x"] == {'"1"', '"2"'}
    assert result.exit["y"] == {'"3"'}  # unbound on the path where `c` was true: nothing added


def test_a_function_applied_in_place_sees_what_the_previous_application_left():
    module, _, result = run("""
        k = "1"
        p = "caller"

        def step(p):
            seen(k)
            mark("k")
            q = "local"
            return p

        apply(step)
    """)
    read = names(module, "k")[1]
    assert result.value_at(read) == {'"1"', "marked"}
    assert result.exit["k"] == {'"1"', "marked"}
    assert result.exit["p"] == {'"caller"'}  # the function's parameter is not the caller's name
    assert "q" not in result.exit
    assert result.returned is None  # its `return` ends one application, not the caller


class Bindings(Services):
    """Records (name, type of the binding node) for each binding, and what each `return` leaves with."""

    def __init__(self, module):
        super().__init__(module)
        self.log = []

    def bound(self, name, value, target, flow):
        self.log.append((name, type(target).__name__ if target is not None else None))
        return value | {"bound"}

    def returning(self, node, value, flow):
        self.log.append(("return", type(node).__name__, sorted(value or ()), flow.unreachable))


def test_bound_gets_the_node_that_binds_and_says_what_the_name_holds():
    _, domain, result = run("""
        import os.path as p
        from m import q
        x = "1"
        x += "2"
        (a, *b) = c
        with m() as w:
            pass
        try:
            pass
        except E as e:
            pass
        def f():
            pass
        class C:
            pass
        match v:
            case [h, *t]:
                pass
        del x
    """, Bindings)
    assert domain.log == [
        ("p", "ImportAlias"), ("q", "ImportAlias"), ("x", "Name"), ("x", "Name"), ("a", "Name"), ("b", "Name"),
        ("w", "Name"), ("e", "ExceptHandler"), ("f", "FunctionDef"), ("C", "ClassDef"),
        ("h", "MatchAs"), ("t", "MatchStar"), ("x", "Name"),
    ]
    assert result.exit["w"] == {"opaque", "bound"}
    assert result.exit["x"] == {"opaque", "bound"}  # `del x` unbinds it: what a deleted name holds is opaque


def test_returning_sees_every_return_and_a_lambda_body():
    module = cst.parse_module(textwrap.dedent("""
        def f(c):
            if c:
                return "1"
            raise E
            return "2"
    """))
    domain = Bindings(module)
    FlowInterpreter(domain).run(module.body[0])
    assert domain.log == [("return", "Return", ['"1"'], False), ("return", "Return", ['"2"'], True)]
    lam = cst.parse_expression('lambda: "3"')
    domain = Bindings(module)
    FlowInterpreter(domain).run(lam)
    assert domain.log == [("return", "SimpleString", ['"3"'], False)]


class Trail(Literals):
    """The path state is the set of `note("…")` calls made on the path; `unbound` logs what it is asked."""

    def __init__(self):
        self.asked = []
        self.path_joins = 0

    def unbound(self, name):
        self.asked.append(name)
        return EMPTY

    def join_path(self, a, b):
        self.path_joins += 1
        return a | b

    def evaluate(self, node, flow):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "note":
            flow.path_state = flow.path_state | {node.args[0].value.raw_value}
            return EMPTY
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "seen":
            flow.emit(sorted(flow.path_state))
            return EMPTY
        return super().evaluate(node, flow)


def test_the_path_state_is_copied_at_branches_joined_where_paths_meet_and_ends_with_its_path():
    module = cst.parse_module(textwrap.dedent("""
        def f(c, xs):
            note("a")
            if c:
                note("b")
                return
            else:
                note("c")
            try:
                note("d")
                risky()
            except E:
                seen()
            for x in xs:
                seen()
                note("e")
            seen()
    """))
    domain = Trail()
    result = FlowInterpreter(domain).run(module.body[0], path_state=frozenset())
    seen = [effect for effect in result.effects if isinstance(effect, list)]  # (calls emit their names too)
    handler, loop_first, loop_last, after = seen[0], seen[1], seen[-2], seen[-1]
    assert handler == ["a", "c", "d"]  # the handler starts where the `try` body may have left
    assert loop_first == ["a", "c", "d"] and loop_last == ["a", "c", "d", "e"]  # round the loop
    assert after == ["a", "c", "d", "e"]
    assert result.exit_path_state == {"a", "c", "d", "e"}  # not "b": that path returned
    assert domain.path_joins > 0
    assert all(not name.startswith("<") for name in domain.asked)  # never asked as a name
