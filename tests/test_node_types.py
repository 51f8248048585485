"""Exact type tests stand for `isinstance` against libcst's classes: that holds while every concrete
node class is final (libcst's abstract bases are the only classes with subclasses)."""
from __future__ import annotations

import inspect

import libcst as cst

from jaxlint.syntax.walk import EXPRESSION_TYPES, node_types

PUBLIC_NODE_CLASSES = [c for _, c in inspect.getmembers(cst, inspect.isclass) if issubclass(c, cst.CSTNode)]


def test_no_concrete_node_class_has_a_subclass():
    concrete = [c for c in PUBLIC_NODE_CLASSES if not inspect.isabstract(c) and not c.__name__.startswith("Base")]
    assert len(concrete) > 100
    assert sorted(c.__name__ for c in concrete if c.__subclasses__()) == []


def test_node_types_are_the_concrete_classes_isinstance_accepts():
    for kind in (cst.BaseExpression, cst.BaseSuite, cst.BaseSmallStatement):
        types = node_types(kind)
        for node_class in PUBLIC_NODE_CLASSES:
            assert (node_class in types) == (issubclass(node_class, kind) and not inspect.isabstract(node_class)), node_class
    assert EXPRESSION_TYPES == node_types(cst.BaseExpression)
    for node in (cst.parse_expression("f(x)"), cst.parse_statement("if x:\n    pass\n").body, cst.Arg(cst.Name("x"))):
        assert (type(node) in EXPRESSION_TYPES) == isinstance(node, cst.BaseExpression)
