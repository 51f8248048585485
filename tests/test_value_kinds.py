"""The shared value flow: kinds of index expressions and of boolean-array operators."""
import textwrap

import libcst as cst

from jaxlint.config import Settings
from jaxlint.context import FileContext
from jaxlint.facts.values import Kind

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
    ctx = FileContext("t.py", SOURCE, module, Settings())
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
