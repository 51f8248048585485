"""What a Name node stands for where it is written, told from its parent alone: a variable read, a
variable bound or declared, or no variable at all (an attribute, a keyword, a parameter's name)."""
from __future__ import annotations

import libcst as cst

_NAMED_DEFINITIONS = frozenset({cst.Param, cst.FunctionDef, cst.ClassDef})
#: Parents whose Name child is always bound or declared there, never read.
_STORES = (cst.AssignTarget, cst.AsName, cst.Del, cst.NameItem, cst.ImportAlias)
#: Parents whose `target` child is bound there (their other children are read).
_TARGET_OWNERS = (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)


def is_reference(name: cst.Name, parent: cst.CSTNode | None) -> bool:
    """Whether a Name node stands for a variable (not an attribute, keyword, or parameter name)."""
    kind = type(parent)  # exact types: this runs for every Name, in several rules
    if kind is cst.Attribute:
        return parent.attr is not name
    if kind is cst.Arg:
        return parent.keyword is not name
    if kind in _NAMED_DEFINITIONS:
        return parent.name is not name
    return kind is not cst.ImportAlias


def is_binding(name: cst.Name, parent: cst.CSTNode | None) -> bool:
    """Whether a Name node binds or declares its variable where it stands (an assignment, `for`,
    walrus, `with`/`except`/`import` target, `del`, `global`/`nonlocal`) rather than reading it.
    (`x += 1` counts as a binding.)"""
    return isinstance(parent, _STORES) or (isinstance(parent, _TARGET_OWNERS) and parent.target is name)
