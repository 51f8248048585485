"""A read-only walk over a libcst tree.

libcst's own `visit` rebuilds (and re-validates) every node on the way back up, even for a visitor
that changes nothing; that costs several times the parse. Rules here only read the tree, so the walk
reads the dataclass fields of each node directly, skipping whitespace and punctuation.

Each node type gets its own child enumerator, generated once from its fields (as `dataclasses`
generates `__init__`): no per-node loop over field names, no `getattr` by name. Types with no field
that can hold a node (names, literals, operators) get none, and the walk leaves them at once.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, Optional

import libcst as cst


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found.add(sub)
        found |= _subclasses(sub)
    return found


#: Comprehensions and generator expressions: each runs in a scope of its own.
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
NODE_TYPES = frozenset(t for t in _subclasses(cst.CSTNode) if not getattr(t, "__abstractmethods__", None))


def node_types(*kinds: type) -> frozenset[type]:
    """The node types that are one of `kinds` or a subclass of one, for `type(node) in …`: libcst's
    node classes are abstract bases and final concrete types, and `isinstance` against them goes
    through `ABCMeta.__instancecheck__` (ten times slower than a set lookup) whenever it is false."""
    return frozenset(t for t in NODE_TYPES if issubclass(t, kinds))


#: every expression node type (`isinstance(node, cst.BaseExpression)`)
EXPRESSION_TYPES = node_types(cst.BaseExpression)
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
#: Field types that only ever hold text (a name's spelling, a number, a string's quotes), never a node.
_TEXT_TYPES = (str, Optional[str])
_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(node_type: type) -> tuple[str, ...]:
    """The fields of a node type that can hold child nodes, in source order."""
    fields = _FIELDS.get(node_type)
    if fields is None:
        names = [f.name for f in dataclasses.fields(node_type)
                 if not f.name.startswith(_SKIPPED_PREFIXES) and f.name not in _SKIPPED_NAMES
                 and f.type not in _TEXT_TYPES]
        order = _ORDER.get(node_type)
        if order:
            names = [n for n in order if n in names] + [n for n in names if n not in order]
        fields = _FIELDS[node_type] = tuple(names)
    return fields


ChildEnumerator = Callable[[cst.CSTNode], Iterator[tuple[str, cst.CSTNode]]]


class _Enumerators(dict):
    """node type -> its child enumerator, or None for a type whose nodes never have children."""

    def __missing__(self, node_type: type) -> ChildEnumerator | None:
        return _enumerator(node_type)


#: `ENUMERATORS[type(node)]`: generated on first use of each type
ENUMERATORS: dict[type, ChildEnumerator | None] = _Enumerators()


def _enumerator(node_type: type) -> ChildEnumerator | None:
    """Generates `children` for one node type: for each field, in source order, the node it holds
    or the nodes of the sequence it holds (a field may hold either, or None, or a sentinel)."""
    fields = node_fields(node_type)
    if not fields:
        ENUMERATORS[node_type] = None
        return None
    lines = ["def children(node):"]
    for name in fields:
        lines += [
            f"    value = node.{name}",
            "    kind = type(value)",
            "    if kind in NODE_TYPES:",
            f"        yield {name!r}, value",
            "    elif kind is tuple or kind is list:",
            "        for item in value:",
            "            if type(item) in NODE_TYPES:",
            f"                yield {name!r}, item",
        ]
    namespace = {"NODE_TYPES": NODE_TYPES}
    exec(compile("\n".join(lines), f"<children of {node_type.__name__}>", "exec"), namespace)
    enumerator = ENUMERATORS[node_type] = namespace["children"]
    return enumerator


def children(node: cst.CSTNode) -> Iterator[tuple[str, cst.CSTNode]]:
    """(field name, child) for each child node, in source order."""
    enumerator = ENUMERATORS[type(node)]
    return enumerator(node) if enumerator is not None else iter(())


def walk(root: cst.CSTNode, enter: Callable[[cst.CSTNode, str], bool],
         leave: Callable[[cst.CSTNode], None] | None) -> None:
    """Depth first: `enter(node, field)` (False skips the children), then the children, then `leave(node)`
    (no call when `leave` is None)."""
    enumerators = ENUMERATORS
    enumerator = enumerators[type(root)]
    if leave is None:  # most walks only look on the way down: no call per node on the way up
        if enter(root, "") and enumerator is not None:
            stack: list[Iterator] = [enumerator(root)]
            while stack:
                for field, child in stack[-1]:
                    if enter(child, field):
                        enumerator = enumerators[type(child)]
                        if enumerator is not None:
                            stack.append(enumerator(child))
                            break
                else:
                    stack.pop()
        return
    if not enter(root, "") or enumerator is None:
        leave(root)
        return
    pending_of: list[tuple[cst.CSTNode, Iterator]] = [(root, enumerator(root))]
    while pending_of:
        node, pending = pending_of[-1]
        for field, child in pending:
            enumerator = enumerators[type(child)]
            if enter(child, field) and enumerator is not None:
                pending_of.append((child, enumerator(child)))
                break
            leave(child)  # skipped, or a leaf: nothing below it; on with its next sibling
        else:
            pending_of.pop()
            leave(node)


def last_name(expr: cst.CSTNode) -> str | None:
    """`c` for `a.b.c` or `c` (what a call is called by); None for anything else."""
    if type(expr) is cst.Name:
        return expr.value
    if type(expr) is cst.Attribute:
        return expr.attr.value
    return None


def written_number(expr: cst.BaseExpression | None) -> bool:
    """`0`, `0.5`, `-1`, `+2.0`: a Python number written out."""
    if type(expr) is cst.UnaryOperation and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    return type(expr) in (cst.Integer, cst.Float)


def target_parts(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """What an assignment or loop target assigns, through its tuples, lists and stars: the names,
    attributes (`o.a`) and subscripts (`x[i]`) of `a, (o.b, *x[i]) = ...`."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from target_parts(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_parts(target.value)
    else:
        yield target


def target_names(target: cst.BaseExpression) -> Iterator[str]:
    """The names an assignment or loop target binds (`a, (b, *c) = ...` binds a, b and c)."""
    return (part.value for part in target_parts(target) if isinstance(part, cst.Name))
