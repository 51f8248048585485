"""Where a line and column of a notebook cell stand in the notebook's own file: its JSON text.

Findings in a notebook name a cell and a line and column in it. A report that can only point at
a line of a file (SARIF, read by code-scanning services that show the file as stored) needs the
place in the JSON text where that character of the cell's source is written: the line of the
`"source"` string (or of the string of the list that holds it) and the column inside it, escapes
counted (`\\"`, `\\u00e9` take more columns than the character they write).
"""
from __future__ import annotations

import bisect
import json
from collections.abc import Callable

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"


class NotebookPositions:
    """The positions, in a notebook's JSON text, of the characters of its cells' sources."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._line_starts = [0]
        self._line_starts.extend(index + 1 for index, char in enumerate(text) if char == "\n")
        #: cell index -> for each character of its source, its offset in the text (and one past the end)
        self._offsets: dict[int, list[int]] = {}
        #: cell index -> the offsets in its source where its lines start
        self._source_lines: dict[int, list[int]] = {}
        try:
            self._scan()
        except (ValueError, IndexError, RecursionError):
            self._offsets.clear()

    def position(self, cell: int, line: int, column: int) -> tuple[int, int] | None:
        """The (line, column) in the JSON text, both from 1, of the character at `line`, `column`
        (from 1) of cell `cell`'s source; a column past the end of its line stands at the line's end.
        None when the notebook does not have that cell."""
        offsets = self._offsets.get(cell)
        starts = self._source_lines.get(cell)
        if offsets is None or not starts or line < 1:
            return None
        line = min(line, len(starts))
        line_end = starts[line] - 1 if line < len(starts) else len(offsets) - 1
        character = min(starts[line - 1] + max(column, 1) - 1, line_end)
        offset = offsets[character]
        text_line = bisect.bisect_right(self._line_starts, offset)
        return text_line, offset - self._line_starts[text_line - 1] + 1

    # -- reading the JSON text for the places of the sources -------------------------------------
    def _scan(self) -> None:
        index = self._skip_space(1 if self.text.startswith("\ufeff") else 0)
        if self.text[index] == "{":
            self._object(index, lambda key, value: self._cells(value) if key == "cells" and self.text[value] == "["
                         else self._skip_value(value))

    def _object(self, index: int, member: Callable[[str, int], int]) -> int:
        """Reads the object at `index`, each member's value by `member(key, its offset)`, which
        returns where the value ends; returns where the object ends."""
        index = self._skip_space(index + 1)
        while self.text[index] != "}":
            key, index = _DECODER.raw_decode(self.text, index)
            index = self._skip_space(index)
            if self.text[index] != ":":
                raise ValueError("not an object")
            index = self._skip_space(member(key, self._skip_space(index + 1)))
            if self.text[index] == ",":
                index = self._skip_space(index + 1)
        return index + 1

    def _cells(self, index: int) -> int:
        number = 0
        index = self._skip_space(index + 1)
        while self.text[index] != "]":
            cell = number
            if self.text[index] == "{":
                index = self._object(index, lambda key, value: self._source(cell, value) if key == "source"
                                     else self._skip_value(value))
            else:
                index = self._skip_value(index)
            number += 1
            index = self._skip_space(index)
            if self.text[index] == ",":
                index = self._skip_space(index + 1)
        return index + 1

    def _skip_value(self, index: int) -> int:
        return _DECODER.raw_decode(self.text, index)[1]

    def _source(self, cell: int, index: int) -> int:
        offsets: list[int] = []
        if self.text[index] == '"':
            end = closing = self._string(index, offsets)
        elif self.text[index] == "[":
            end = closing = self._skip_space(index + 1)
            while self.text[end] != "]":
                end = closing = self._string(end, offsets)
                end = self._skip_space(end)
                if self.text[end] == ",":
                    end = self._skip_space(end + 1)
            end += 1
        else:
            return _DECODER.raw_decode(self.text, index)[1]
        offsets.append(closing - 1)  # one past the last character: at the closing quote
        self._offsets[cell] = offsets
        source = "".join(_DECODER.raw_decode(self.text, index)[0]) if self.text[index] == "[" \
            else _DECODER.raw_decode(self.text, index)[0]
        self._source_lines[cell] = [0, *(at + 1 for at, char in enumerate(source) if char == "\n")]
        return end

    def _string(self, index: int, offsets: list[int]) -> int:
        """Reads the JSON string at `index`, noting the offset of each character it holds."""
        if self.text[index] != '"':
            raise ValueError("not a string")
        index += 1
        text = self.text
        while text[index] != '"':
            offsets.append(index)
            if text[index] != "\\":
                index += 1
                continue
            if text[index + 1] == "u":
                code = int(text[index + 2:index + 6], 16)
                index += 6
                if 0xD800 <= code < 0xDC00 and text.startswith("\\u", index) \
                        and 0xDC00 <= int(text[index + 2:index + 6], 16) < 0xE000:
                    index += 6  # a surrogate pair writes one character
            else:
                index += 2
        return index + 1

    def _skip_space(self, index: int) -> int:
        while self.text[index] in _WHITESPACE:
            index += 1
        return index
