"""Where nodes are in the source: the ranges libcst's `PositionProvider` gives, for a few nodes only.

libcst has no positions on its nodes: `PositionProvider` computes them by generating the code of
the whole module, building a `CodeRange` for every node, and then (through `MetadataWrapper`)
visiting the whole tree once more. A file's findings name a handful of nodes, so this generates the
code with a state of its own that

* keeps only the current line and column (split on newlines only for tokens that hold one),
* records ranges only for the nodes asked for, and for the children their syntactic ranges are
  hoisted from (`record_syntactic_position(..., start_node=, end_node=)`, which libcst always calls
  before it generates those children),
* stops generating as soon as the last node asked for is done.

The ranges are the same as `PositionProvider`'s, by construction: the same `_codegen` calls emit the
same tokens and the same records, in the same order. `tests/test_positions.py` checks them against
`PositionProvider` for every reported node of the fixtures.
"""
from __future__ import annotations

import re
from typing import Iterable

import libcst as cst

#: libcst's own definition of a line break when it counts lines (`position_provider.NEWLINE_RE`).
_NEWLINE = re.compile(r"\r\n?|\n")

#: ((start line, start column), (end line, end column)): lines 1-based, columns 0-based characters,
#: the end exclusive, as in libcst's `CodeRange`.
Span = tuple[tuple[int, int], tuple[int, int]]


class _Done(Exception):
    """Raised out of code generation once every node asked for has its range."""


class _Unrecorded:
    """The context manager handed out for nodes whose syntactic range nobody asked for."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info) -> None:
        return None


_UNRECORDED = _Unrecorded()


class _Recorded:
    """`record_syntactic_position` for a node whose range is wanted (mirrors libcst's)."""

    __slots__ = ("state", "key", "start_node", "end_node", "start")

    def __init__(self, state: "_PositionState", key: int, start_node, end_node) -> None:
        self.state = state
        self.key = key
        self.start_node = start_node
        self.end_node = end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:
            return None
        state = self.state
        start = state.spans[id(self.start_node)][0] if self.start_node is not None else self.start
        end = state.spans[id(self.end_node)][1] if self.end_node is not None else (state.line, state.column)
        state.spans[self.key] = (start, end)


class _PositionState:
    """Stands in for libcst's `CodegenState` during `_codegen`: same interface, positions only."""

    __slots__ = ("default_indent", "default_newline", "indent_tokens", "tokens", "line", "column",
                 "wanted", "pending", "spans", "starts", "stops")

    def __init__(self, module: cst.Module, nodes: Iterable[cst.CSTNode], stops: bool = True) -> None:
        self.default_indent = module.default_indent
        self.default_newline = module.default_newline
        self.indent_tokens: list[str] = []
        self.tokens: list[str] = []
        self.line = 1
        self.column = 0
        #: ids of the nodes asked for that are not generated yet
        self.pending = {id(node) for node in nodes}
        #: ids of the nodes whose ranges are recorded: those asked for, and those hoisted from
        self.wanted = set(self.pending)
        self.spans: dict[int, Span] = {}
        self.starts: dict[int, tuple[int, int]] = {}
        #: whether generation stops once the last node asked for is done
        self.stops = stops

    # -- CodegenState -----------------------------------------------------------------------------
    def increase_indent(self, value: str) -> None:
        self.indent_tokens.append(value)

    def decrease_indent(self) -> None:
        self.indent_tokens.pop()

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.wanted:
            self.starts[key] = (self.line, self.column)

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.wanted:
            start = self.starts.pop(key)
            if key not in self.spans:  # a syntactic range recorded inside takes precedence
                self.spans[key] = (start, (self.line, self.column))
            pending = self.pending
            if key in pending:
                pending.discard(key)
                if not pending and self.stops:
                    raise _Done

    def pop_trailing_newline(self) -> None:
        # as libcst's: the token goes, the position does not move back
        if self.tokens:
            self.tokens.pop()

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None):
        key = id(node)
        if key not in self.wanted:
            return _UNRECORDED
        if start_node is not None:
            self.wanted.add(id(start_node))
        if end_node is not None:
            self.wanted.add(id(end_node))
        return _Recorded(self, key, start_node, end_node)


def node_spans(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, Span]:
    """The range of each node (keyed by `id(node)`), as `PositionProvider` computes it for `module`.

    The mapping may hold a few more nodes: those the ranges of the asked ones are hoisted from.

    Raises KeyError, as `PositionProvider`'s mapping would, for a node that is not in the module.
    """
    nodes = list(nodes)
    state = _PositionState(module, nodes)
    if state.pending:
        try:
            module._codegen(state)  # the entry point PositionProvider uses too
        except _Done:
            pass
    for node in nodes:
        if id(node) not in state.spans:
            raise KeyError(node)
    return state.spans


def statement_spans(module: cst.Module, nodes: Iterable[cst.CSTNode], text: str,
                    statement_of: dict[int, cst.CSTNode]) -> dict[int, Span]:
    """`node_spans`, generating the code of only the statements of the module's body that hold the
    nodes (`statement_of`: id(node) -> that statement), not of everything before them.

    `text` is the module's code (the text libcst parsed). A statement of the module's body starts a
    line of it, so its code, found at exactly one start of a line, is the statement's place: the
    candidates are the lines holding the rarest line of that code (`_TextLines`), which keeps the
    cost linear in the text and in the number of statements. Otherwise (a statement repeated word
    for word, a node of no statement), the whole module's code is generated, as `node_spans` does.
    """
    nodes = list(nodes)
    held: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] = {}
    for node in nodes:
        statement = statement_of.get(id(node))
        if statement is None:
            return node_spans(module, nodes)
        held.setdefault(id(statement), (statement, []))[1].append(node)
    lines = _TextLines(text)
    spans: dict[int, Span] = {}
    for statement, inside in held.values():
        state = _PositionState(module, inside, stops=False)  # the whole statement: its lines are whole
        statement._codegen(state)
        lines_before = lines.only_start_of(''.join(state.tokens))
        if lines_before is None:
            return node_spans(module, nodes)
        for key, ((start_line, start_column), (end_line, end_column)) in state.spans.items():
            spans[key] = ((start_line + lines_before, start_column), (end_line + lines_before, end_column))
    if any(id(node) not in spans for node in nodes):
        return node_spans(module, nodes)
    return spans


class _TextLines:
    """The lines of a text (split as libcst counts lines), indexed by their content, to find where a
    piece of code made of whole lines starts without searching the text from its start."""

    #: candidates past this many: the code is too common to place this way (copies of one statement)
    MOST_CANDIDATES = 8

    __slots__ = ("text", "offsets", "lines_with")

    def __init__(self, text: str) -> None:
        self.text = text
        #: the offset in the text where each line starts
        self.offsets = [0]
        offsets = self.offsets
        for separator in _NEWLINE.finditer(text):
            offsets.append(separator.end())
        #: a line's content (its line break left out) -> the 0-based numbers of the lines holding it
        self.lines_with: dict[str, list[int]] = {}
        lines_with = self.lines_with
        for number, content in enumerate(_NEWLINE.split(text)):
            found = lines_with.get(content)
            if found is None:
                lines_with[content] = [number]
            elif len(found) <= self.MOST_CANDIDATES:
                found.append(number)  # past the bound the exact count no longer matters

    def only_start_of(self, code: str) -> int | None:
        """The 0-based number of the line where `code` starts, when it starts exactly one line of the
        text; None when it starts none, several, or too many lines hold each of its lines to tell."""
        if not code:
            return None
        segments = _NEWLINE.split(code)
        if len(segments) > 1 and not segments[-1]:
            segments.pop()  # the code ends with a line break: no line after it
        rarest = min(range(len(segments)), key=lambda i: len(self.lines_with.get(segments[i], ())))
        candidates = self.lines_with.get(segments[rarest], ())
        if not candidates or len(candidates) > self.MOST_CANDIDATES:
            return None
        found = None
        for number in candidates:
            first = number - rarest
            if first >= 0 and self.text.startswith(code, self.offsets[first]):
                if found is not None:
                    return None
                found = first
        return found
