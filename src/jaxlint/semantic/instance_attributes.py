"""What the methods of a class assign to the attributes of `self`.

`self.buf = jnp.zeros(n)` in `__init__`, and nowhere else anything but arrays, makes `self.buf` an
array in every other method. An attribute is left unknown when the class body binds the same name
(a class attribute, a property), when it is assigned other than as `self.<name> = value` (unpacked,
deleted, through another object, from a nested function), or when the class sets attributes by
name (`setattr`, `__dict__`, `__setattr__`).
"""
from __future__ import annotations

import libcst as cst

from ..syntax.walk import walk

#: Methods that run when an instance is made.
CONSTRUCTORS = frozenset({"__init__", "__post_init__"})
_DYNAMIC = frozenset({"setattr", "__dict__", "__setattr__", "vars", "object"})


def self_param(function: cst.CSTNode | None) -> cst.Param | None:
    """The parameter that holds the instance in a method (its first), or None for static and class methods."""
    if not isinstance(function, cst.FunctionDef):
        return None
    for decorator in function.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in ("staticmethod", "classmethod"):
            return None
    params = (*function.params.posonly_params, *function.params.params)
    return params[0] if params else None


class InstanceAttributes:
    def __init__(self, cls: cst.ClassDef) -> None:
        self._class = cls
        #: attribute -> (value, method) for each `self.<attribute> = value`
        self.assigned: dict[str, list[tuple[cst.BaseExpression, cst.FunctionDef]]] = {}
        #: attributes assigned in a constructor
        self.constructed: set[str] = set()
        self.unknown: set[str] = set()
        self.dynamic = False
        for statement in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(statement, cst.FunctionDef):
                self.unknown.add(statement.name.value)  # a method or property of that name
                self._method(statement)
            elif isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                        [small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) else [])
                    for target in targets:
                        walk(target, self._class_name, None)
                walk(statement, self._enter_other, None)
            else:
                walk(statement, self._enter_other, None)

    def values(self, attribute: str) -> list[tuple[cst.BaseExpression, cst.FunctionDef]] | None:
        """Every value assigned to `self.<attribute>`, when that is all that sets it; else None."""
        if self.dynamic or attribute in self.unknown or attribute not in self.constructed:
            return None
        return self.assigned.get(attribute)

    def _class_name(self, node: cst.CSTNode, field: str) -> bool:
        if isinstance(node, cst.Name):
            self.unknown.add(node.value)
        return True

    def _enter_other(self, node: cst.CSTNode, field: str) -> bool:
        """Code that is not a method's own body: any attribute it assigns is unknown."""
        if isinstance(node, cst.Name) and node.value in _DYNAMIC:
            self.dynamic = True
        elif isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Del)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                self._rebound(target)
        return True

    def _rebound(self, target: cst.BaseExpression) -> None:
        """Attributes a target rebinds (`o.a = …`, `o.a, o.b = …`; not `o.a[i] = …`) become unknown."""
        if isinstance(target, cst.Attribute):
            self.unknown.add(target.attr.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._rebound(element.value)
        elif isinstance(target, cst.StarredElement):
            self._rebound(target.value)

    def _method(self, method: cst.FunctionDef) -> None:
        param = self_param(method)
        receiver = param.name.value if param is not None else None
        body = method.body.body if isinstance(method.body, cst.IndentedBlock) else ()

        def enter(node: cst.CSTNode, field: str) -> bool:
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                walk(node, self._enter_other, None)
                return False
            if isinstance(node, cst.Name) and node.value in _DYNAMIC:
                self.dynamic = True
            elif isinstance(node, cst.Assign) and len(node.targets) == 1 or isinstance(node, cst.AnnAssign):
                target = node.targets[0].target if isinstance(node, cst.Assign) else node.target
                if (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                        and target.value.value == receiver and node.value is not None):
                    self.assigned.setdefault(target.attr.value, []).append((node.value, method))
                    if method.name.value in CONSTRUCTORS:
                        self.constructed.add(target.attr.value)
                else:
                    self._rebound(target)
            elif isinstance(node, (cst.Assign, cst.Del)):
                for target in [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]:
                    self._rebound(target)
            elif isinstance(node, cst.AugAssign):
                target = node.target
                # `self.total += x` keeps an array an array; through another object it may not be one
                if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                        and target.value.value == receiver):
                    self._rebound(target)
            return True

        for statement in body:
            walk(statement, enter, None)
