"""The shared value flow: kinds of index expressions and of boolean-array operators."""
import textwrap

import libcst as cst

from jaxlint.model.settings import Settings
from jaxlint.analysis import FileAnalysis
from jaxlint.semantic.source_file import SourceFile
from jaxlint.jaxmodel.values import MAY, MUST, NO, Kind

SOURCE = textwrap.dedent('''
    import jax
    import jax.numpy as jnp

    TABLE = jnp.linspace(0.0, 1.0, 8)


    @jax.jit
    def f(x, i):
        picked = TABLE[i]
        sliced = TABLE[2:4]
        both = (x > 0) & (x < 1)
        either = (x > 0) | jnp.isnan(x)
        neither = ~both
        counted = (x > 0) & 1
        return picked, sliced, both, either, neither, counted
''')


def traced_function():
    module = cst.parse_module(SOURCE)
    ctx = FileAnalysis(SourceFile("t.py", SOURCE, module, Settings()))
    function = next(n for n in module.body if isinstance(n, cst.FunctionDef))
    return function, ctx.traced.flow(function)


def kinds_of_returned_names():
    function, flow = traced_function()
    returned = function.body.body[-1].body[0].value
    return {e.value.value: flow.kinds[id(e.value)] for e in returned.elements}


def test_names_read_in_an_index_have_their_kind():
    function, flow = traced_function()
    picked = function.body.body[0].body[0].value  # TABLE[i]
    index = picked.slice[0].slice.value
    assert flow.kinds.get(id(index)) == Kind.PARAM
    assert flow.loads.get(id(index)) == Kind.PARAM


def test_bitwise_operators_keep_boolean_arrays_boolean():
    kinds = kinds_of_returned_names()
    assert kinds["both"] == Kind.BOOL
    assert kinds["either"] == Kind.BOOL
    assert kinds["neither"] == Kind.BOOL
    assert kinds["counted"] == Kind.ARRAY  # bool & int is an integer array


def analysed(source):
    source = textwrap.dedent(source)
    module = cst.parse_module(source)
    ctx = FileAnalysis(SourceFile("t.py", source, module, Settings()))
    functions = {n.name.value: n for n in module.body if isinstance(n, cst.FunctionDef)}
    return ctx, functions


def kind_of_return(ctx, function):
    """The kind of the value in the function's last `return`, in its own flow."""
    returned = function.body.body[-1].body[0].value
    return ctx.traced.flow(function).kinds.get(id(returned))


HELPERS = '''
    import jax
    import jax.numpy as jnp

    def above(x, limit):
        return x > limit

    def count(xs):
        return len(xs)

    def forever(x):
        return forever(x)

    @jax.jit
    def step(x):
        a = above(x, 1.0)
        b = above(x, 2.0)
        c = count([x])
        d = forever(x)
        return a, b, c, d
'''


def test_a_helper_returns_its_summarised_value_computed_once_per_signature():
    ctx, functions = analysed(HELPERS)
    step = functions["step"]
    flow = ctx.traced.flow(step)
    calls = [s.body[0].value for s in step.body.body[:4]]
    assert [flow.kinds.get(id(call)) for call in calls] == [Kind.BOOL, Kind.BOOL, Kind.NONE, Kind.NONE]
    # `above` is called twice with the same argument kinds: summarised once; `forever` recursion is cut
    summaries = ctx.traced.summaries
    assert summaries.computed == 3


def test_a_helper_outside_any_trace_returns_concrete_values():
    ctx, functions = analysed('''
        import jax.numpy as jnp

        def make():
            return jnp.zeros(3)

        def use():
            buffer = make()
            return buffer
    ''')
    assert kind_of_return(ctx, functions["use"]) == Kind.JAX_ARRAY


def test_transform_wrappers_return_traced_values_under_a_trace_and_concrete_ones_outside():
    ctx, functions = analysed('''
        import jax
        import jax.numpy as jnp

        def f(x):
            return jnp.sum(x ** 2)

        fast = jax.jit(f)

        @jax.jit
        def inside(x):
            loss, grads = jax.value_and_grad(f)(x)
            return loss

        @jax.jit
        def aliased(x):
            y = fast(3.0)
            return y

        def outside(x):
            loss, grads = jax.value_and_grad(f)(x)
            return loss
    ''')
    assert kind_of_return(ctx, functions["inside"]) == Kind.ARRAY
    assert kind_of_return(ctx, functions["aliased"]) == Kind.TREE  # a jitted output, whatever its input
    assert kind_of_return(ctx, functions["outside"]) == Kind.JAX_ARRAY


def test_collectives_of_python_constants_and_declared_static_fields_are_static():
    ctx, functions = analysed('''
        import jax
        from flax import struct

        class State(struct.PyTreeNode):
            steps: int = struct.field(pytree_node=False)
            weights: jax.Array

        def body(x, state: State, loose):
            n = jax.lax.psum(1, "i")
            return n, state.steps, state.weights, state.other, loose.weights, x.shape
        mapped = jax.vmap(body, axis_name="i")
    ''')
    body = functions["body"]
    returned = body.body.body[-1].body[0].value
    flow = ctx.traced.flow(body)
    traced = [flow.values[id(e.value)].traced for e in returned.elements]
    # the leaf of a class known to be a dataclass pytree is traced; its static field, an attribute it
    # does not declare, and any attribute of a pytree whose class is not known may be static
    assert traced == [NO, MAY, MUST, MAY, MAY, NO]
