"""Fields that a module's classes declare static (`struct.field(pytree_node=False)`,
`eqx.field(static=True)`): not pytree leaves, so never traced."""
from __future__ import annotations

from typing import Iterator, Sequence

import libcst as cst

#: Keywords of field declarations that make a dataclass field static (not a pytree leaf).
_STATIC_FIELD_KEYWORDS = {"pytree_node": "False", "static": "True"}


def static_field_names(module: cst.Module) -> frozenset[str]:
    """Fields that classes of the module declare static (`struct.field(pytree_node=False)`,
    `eqx.field(static=True)`): not pytree leaves, so never traced."""
    found: set[str] = set()
    makers = _static_field_makers(module.body)
    for statement in _class_statements(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            value = getattr(small, "value", None)
            if not isinstance(small, (cst.AnnAssign, cst.Assign)) or not isinstance(value, cst.Call):
                continue
            if not (any(_declares_static(a) for a in value.args)
                    or type(value.func) is cst.Name and value.func.value in makers):
                continue
            targets = [small.target] if isinstance(small, cst.AnnAssign) else [t.target for t in small.targets]
            found.update(t.value for t in targets if isinstance(t, cst.Name))
    return frozenset(found)


def _static_field_makers(body: Sequence[cst.CSTNode]) -> frozenset[str]:
    """Module-level helpers that declare a static field, so that a class's `x: int = static_field(2)`
    is static too: `static_field = lambda v=MISSING: dataclasses.field(default=v, metadata=dict(static=True))`,
    or a `def` that returns such a field."""
    found = set()
    for statement in body:
        if type(statement) is cst.FunctionDef:
            returned = [small.value for line in statement.body.body if type(line) is cst.SimpleStatementLine
                        for small in line.body if type(small) is cst.Return]
            if returned and all(_static_declaration(value) for value in returned):
                found.add(statement.name.value)
        elif type(statement) is cst.SimpleStatementLine:
            for small in statement.body:
                if type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name \
                        and type(small.value) is cst.Lambda and _static_declaration(small.value.body):
                    found.add(small.targets[0].target.value)
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


def _class_statements(body: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """The statements of the module's classes (and of classes nested in them)."""
    for statement in body:
        if type(statement) is cst.ClassDef:
            for inner in statement.body.body:
                yield inner
                if isinstance(inner, cst.ClassDef):
                    yield from _class_statements([inner])
        elif type(statement) is cst.If:  # `if TYPE_CHECKING:` / version guards
            yield from _class_statements(statement.body.body)
