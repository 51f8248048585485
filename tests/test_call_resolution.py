"""Which function a call reaches, what each parameter receives, and how far a trace propagates."""
import textwrap

import libcst as cst
import pytest

from jaxlint.model.settings import Settings
from jaxlint.analysis import FileAnalysis
from jaxlint.semantic.source_file import SourceFile
from jaxlint.engine.checker import check_source, enabled_rules
from jaxlint.syntax.arguments import Passing, bind_arguments

from conftest import FIXTURES, expectations


def lint_source(source: str, settings: Settings):
    return check_source(source, "t.py", settings, enabled_rules(settings, "t.py"))


def function(source: str) -> cst.FunctionDef:
    return cst.parse_module(textwrap.dedent(source)).body[0]


def call_args(source: str) -> list[cst.Arg]:
    return list(cst.parse_expression(source).args)


def shown(bound) -> dict[str, tuple[str, list[str], list[str]]]:
    code = cst.Module([]).code_for_node
    return {name: (p.how.value, [code(v) for v in p.values], [code(s) for s in p.spread])
            for name, p in bound.items()}


# -- the argument binder ---------------------------------------------------------------------------
def test_positional_keyword_and_defaults():
    f = function("def f(a, b, c=1, *, d, e=2): ...")
    bound = shown(bind_arguments(f, call_args("f(x, y, d=z)")))
    assert bound == {"a": ("argument", ["x"], []), "b": ("argument", ["y"], []), "d": ("argument", ["z"], [])}


def test_extra_arguments_are_packed():
    f = function("def f(a, *args, **kwargs): ...")
    bound = shown(bind_arguments(f, call_args("f(x, y, z, k=w)")))
    assert bound["a"] == ("argument", ["x"], [])
    assert bound["args"] == ("packed", ["y", "z"], [])
    assert bound["kwargs"] == ("packed", ["w"], [])


def test_starred_arguments_reach_unknown_positions():
    f = function("def f(a, b, c=0, *rest): ...")
    bound = shown(bind_arguments(f, call_args("f(x, *xs, y)")))
    assert bound["a"] == ("argument", ["x"], [])
    # `b` gets an element of `xs` or `y`; `c` has a default, so whether it is passed is unknown
    assert bound["b"] == ("spread", ["y"], ["xs"])
    assert "c" not in bound
    assert bound["rest"] == ("packed", ["y"], ["xs"])


def test_double_starred_reaches_keywords_without_defaults():
    f = function("def f(a, *, lr, b1=0.9, **extra): ...")
    bound = shown(bind_arguments(f, call_args("f(x, **opts)")))
    assert bound["lr"] == ("spread", [], ["opts"])
    assert "b1" not in bound
    assert bound["extra"] == ("packed", [], ["opts"])


def test_partial_and_receiver_take_the_first_positions():
    f = function("def f(self, a, b, axis_name=None): ...")
    bound = bind_arguments(f, call_args("g(y)"), bound_positional=1, bound_keywords={"axis_name"}, receiver=True)
    assert {name: p.how for name, p in bound.items()} == {
        "self": Passing.RECEIVER, "a": Passing.BOUND, "b": Passing.ARGUMENT, "axis_name": Passing.BOUND}


def test_positional_only_names_go_to_kwargs():
    f = function("def f(a, /, **kw): ...")
    bound = shown(bind_arguments(f, call_args("f(x, a=y)")))
    assert bound == {"a": ("argument", ["x"], []), "kw": ("packed", ["y"], [])}


# -- which function a call reaches ----------------------------------------------------------------
def callee_names(source: str) -> dict[str, str | None]:
    """`name of the called expression as written` -> `name of the function reached (or None)`."""
    source = textwrap.dedent(source)
    module = cst.parse_module(source)
    ctx = FileAnalysis(SourceFile("t.py", source, module, Settings()))
    traced = ctx.traced
    code = module.code_for_node
    found = traced.callees
    result = {}

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node):
            callee = found.get(id(node))
            name = None if callee is None else callee.function.name.value
            result[code(node.func)] = name

    module.visit(Calls())
    return result


def test_methods_reached_through_self_class_and_instances():
    names = callee_names('''
        class Base:
            def clip(self, g): return g

        class Agent(Base):
            @staticmethod
            def norm(x): return x
            @classmethod
            def make(cls): return cls()
            def __call__(self, x): return self.clip(x)
            def act(self, x): return self.norm(x) + Agent.norm(x) + self(x)

        agent = Agent()

        def use(x):
            return agent.act(x) + agent(x) + Agent.make() + Agent.act(agent, x)
    ''')
    assert names["self.clip"] == "clip"
    assert names["self.norm"] == "norm"
    assert names["Agent.norm"] == "norm"
    assert names["self"] == "__call__"
    assert names["agent.act"] == "act"
    assert names["agent"] == "__call__"
    assert names["Agent.make"] == "make"
    assert names["Agent.act"] == "act"


def test_ambiguous_or_unknown_targets_resolve_to_nothing():
    names = callee_names('''
        import flax.linen as nn

        class Base:
            def score(self, x): return x
            def run(self, x): return self.score(x)
            @property
            def size(self): return 3
            def fit(self, x): return self.size(x)

        class Child(Base):
            def score(self, x): return -x

        class Model(nn.Module):
            def head(self, x): return self.apply(x) + self.helper(x)

        class Cached:
            def __init__(self):
                self.step = lambda x: x
            def step(self, x): return x
            def go(self, x): return self.step(x)

        a = Base()
        a = Child()

        def use(x, obj):
            return a.score(x) + obj.score(x)
    ''')
    assert names["self.score"] is None  # overridden in Child: which one runs is not known
    assert names["self.size"] is None  # a property
    assert names["self.apply"] is None and names["self.helper"] is None  # bases from elsewhere
    assert names["self.step"] is None  # an instance attribute hides the method
    assert names["a.score"] is None  # rebound to instances of two classes
    assert names["obj.score"] is None  # a parameter: its class is unknown


def test_framework_calls_reach_the_module_method_they_run():
    names = callee_names('''
        import flax.linen as nn
        import haiku as hk
        from flax import nnx

        class Gate(nn.Module):
            @nn.compact
            def __call__(self, x): return x
            def encode(self, x): return x

        class Plain:
            def apply(self, v, x): return x
            def __call__(self, x): return x

        class Block(hk.Module):
            def __call__(self, x): return x

        class MLP(nnx.Module):
            def __call__(self, x): return x

        @hk.without_apply_rng
        @hk.transform
        def forward(x):
            block = Block()
            return block(x) + Block()(x)

        gate = Gate()
        plain = Plain()

        def use(v, x, model: MLP, key):
            a = gate.apply(v, x, method=Gate.encode) + gate.init(key, x) + plain.apply(v, x)
            return a + model(x) + forward.apply(v, x) + gate.apply(v, x, method=lambda m, x: m.encode(x))

        def loss(model):
            return model.__call__(1)

        def step(model: MLP):
            return loss(model)
    ''')
    assert names["gate.apply"] is None  # `method=` given a function: not followed (the last call)
    assert names["gate.init"] == "__call__"
    assert names["plain.apply"] == "apply"  # not a Linen module: its own `apply`
    assert names["model"] == "__call__"  # annotated with a class of the module
    assert names["forward.apply"] == "forward"  # `@hk.transform`, under `without_apply_rng`
    assert names["block"] == "__call__"  # an instance of a class of the module
    assert names["Block()"] is None  # made on the spot and called: not followed
    assert names["model.__call__"] == "__call__"  # a parameter every call passes an `MLP`
    linen = callee_names('''
        import flax.linen as nn

        class Gate(nn.Module):
            def __call__(self, x): return x
            def encode(self, x): return x

        gate = Gate()

        def use(v, x):
            return gate.apply(v, x, method="encode") + gate.apply(v, x, method=Gate.encode) * 0

        def annotated(model: Gate, v, x):
            return model.apply(v, x)
    ''')
    assert linen["gate.apply"] == "encode"
    assert linen["model.apply"] == "__call__"  # a parameter annotated with the module's class


def test_partial_bindings_are_followed():
    names = callee_names('''
        import functools
        from functools import partial

        def allreduce(g, axis_name=None): return g
        sync = functools.partial(allreduce, axis_name="i")
        twice = partial(sync)

        def use(g):
            return sync(g) + twice(g) + partial(allreduce, axis_name="j")(g)
    ''')
    assert names["sync"] == "allreduce"
    assert names["twice"] == "allreduce"
    assert names['partial(allreduce, axis_name="j")'] == "allreduce"


# -- propagation -----------------------------------------------------------------------------------
def test_no_cap_loses_findings_in_big_files():
    """Hundreds of traced functions: the bug in the last one is still reported."""
    parts = ["import jax", "import jax.numpy as jnp", ""]
    for index in range(300):
        parts += ["@jax.jit", f"def step_{index}(x):", "    return jnp.sin(x) * 2", ""]
    parts += ["@jax.jit", "def last(x):", "    if x > 0:", "        return x", "    return -x", ""]
    source = "\n".join(parts)
    findings = lint_source(source, Settings())
    assert [(f.code, f.start.line) for f in findings] == [("JAX201", source.splitlines().index("    if x > 0:") + 1)]


def test_long_call_chains_are_followed_to_the_end():
    """Depth is no limit: a traced value passed down ten helpers still reaches the `if`."""
    parts = ["import jax", ""]
    for index in range(10):
        parts += [f"def helper_{index}(x):", f"    return helper_{index + 1}(x)", ""]
    parts += ["def helper_10(x):", "    if x > 0:", "        return x", "    return -x", ""]
    parts += ["@jax.jit", "def entry(x):", "    return helper_0(x)", ""]
    findings = lint_source("\n".join(parts), Settings())
    assert [f.code for f in findings] == ["JAX201"]


def test_each_function_is_analysed_again_only_when_its_inputs_grow(monkeypatch):
    from jaxlint.jaxmodel.traced import TracedFunctions

    source = textwrap.dedent('''
        import jax

        def helper(a, b):
            return a + b

        @jax.jit
        def one(x):
            return helper(x, 1) + helper(x, 2) + helper(x, 3)

        @jax.jit
        def two(x, y):
            return helper(x, y)
    ''')
    runs: dict[str, int] = {}
    original = TracedFunctions._traced_flow

    def counted(self, function, info, closure):
        runs[function.name.value] = runs.get(function.name.value, 0) + 1
        return original(self, function, info, closure)

    monkeypatch.setattr(TracedFunctions, "_traced_flow", counted)
    module = cst.parse_module(source)
    traced = FileAnalysis(SourceFile("t.py", source, module, Settings())).traced
    helper = module.body[1]
    assert traced.info(helper).traced_params == {"a", "b"}
    # both callers are analysed before the helper leaves the queue: it runs once, with both
    # parameters; the repeated calls from `one` add nothing
    assert runs == {"one": 1, "two": 1, "helper": 1}


@pytest.mark.parametrize("mapper", ["jax.tree.map", "jax.tree_util.tree_map", "jtu.tree_map", "tree_map"])
def test_every_tree_map_alias_traces_the_mapped_function(mapper):
    source = textwrap.dedent(f'''
        import jax
        import jax.tree_util as jtu
        from jax.tree_util import tree_map

        @jax.jit
        def f(tree):
            return {mapper}(lambda leaf: leaf if leaf > 0 else 0.0, tree)
    ''')
    assert [f.code for f in lint_source(source, Settings())] == ["JAX201"]


@pytest.mark.jax
def test_jax_raises_exactly_where_values_passed_through_star_parameters_are_reported():
    """The `*args`/`**kwargs` fixture, checked like the RUNTIME_CHECKS fixtures."""
    pytest.importorskip("jax")
    from test_jax_agreement import load, names, raised_at

    path = FIXTURES / "JAX201_packed_arguments.py"
    reported = {line for line, _ in expectations(path.read_text(encoding="utf-8"))}
    raising = set()
    for function, args, expected in load(path).PACKED_CHECKS:
        try:
            function(*args)
        except Exception as exc:  # noqa: BLE001 - any exception is evidence here
            assert expected is not None and expected in names(type(exc)), f"{function.__name__}: {exc!r}"
            raising.add(raised_at(exc, path))
        else:
            assert expected is None, f"{function.__name__} did not raise {expected}"
    assert raising == reported


def test_an_override_below_a_base_from_elsewhere_still_counts():
    names = callee_names('''
        import flax.linen as nn

        class Base:
            def score(self, x): return x
            def run(self, x): return self.score(x)

        class Middle(nn.Module, Base):
            pass

        class Leaf(Middle):
            def score(self, x): return -x
    ''')
    assert names["self.score"] is None
