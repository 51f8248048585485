"""What a `case` pattern of a `match` statement binds, and whether it matches every subject."""
from __future__ import annotations

import libcst as cst

from ..syntax.walk import walk


def pattern_captures(pattern: cst.MatchPattern) -> list[tuple[cst.CSTNode, cst.Name]]:
    """(the pattern that binds, the name it binds) for every capture of a `case` pattern."""
    found: list[tuple[cst.CSTNode, cst.Name]] = []

    def enter(node: cst.CSTNode, _field: str) -> bool:
        if isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
            found.append((node, node.name))
        elif isinstance(node, cst.MatchMapping) and node.rest is not None:
            found.append((node.rest, node.rest))
        return not isinstance(node, cst.BaseExpression)

    walk(pattern, enter, None)
    return found


def irrefutable(pattern: cst.MatchPattern) -> bool:
    """`case _:` and `case name:` match anything."""
    if isinstance(pattern, cst.MatchAs) and pattern.pattern is None:
        return True
    if isinstance(pattern, cst.MatchOr):
        return any(irrefutable(p.pattern) for p in pattern.patterns)
    return False
