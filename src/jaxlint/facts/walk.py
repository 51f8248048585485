"""A read-only walk over a libcst tree.

libcst's own `visit` rebuilds (and re-validates) every node on the way back up, even for a visitor
that changes nothing; that costs several times the parse. Rules here only read the tree, so the walk
reads the dataclass fields of each node directly, skipping whitespace and punctuation.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

import libcst as cst


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found.add(sub)
        found |= _subclasses(sub)
    return found


NODE_TYPES = frozenset(t for t in _subclasses(cst.CSTNode) if not getattr(t, "__abstractmethods__", None))
_SKIPPED_PREFIXES = (
    "whitespace", "leading_lines", "lines_after", "lpar", "rpar", "comma", "semicolon", "colon", "header",
    "footer", "indent", "newline", "first_line", "trailing_whitespace", "empty_lines", "lbrace", "rbrace",
    "lbracket", "rbracket",
)
_SKIPPED_NAMES = frozenset({
    "star", "dot", "equal", "default_indent", "default_newline", "encoding", "has_trailing_newline",
    "start", "end", "prefix", "quote",
})
#: Fields in source order where the dataclass order differs (decorators come before the body).
_ORDER = {
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
}
_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(node_type: type) -> tuple[str, ...]:
    fields = _FIELDS.get(node_type)
    if fields is None:
        names = [f.name for f in dataclasses.fields(node_type)
                 if not f.name.startswith(_SKIPPED_PREFIXES) and f.name not in _SKIPPED_NAMES]
        order = _ORDER.get(node_type)
        if order:
            names = [n for n in order if n in names] + [n for n in names if n not in order]
        fields = _FIELDS[node_type] = tuple(names)
    return fields


def children(node: cst.CSTNode) -> Iterator[tuple[str, cst.CSTNode]]:
    """(field name, child) for each child node, in source order."""
    for name in node_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind in NODE_TYPES:
            yield name, value
        elif kind is tuple or kind is list:
            for item in value:
                if type(item) in NODE_TYPES:
                    yield name, item


def walk(root: cst.CSTNode, enter: Callable[[cst.CSTNode, str], bool], leave: Callable[[cst.CSTNode], None]) -> None:
    """Depth first: `enter(node, field)` (False skips the children), then the children, then `leave(node)`."""
    stack: list[tuple[cst.CSTNode, Iterator]] = []
    if enter(root, ""):
        stack.append((root, children(root)))
    else:
        leave(root)
        return
    while stack:
        node, pending = stack[-1]
        for field, child in pending:
            if enter(child, field):
                stack.append((child, children(child)))
            else:
                leave(child)
            break
        else:
            stack.pop()
            leave(node)
