"""The fields a module's classes declare by annotation, and those declared static
(`struct.field(pytree_node=False)`, `eqx.field(static=True)`): not pytree leaves, so never traced."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from ...semantic.model import SemanticModel

#: Keywords of field declarations that make a dataclass field static (not a pytree leaf).
_STATIC_FIELD_KEYWORDS = {"pytree_node": "False", "static": "True"}


def declared_fields(model: SemanticModel) -> dict[int, tuple[tuple[str, ...], frozenset[str]]]:
    """id(class) -> the fields its body declares by annotation (`x: int`, `w: jax.Array = field()`),
    in order, and those of them declared static. `ClassVar` annotations declare no field."""
    makers = _static_field_makers(model)
    fields: dict[int, list[str]] = {}
    static: dict[int, set[str]] = {}
    for site in model.sites_of(cst.AnnAssign):
        node = site.node
        if site.scope.kind != "class" or type(node.target) is not cst.Name or _class_variable(node.annotation):
            continue
        key = id(site.scope.node)
        fields.setdefault(key, []).append(node.target.value)
        value = node.value
        if type(value) is cst.Call and (any(_declares_static(a) for a in value.args)
                                        or type(value.func) is cst.Name and value.func.value in makers):
            static.setdefault(key, set()).add(node.target.value)
    return {key: (tuple(names), frozenset(static.get(key, ()))) for key, names in fields.items()}


def _class_variable(annotation: cst.Annotation) -> bool:
    """`ClassVar`, `typing.ClassVar[int]`: a class attribute, not a dataclass field."""
    shown = annotation.annotation
    if type(shown) is cst.Subscript:
        shown = shown.value
    if type(shown) is cst.Attribute:
        shown = shown.attr
    return type(shown) is cst.Name and shown.value == "ClassVar"


def _static_field_makers(model: SemanticModel) -> frozenset[str]:
    """Module-level helpers that declare a static field, so that a class's `x: int = static_field(2)`
    is static too: `static_field = lambda v=MISSING: dataclasses.field(default=v, metadata=dict(static=True))`,
    or a `def` that returns such a field."""
    found = set()
    for site in model.sites_of(cst.FunctionDef, cst.Assign):
        if site.scope.kind != "module":
            continue
        node = site.node
        if type(node) is cst.FunctionDef:
            returned = [small.value for line in node.body.body if type(line) is cst.SimpleStatementLine
                        for small in line.body if type(small) is cst.Return]
            if returned and all(_static_declaration(value) for value in returned):
                found.add(node.name.value)
        elif len(node.targets) == 1 and type(node.targets[0].target) is cst.Name \
                and type(node.value) is cst.Lambda and _static_declaration(node.value.body):
            found.add(node.targets[0].target.value)
    return frozenset(found)


def _static_declaration(value: cst.BaseExpression | None) -> bool:
    return type(value) is cst.Call and any(_declares_static(a) for a in value.args)


def _declares_static(arg: cst.Arg) -> bool:
    """`pytree_node=False`, `static=True`, `metadata={"static": True}` / `metadata=dict(static=True)`."""
    if arg.keyword is None:
        return False
    keyword, value = arg.keyword.value, arg.value
    if isinstance(value, cst.Name):
        return _STATIC_FIELD_KEYWORDS.get(keyword) == value.value
    if keyword != "metadata":
        return False
    if isinstance(value, cst.Dict):
        return any(isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                   and e.key.evaluated_value == "static" and isinstance(e.value, cst.Name)
                   and e.value.value == "True" for e in value.elements)
    if isinstance(value, cst.Call):
        return any(_declares_static(a) for a in value.args)
    return False
