"""A function's parameters as the tracing analysis reads them: positional, keyword-only, starred,
containers by annotation, defaults; and the function scope a scope belongs to."""
from __future__ import annotations

import libcst as cst

from ..semantic.scopes import Scope

FunctionNode = cst.FunctionDef | cst.Lambda


def function_scope(scope: Scope | None) -> Scope | None:
    """The function scope a scope is in (through comprehensions), or None at class or module level."""
    while scope is not None and scope.kind == "comprehension":
        scope = scope.parent
    return scope if scope is not None and scope.kind == "function" else None


def params_of(function: FunctionNode) -> list[str]:
    p = function.params
    names = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    names += sorted(star_params(function))
    return names


#: Annotations of a parameter that is a Python container of arrays: its truthiness, length and
#: iteration are plain Python even when its leaves are traced.
CONTAINER_ANNOTATIONS = frozenset({
    "tuple", "Tuple", "list", "List", "dict", "Dict", "Sequence", "Mapping", "MutableMapping",
    "MutableSequence",
})


def container_params(function: FunctionNode) -> set[str]:
    """`*args`, `**kwargs`, and parameters annotated as a tuple, list, dict, sequence or mapping."""
    p = function.params
    found = star_params(function)
    for param in (*p.posonly_params, *p.params, *p.kwonly_params):
        annotation = param.annotation.annotation if param.annotation is not None else None
        if type(annotation) is cst.Subscript:
            annotation = annotation.value
        if type(annotation) is cst.Attribute:
            annotation = annotation.attr
        if type(annotation) is cst.Name and annotation.value in CONTAINER_ANNOTATIONS:
            found.add(param.name.value)
    return found


def positional_params(function: FunctionNode) -> list[str]:
    p = function.params
    return [x.name.value for x in (*p.posonly_params, *p.params)]


def keyword_only_params(function: FunctionNode) -> list[str]:
    return [x.name.value for x in function.params.kwonly_params]


def star_params(function: FunctionNode) -> set[str]:
    p = function.params
    return {s.name.value for s in (p.star_arg, p.star_kwarg) if type(s) is cst.Param}


def has_default(function: FunctionNode, name: str) -> bool:
    p = function.params
    return any(x.name.value == name and x.default is not None for x in (*p.posonly_params, *p.params, *p.kwonly_params))


def function_name(function: FunctionNode) -> str:
    return function.name.value if isinstance(function, cst.FunctionDef) else "<lambda>"


def assigned_lambda(target: cst.CSTNode, statement: cst.CSTNode) -> cst.Lambda | None:
    """The lambda a module binds a name to (`mix = lambda key, x: jax.random.fold_in(key, x)`), given
    the name's binding target and statement: a function by another spelling. None for anything else."""
    if type(statement) is cst.Assign and type(statement.value) is cst.Lambda and len(statement.targets) == 1 \
            and statement.targets[0].target is target:
        return statement.value
    return None
