"""The subject's source and the positions in it: the flagged statement, the function and the loop
around it, as line spans."""
from __future__ import annotations

import ast
import functools
import linecache

from ...subject import Subject
from .outcomes import Inconclusive


@functools.lru_cache(maxsize=64)
def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def source_text(subject: Subject) -> str:
    if subject.source:
        return subject.source
    try:
        with open(subject.path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return "".join(linecache.getlines(subject.path))


def tree_of(subject: Subject) -> ast.Module:
    tree = _parse(source_text(subject))
    if tree is None:
        raise Inconclusive("the source could not be parsed")
    return tree


def _header_end(node: ast.stmt) -> int:
    """Last line of a compound statement's header (the line before its body)."""
    body = getattr(node, "body", None)
    if isinstance(body, list) and body:
        return max(node.lineno, first_line(body[0]) - 1)
    return node.end_lineno or node.lineno


def first_line(node: ast.AST) -> int:
    """The line a node starts on: a decorated def starts at its first decorator."""
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def statement_at(tree: ast.Module, line: int) -> ast.stmt | None:
    """The innermost statement at `line` (a compound statement only where `line` is in its header)."""
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        start, end = first_line(node), node.end_lineno or node.lineno
        if not start <= line <= end:
            continue
        if hasattr(node, "body") and isinstance(node.body, list) and node.body and line > _header_end(node):
            continue  # the line is in the body, so a statement inside is the one
        if best is None or (start, -end) >= (first_line(best), -(best.end_lineno or best.lineno)):
            best = node
    return best


def statement_span(subject: Subject) -> tuple[int, int]:
    """First and last line of the flagged statement (a compound statement: its header)."""
    node = statement_at(tree_of(subject), subject.line)
    if node is None:
        return subject.line, subject.line
    if hasattr(node, "body") and isinstance(node.body, list) and node.body:
        return first_line(node), _header_end(node)
    return first_line(node), node.end_lineno or node.lineno


_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def ancestors(tree: ast.Module, line: int) -> list[ast.AST]:
    """Nodes whose lines contain `line`, outermost first."""
    chain: list[ast.AST] = []
    node: ast.AST = tree
    while True:
        for child in ast.iter_child_nodes(node):
            if hasattr(child, "lineno") and first_line(child) <= line <= (child.end_lineno or child.lineno):
                chain.append(child)
                node = child
                break
        else:
            return chain


def enclosing_scope(subject: Subject) -> ast.AST | None:
    """The innermost def whose body holds the flagged line (see `opens_scope`)."""
    scopes = [n for n in ancestors(tree_of(subject), subject.line) if opens_scope(n, subject.line)]
    return scopes[-1] if scopes else None


def opens_scope(node: ast.AST, line: int) -> bool:
    """A def whose body holds `line` (its decorators and header belong to the outer scope). Lambdas hold
    no statements: one on the flagged line is part of the flagged statement."""
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and line > _header_end(node)


def enclosing_loop_span(subject: Subject) -> tuple[int, int] | None:
    """Lines of the innermost loop (or comprehension) around the flagged line inside its function."""
    loop = None
    for node in ancestors(tree_of(subject), subject.line):
        if opens_scope(node, subject.line):
            loop = None
        elif isinstance(node, _LOOPS):
            if isinstance(node, (ast.For, ast.AsyncFor)) and subject.line <= _header_end(node):
                continue  # the loop's own header (its iterable) runs once
            loop = node
    if loop is None:
        return None
    return first_line(loop), loop.end_lineno or loop.lineno


def scope_span(node: ast.AST) -> tuple[int, int]:
    return first_line(node), node.end_lineno or node.lineno


def line_set(span: tuple[int, int]) -> range:
    return range(span[0], span[1] + 1)
