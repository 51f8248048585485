"""Positions between jaxlint and a language client: jaxlint counts lines and columns from 1, columns
in characters (code points); the Language Server Protocol counts from 0, columns in the code units
of the encoding the client and the server agreed on (UTF-16 unless both said otherwise).

Lines are split where the protocol and Python's tokenizer both split them: at `\\r\\n`, `\\r` and
`\\n` (never at a form feed or a Unicode line separator, which `str.splitlines` would take)."""
from __future__ import annotations

from ..model.finding import Position
from ..syntax.noqa import source_lines

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def units(text: str, encoding: str) -> int:
    """The length of `text` in the code units of `encoding`."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


class LineIndex:
    """One text's lines, to give jaxlint's positions in the client's units."""

    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.lines = source_lines(text)
        self.encoding = encoding

    def to_client(self, position: Position) -> tuple[int, int]:
        """A jaxlint position as (line, character) from 0 in the client's units; a position past
        the end of the text is the end of the text."""
        number = position.line - 1
        if number >= len(self.lines):
            return len(self.lines) - 1, units(self.lines[-1], self.encoding)
        number = max(number, 0)
        line = self.lines[number]
        return number, units(line[: max(position.column - 1, 0)], self.encoding)
