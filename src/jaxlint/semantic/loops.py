"""What a block of statements binds and reads, and which names a loop changes from one iteration
to the next.

Pure syntax over one block at a time: no scopes, no JAX. Rules ask through `Loops.of(file)`, which
keeps each loop's answer; `names_read` and `bound_in` answer for any node or block, at the cost of
one walk of it per question.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ..syntax.walk import target_names, walk

if TYPE_CHECKING:
    from .source_file import SourceFile

#: Bodies that run at another time, with bindings of their own: a block's analysis stops at them.
_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


class Loops:
    """Per file: for each loop asked about, the names its body binds and the names that vary from
    one iteration to the next. Each is one walk of that loop's body, on the first question about
    the loop, kept for the file."""

    def __init__(self) -> None:
        self._bound: dict[int, frozenset[str]] = {}
        self._varying: dict[int, frozenset[str]] = {}

    @classmethod
    def of(cls, file: "SourceFile") -> "Loops":
        return file.fact(cls, cls)

    def rebinds(self, loop: cst.CSTNode | None, name: str) -> bool:
        """Whether the body of a `for` or `while` loop binds `name` (an assignment, a loop or `with`
        target, a walrus; not in a function or class defined there): then the value it holds differs
        from one iteration to the next (`rng, _ = jax.random.split(rng)`). False for anything else
        (a comprehension, None)."""
        if not isinstance(loop, (cst.For, cst.While)):
            return False
        bound = self._bound.get(id(loop))
        if bound is None:
            bound = self._bound[id(loop)] = frozenset(bound_in(loop.body))
        return name in bound

    def varying_names(self, loop: cst.For | cst.While) -> frozenset[str]:
        """The names whose value changes from one iteration of the loop to the next: the loop
        variables (of nested `for` loops too), what the body carries round the loop (`x = step(x)`,
        `key, sub = split(key)`, `config["n"] = n` changing `config`), and what it computes from
        those, to a fixed point."""
        varying = self._varying.get(id(loop))
        if varying is None:
            varying = self._varying[id(loop)] = frozenset(_varying_names(loop))
        return varying


def names_read(node: cst.CSTNode) -> set[str]:
    """The variable names written anywhere in `node` (`x` of `x.shape`, not `shape`); one walk of it."""
    found, pending = set(), [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        elif isinstance(current, cst.Attribute):
            pending.append(current.value)
        else:
            pending.extend(current.children)
    return found


def bound_in(block: cst.CSTNode, after: cst.CSTNode | None = None) -> set[str]:
    """The names the statements of `block` bind: assignment, `for`, `with ... as` and walrus
    targets, in the block and the blocks nested in it, not in a function, class or lambda defined
    there. With `after` (a node inside `block`), only the bindings that come after it in source
    order, `after` itself left out. One walk of the block."""
    bound: set[str] = set()
    seen_after = after is None

    def enter(node: cst.CSTNode, _field: str) -> bool:
        nonlocal seen_after
        if node is after:
            seen_after = True
            return False
        if isinstance(node, _NESTED):
            return False
        if seen_after:
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr)):
                targets = [node.target]
            elif isinstance(node, cst.WithItem) and node.asname is not None:
                targets = [node.asname.name]
            else:
                targets = []
            for target in targets:
                bound.update(target_names(target))
        return True

    walk(block, enter, None)
    return bound


def _varying_names(loop: cst.For | cst.While) -> set[str]:
    varying = names_read(loop.target) if isinstance(loop, cst.For) else set()
    assignments = []
    pending: list[cst.CSTNode] = [loop.body]
    while pending:
        node = pending.pop()
        if isinstance(node, _NESTED):
            continue
        if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and node.value is not None:
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            bound = set().union(*(names_read(t) for t in targets if isinstance(t, (cst.Name, cst.Tuple, cst.List))))
            # a store into an item or attribute changes the object it starts from
            bound |= {root for t in targets if isinstance(t, (cst.Subscript, cst.Attribute))
                      for root in [_root_name(t)] if root is not None}
            read = names_read(node.value) | (bound if isinstance(node, cst.AugAssign) else set())
            assignments.append((bound, read))
        elif isinstance(node, cst.For):
            varying |= names_read(node.target)
        if isinstance(node, cst.BaseExpression):
            continue
        pending.extend(node.children)
    for bound, read in assignments:
        varying |= bound & read  # carried round the loop
    changed = True
    while changed:
        changed = False
        for bound, read in assignments:
            if read & varying and not bound <= varying:
                varying |= bound
                changed = True
    return varying


def _root_name(target: cst.BaseExpression) -> str | None:
    """`config` of `config["a"]["b"]` or `cfg.model.width`."""
    while isinstance(target, (cst.Subscript, cst.Attribute)):
        target = target.value
    return target.value if isinstance(target, cst.Name) else None
