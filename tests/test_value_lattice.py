"""The value lattice: joins derived from the fields, the JSON codec derived from the fields (a
round trip over generated values), and the refusal of a field that declares no join."""
from __future__ import annotations

import dataclasses
import json
import textwrap

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxlint.dataflow.product import Product, component, equal_or
from jaxlint.jaxmodel.values import (BOTTOM, CONCRETE_ARRAY, MAY, MUST, NO, STATIC, TRACED_ARRAY, TRACED_CONTAINER,
                                     TRACED_MASK, TRACED_PARAM, TRACED_TREE, UNKNOWN, Certainty, Form, Kind,
                                     Provenance, Source, Value, join, value_from_json, value_to_json)
from jaxlint.model.settings import Settings
from jaxlint.analysis import FileAnalysis
from jaxlint.semantic.source_file import SourceFile

certainties = st.sampled_from(list(Certainty))


def values(depth: int = 2) -> st.SearchStrategy[Value]:
    items = st.none() if depth == 0 else st.none() | st.lists(values(depth - 1), min_size=2, max_size=3).map(tuple)
    attributes = st.none() | st.lists(
        st.tuples(st.sampled_from(["w", "b", "scale"]), st.sampled_from(list(Kind))), max_size=2).map(tuple)
    origins = st.none() | st.builds(Provenance, st.sampled_from(list(Source)), st.sampled_from(["", "x", "jax.numpy.sum"]))
    return st.builds(Value, certainties, certainties, certainties, certainties, certainties,
                     st.sampled_from(list(Form)), items, st.none() | st.sampled_from(["grad", "outputs"]),
                     st.none() | st.booleans(), attributes, origins)


# -- joins ---------------------------------------------------------------------------------------
def test_traced_on_one_path_and_static_on_the_other_is_may():
    joined = join(TRACED_ARRAY, STATIC)
    assert (joined.traced, joined.array, joined.static) == (MAY, MAY, MAY)
    assert joined.kind is Kind.NONE  # the older view keeps MUST facts only


def test_unknown_is_not_static():
    assert STATIC.static is MUST and STATIC.traced is NO
    assert (UNKNOWN.traced, UNKNOWN.array, UNKNOWN.static) == (MAY, MAY, MAY)
    assert UNKNOWN != STATIC


def test_agreeing_facts_survive_a_join():
    joined = join(TRACED_ARRAY, TRACED_MASK)
    assert joined.traced is MUST and joined.array is MUST and joined.mask is MAY
    assert joined.kind is Kind.ARRAY
    container_or_array = join(TRACED_CONTAINER, TRACED_ARRAY)
    assert container_or_array.holds is MUST and container_or_array.traced is MAY
    assert container_or_array.kind is Kind.CONTAINER


def test_flat_fields_join_to_not_known_unless_equal():
    grad = Value(wrapper="grad", origin=Provenance(Source.PARAMETER, "x"))
    assert join(grad, grad.with_origin(Provenance(Source.PARAMETER, "x"))) == grad
    joined = join(grad, Value(wrapper="outputs", origin=Provenance(Source.JAX_CALL, "jax.numpy.sum")))
    assert joined.wrapper is None and joined.origin is None
    assert join(TRACED_TREE, TRACED_CONTAINER).form is Form.ANY


def test_items_join_element_by_element_and_only_at_equal_lengths():
    pair = Value(items=(TRACED_ARRAY, STATIC))
    other = Value(items=(TRACED_ARRAY, TRACED_ARRAY))
    assert join(pair, other).items == (TRACED_ARRAY, join(STATIC, TRACED_ARRAY))
    assert join(pair, Value(items=(STATIC, STATIC, STATIC))).items is None


def test_bottom_is_the_identity_of_join():
    for value in (TRACED_ARRAY, STATIC, UNKNOWN, CONCRETE_ARRAY):
        assert join(BOTTOM, value) is value and join(value, BOTTOM) is value


def test_common_values_are_shared_instances():
    assert join(TRACED_ARRAY, STATIC) is UNKNOWN
    assert value_from_json(value_to_json(TRACED_PARAM)) is TRACED_PARAM


@settings(max_examples=150, deadline=None)
@given(values(), values(), values())
def test_join_is_a_semilattice(a, b, c):
    assert join(a, a) == a
    assert join(a, b) == join(b, a)
    assert join(join(a, b), c) == join(a, join(b, c))


@settings(max_examples=100, deadline=None)
@given(values(), values())
def test_certainties_of_a_join_are_must_only_where_both_are(a, b):
    joined = join(a, b)
    for name in ("traced", "array", "static", "holds", "mask"):
        if getattr(joined, name) is MUST:
            assert getattr(a, name) is MUST and getattr(b, name) is MUST


# -- the codec -----------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(values())
def test_codec_round_trips_through_json_text(value):
    assert value_from_json(json.loads(json.dumps(value_to_json(value)))) == value


def test_codec_writes_only_fields_off_their_default():
    assert value_to_json(UNKNOWN) == {}
    assert value_to_json(Value(wrapper="grad")) == {"wrapper": "grad"}


def test_codec_refuses_a_field_it_does_not_know():
    with pytest.raises(ValueError, match="kind"):
        value_from_json({"kind": 5})


# -- the derivation ------------------------------------------------------------------------------
def test_a_field_without_a_declared_join_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Widened:
        traced: Certainty = component(MAY, equal_or(MAY))
        sharding: str | None = None  # a new fact that forgot to say how it joins

    with pytest.raises(TypeError, match="sharding"):
        Product(Widened)


def test_every_field_of_value_declares_its_join():
    product = Product(Value)
    assert product.names == tuple(f.name for f in dataclasses.fields(Value))


# -- in the flow ---------------------------------------------------------------------------------
SOURCE = textwrap.dedent('''
    import jax
    import jax.numpy as jnp


    @jax.jit
    def f(x, flag=None):
        either = x if flag is None else 0.0
        total = x.sum()
        for _ in range(3):
            looped = x * 2
        size = len(x)
        return either, total, looped, size
''')


def test_a_flow_keeps_must_where_paths_agree_and_may_where_they_do_not():
    module = cst.parse_module(SOURCE)
    ctx = FileAnalysis(SourceFile("t.py", SOURCE, module, Settings()))
    function = next(n for n in module.body if isinstance(n, cst.FunctionDef))
    flow = ctx.traced.flow(function)
    returned = function.body.body[-1].body[0].value
    found = {e.value.value: flow.values[id(e.value)] for e in returned.elements}
    assert found["either"].traced is MAY  # traced on one branch, a Python float on the other
    assert found["total"].traced is MUST and found["total"].array is MUST
    assert found["looped"].traced is MUST  # bound only inside the loop: the loop's paths decide
    assert found["size"] is STATIC
