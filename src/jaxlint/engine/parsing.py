"""What is Python, and libcst's tree of it.

CPython's own parser decides what parses: the text is compiled to an AST first (several times
cheaper than libcst's parse) and a text it rejects is reported as JAX000 with CPython's message and
position, without ever reaching libcst, whose native parser overflows its stack on some of it (a few
thousand nested brackets kill the process outright).

A text CPython accepts is handed to libcst, which fails on a little of it: a backslash continuation
with CRLF just before the end of the file, a form feed inside an indentation (CPython starts the
indentation count again after one), more than 3,000 adjacent string literals (a limit of libcst's
grammar). The text is then rewritten for libcst with every character kept at its line and column —
a newline appended, form feeds made spaces where CPython's tree of the text stays the same, each long
run of string literals made one literal over the same characters — so every position of the tree is
a position of the original. What cannot be rewritten is not analysed, and said so: it is Python, so
a JAX000 "cannot parse" would be false.
"""
from __future__ import annotations

import ast
import io
import re
import symtable
import sys
import threading
import tokenize
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Iterator

import libcst as cst

from ..model.finding import Finding, Position

#: Deepest native recursion libcst's parser is given per level of CPython's tree, in bytes of stack
#: (about 1.5 KB measured, for chains of `and`, dotted names, unary operators and method calls).
NATIVE_BYTES_PER_LEVEL = 4 << 10
#: libcst's grammar refuses more adjacent string literals than this in one expression.
MAX_ADJACENT_STRINGS = 3000
_INDENT_WITH_FORM_FEED = re.compile(r"^[ \t]*\x0c[ \t\x0c]*", re.MULTILINE)


def _all_subclasses(kind: type) -> list[type]:
    found, pending = [], [kind]
    while pending:
        for sub in pending.pop().__subclasses__():
            found.append(sub)
            pending.append(sub)
    return found


class NotParsed(Exception):
    """Python that jaxlint's parser cannot take: the reason, for a note (not a finding)."""


@dataclass
class Parsed:
    module: cst.Module
    #: positions (line, 1-based column) of the characters rewritten for libcst: a fix touching one
    #: would write the rewritten text
    rewritten: list[tuple[Position, Position]] = field(default_factory=list)


#: Interpreters where a text `symtable` accepts is known to give an AST too (`python_accepts`).
#: Both recurse over CPython's internal tree with a depth limit that starts from the caller's
#: Python stack depth; the AST's conversion counts a level for every node on a path, the symbol
#: table no more, and the symbol table is asked from deeper in the stack, so it gives up first.
#: Where that has not been checked (other versions count C stack instead) the AST decides alone.
SYMTABLE_DECIDES_ACCEPTANCE = sys.version_info[:2] == (3, 11)


def python_accepts(source: str, path: str) -> bool:
    """True when CPython accepts the text, as `python_tree` would say, decided without building
    CPython's tree of it: its symbol table (the parse and one pass over CPython's internal tree,
    with no Python object per node) costs about two thirds of the AST. False means "ask
    `python_tree`": the symbol table also rejects some valid programs (`def f(x, x)`,
    `nonlocal` at module level) and gives up on nesting a little sooner than the AST."""
    if not SYMTABLE_DECIDES_ACCEPTANCE:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # as in `python_tree`
            symtable.symtable(source, path, "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def python_tree(source: str, path: str) -> ast.Module | tuple[str, int, int]:
    """CPython's tree of the text, or why CPython rejects it: (message, line, column)."""
    try:
        with warnings.catch_warnings():
            # an invalid escape or a literal compared with `is` is still Python; under `-W error`
            # a warning would otherwise become the SyntaxError of a file that compiles
            warnings.simplefilter("ignore")
            return compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc.msg, exc.lineno or 1, exc.offset or 1
    except (RecursionError, MemoryError):
        # CPython's parser gives up on deep nesting with one of these, often without a message
        return "nested too deeply for Python's parser", 1, 1
    except ValueError as exc:  # NUL characters
        return str(exc), 1, 1


def nesting_beyond(tree: ast.AST, source: str, stack_bytes: int) -> int | None:
    """The depth of libcst's tree for this text when its native parser could not reach it with
    `stack_bytes` of stack, else None.

    CPython bounds the nesting of most expressions (about 3,000 levels), but not the length of an
    `and`/`or` chain or of a dotted name, which libcst builds as nested nodes, one level per term.
    A text too short to hold a chain that deep is not looked at.
    """
    if not could_nest_beyond(source, stack_bytes):
        return None
    levels = stack_bytes // NATIVE_BYTES_PER_LEVEL
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is ast.BoolOp:
            depth += len(node.values)
        elif kind is ast.alias:
            depth += node.name.count(".")
        elif kind is ast.ImportFrom:
            depth += (node.module or "").count(".")
        if depth > deepest:
            deepest = depth
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest if deepest >= levels else None


def could_nest_beyond(source: str, stack_bytes: int) -> bool:
    """Whether the text is long enough to hold a chain deeper than `stack_bytes` lets libcst's
    parser go (`nesting_beyond` looks at CPython's tree only then)."""
    return len(source) // 2 >= stack_bytes // NATIVE_BYTES_PER_LEVEL  # a level takes two characters (`a.`)


def libcst_parse(source: str, tree: ast.Module | None, path: str = "<unknown>") -> Parsed:
    """libcst's tree of a text CPython accepted (`tree`, or None to have it made from `path` if a
    rewrite needs it); NotParsed when libcst cannot give one."""
    try:
        return Parsed(parse_module(source))
    except cst.ParserSyntaxError as exc:
        first_error = exc
    except RecursionError:
        raise NotParsed("nested too deeply for jaxlint's parser") from None
    if tree is None:
        made = python_tree(source, path)
        if not isinstance(made, ast.Module):  # the symbol table accepted it: not expected
            raise NotParsed(f"Python's own parser gave up on it: {made[0]}")
        tree = made
    text, rewritten = source, []
    for rewrite in (_final_newline, _form_feeds_in_indentation, _long_string_runs):
        changed = rewrite(text, tree)
        if changed is None:
            continue
        text, spans = changed
        rewritten += spans
        try:
            return Parsed(parse_module(text), rewritten)
        except cst.ParserSyntaxError:
            continue
        except RecursionError:
            break
    message = " ".join(str(first_error.message).removeprefix("parser error: ").split())
    if len(message) > 160:
        message = message[:159] + "…"
    raise NotParsed(f"Python accepts it, but libcst (jaxlint's parser) does not: {message}")


def parse_module(text: str) -> cst.Module:
    """`cst.parse_module(text)`, the same tree, without libcst's check of each node it builds.

    Every libcst node checks its fields when it is made (`cst.CSTNode.__post_init__` calls
    `_validate`), which is about a sixth of a parse; the nodes libcst's own parser makes from a
    text CPython accepted pass it by construction. The check is skipped while the parser runs and
    is back for every node made after it (fixes, other users of libcst in the process)."""
    if not _CAN_SKIP_VALIDATION:
        return cst.parse_module(text)
    with _validation_skipped():
        return cst.parse_module(text)


def _no_validation(self: cst.CSTNode) -> None:
    return None


_VALIDATING_POST_INIT = cst.CSTNode.__dict__.get("__post_init__")
#: skipping is only safe where `cst.CSTNode.__post_init__` is the one hook every node runs (no node
#: class has its own), as in the libcst versions jaxlint supports
_CAN_SKIP_VALIDATION = _VALIDATING_POST_INIT is not None and not any(
    "__post_init__" in vars(kind) for kind in _all_subclasses(cst.CSTNode))
_skipping_lock = threading.Lock()
#: parses running without the check (threads may parse at once: the first in turns it off, the
#: last out turns it back on)
_skipping = 0


@contextmanager
def _validation_skipped() -> Iterator[None]:
    global _skipping
    with _skipping_lock:
        if _skipping == 0:
            cst.CSTNode.__post_init__ = _no_validation
        _skipping += 1
    try:
        yield
    finally:
        with _skipping_lock:
            _skipping -= 1
            if _skipping == 0:
                cst.CSTNode.__post_init__ = _VALIDATING_POST_INIT


# -- rewrites that keep every position -----------------------------------------------------------
Rewrite = "tuple[str, list[tuple[Position, Position]]] | None"


def _final_newline(text: str, tree: ast.Module) -> Rewrite:
    """A newline after the last line (libcst wants one after a final backslash continuation)."""
    return text + "\n", []


def _form_feeds_in_indentation(text: str, tree: ast.Module) -> Rewrite:
    """Form feeds in an indentation made spaces, where CPython reads the same program from it
    (it restarts the indentation count after a form feed; libcst does not)."""
    if "\x0c" not in text:
        return None
    spans = []

    def blank(match: re.Match) -> str:
        line = text.count("\n", 0, match.start()) + 1
        start = match.start() - (text.rfind("\n", 0, match.start()) + 1)
        for offset, char in enumerate(match.group()):
            if char == "\x0c":
                spans.append((Position(line, start + offset + 1), Position(line, start + offset + 2)))
        return match.group().replace("\x0c", " ")

    rewritten = _INDENT_WITH_FORM_FEED.sub(blank, text)
    if not spans or not _same_program(rewritten, tree):
        return None
    return rewritten, spans


def _long_string_runs(text: str, tree: ast.Module) -> Rewrite:
    """Each run of more adjacent string literals than libcst takes made one literal over the same
    characters (its value is lost to the analysis; nothing else moves)."""
    runs = _string_runs(text)
    if not runs:
        return None
    starts = [0, *(match.end() for match in re.finditer("\n", text))]  # the tokenizer's lines
    pieces, spans, position = [], [], 0
    for (start_line, start_column), (end_line, end_column), prefix in runs:
        begin = starts[start_line - 1] + start_column
        end = starts[end_line - 1] + end_column
        body = re.sub(r"[^\r\n]", "x", text[begin + len(prefix) + 3:end - 3])
        pieces += [text[position:begin], prefix, "'''", body, "'''"]
        spans.append((Position(start_line, start_column + 1), Position(end_line, end_column + 1)))
        position = end
    pieces.append(text[position:])
    return "".join(pieces), spans


def _string_runs(text: str) -> list[tuple[tuple[int, int], tuple[int, int], str]]:
    """(start, end, prefix) of each run of more than MAX_ADJACENT_STRINGS adjacent string literals:
    positions as the tokenizer gives them (line, 0-based column); the prefix `b` for bytes."""
    runs = []
    count, first, last, prefix = 0, None, None, ""
    skipped = (tokenize.NL, tokenize.COMMENT)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    for token in tokens:
        if token.type == tokenize.STRING:
            if count == 0:
                first = token.start
                prefix = "b" if "b" in token.string.split("'")[0].split('"')[0].lower() else ""
            count += 1
            last = token.end
            continue
        if token.type in skipped and count:
            continue
        if count > MAX_ADJACENT_STRINGS:
            runs.append((first, last, prefix))
        count = 0
    return runs


def _same_program(text: str, tree: ast.Module) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            other = compile(text, "<rewritten>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return ast.dump(other) == ast.dump(tree)


def keeps_rewritten(finding: Finding, rewritten: list[tuple[Position, Position]]) -> Finding:
    """The finding without its fix when an edit of the fix touches a rewritten character."""
    fix = finding.fix
    if fix is None or not rewritten:
        return finding
    for edit in fix.edits:
        for start, end in rewritten:
            if edit.start < end and start < edit.end or edit.start == start:
                return replace(finding, fix=None)
    return finding
