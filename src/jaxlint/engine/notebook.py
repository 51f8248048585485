"""Jupyter notebooks: the code cells as Python source, and fixed sources written back into the JSON.

Reading. Every code cell becomes a `Cell` whose `source` is plain Python: lines that only IPython
understands (line magics, shell escapes, help requests, cell magics with a foreign body) are
replaced by placeholder statements. A placeholder keeps the line's indentation and takes exactly
one line, so every other line and column of the cell stays where it was, and it is a complete
statement (`pass` plus a comment), so a magic that is the only line of a block still parses.

Which lines are IPython lines is decided in two steps. A line-based test picks candidates (the
stripped text starts with `%` or `!`, is `name = !cmd`, or asks for help with `?`). Then the cell
is tokenized with the candidates masked, and a candidate survives only if its placeholder starts
a new logical line: a `%` line inside a multi-line string, inside brackets or after a backslash is
Python and is kept. Where the tokenizer gives up (a cell with a real syntax error) the remaining
candidates are masked on the line-based test alone. A masked line ending in a backslash takes the
lines it continues onto with it, as IPython does.

A line magic that runs a Python statement (`%time y = f(x)`, `%timeit f(x)`, `%prun`, `%debug`:
`magic_lines.py` says which, and reads their options as IPython does) is not masked but replaced by
its statement, at the magic's indentation: `y = f(x)`. Every rule then reads the statement, and the
columns of that line are shifted back to the cell's (`Cell.translations`). A statement that does not
compile on its own (a backslash continues it, it opens a bracket it does not close, it is `return`)
is masked, and so are all of a cell's statements when putting them in makes the cell fail to compile
where masking them does not.

Each placeholder and each statement put in a magic's place ends in a comment naming the line it
stands for (`pass  # jaxlint-masked:3`, `y = f(x)  # jaxlint-masked:4 %time timed`; the format is
`syntax/magics.py`'s, which the analysis reads), with a marker the cell's own text does not contain,
so `unmask` can find it again after a fix moved lines around.

Writing. `unmask` puts the masked lines back into a fixed source (a magic's statement that a fix
changed goes back after the magic and its options), and `write_notebook` replaces cell sources in the
JSON text. The JSON is written back only in the exact formatting the file
already had; when that formatting cannot be reproduced byte for byte, nothing is written.
"""
from __future__ import annotations

import io
import json
import re
import tokenize
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from ..syntax.magics import MASK_MARKER, magic_comment
from .magic_lines import PYTHON_CELL_MAGICS, cell_magic_timed, line_magic

_MARKER = MASK_MARKER
#: `files = !ls`, `a, b = %sx cmd`, `x = %env`: an assignment from a shell escape or a magic.
_ASSIGNED_ESCAPE = re.compile(r"^[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*[!%]")
#: `jnp.sum?`, `jnp.sum??`, `np.*load*?`: object help and wildcard search.
_HELP_SUFFIX = re.compile(r"^[\w.*]+(?:\(\))?\?{1,2}$")
_INDENT = re.compile(r"^[ \t]*")
_TOKENIZE_ERRORS = (tokenize.TokenError, SyntaxError)  # IndentationError is a SyntaxError
_SKIPPED = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING})


class NotebookError(Exception):
    """The file is not a notebook that can be read or written back; str(error) is one line."""


@dataclass(frozen=True)
class Cell:
    #: position in the notebook's list of cells, counting every cell (markdown and raw included)
    index: int
    #: the Python source, with IPython-only lines replaced by placeholders
    source: str
    #: the source exactly as stored (a list of lines is joined)
    original: str

    @cached_property
    def translations(self) -> dict[int, "Translation"]:
        """0-based line -> where the statement a line magic runs stands in `source` and in `original`."""
        return translations(self.source, self.original)


@dataclass(frozen=True)
class Translation:
    """A line magic's statement put in the magic's place: columns (from 0) `start` to `end` of the
    line in `source` are the statement, which starts at column `start + shift` of the line as stored."""

    start: int
    end: int
    shift: int

    def original_column(self, column: int) -> int | None:
        """The column (from 0) as stored of a column of the statement in `source`; None outside it."""
        return column + self.shift if self.start <= column <= self.end else None


# -- reading ------------------------------------------------------------------------------------
def read_notebook(text: str) -> list[Cell]:
    """The code cells of a notebook given its JSON text; [] for a notebook of another language."""
    notebook = _load(text)
    if not _is_python(notebook.get("metadata")):
        return []
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {index} is not a JSON object")
        if cell.get("cell_type") != "code":
            continue
        original = _source_text(cell.get("source", ""), index)
        cells.append(Cell(index, mask(original), original))
    return cells


def _load(text: str) -> dict:
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise NotebookError("not valid JSON: nested too deeply") from None
    if not isinstance(notebook, dict):
        raise NotebookError("not a notebook: the JSON is not an object")
    if not isinstance(notebook.get("cells"), list):
        if "worksheets" in notebook:
            raise NotebookError("not a notebook this tool reads: nbformat 3 (only nbformat 4 is read)")
        raise NotebookError("not a notebook: no list of cells (only nbformat 4 notebooks are read)")
    return notebook


def _is_python(metadata: object) -> bool:
    """False when the notebook says it is in a language other than Python."""
    if not isinstance(metadata, dict):
        return True
    for section, key in (("kernelspec", "language"), ("language_info", "name")):
        entry = metadata.get(section)
        language = entry.get(key) if isinstance(entry, dict) else None
        if isinstance(language, str) and language.strip() and not re.fullmatch(
                r"i?python[\d.]*", language.strip().lower()):
            return False
    return True


def _source_text(source: object, index: int) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    raise NotebookError(f"cell {index}: source is neither a string nor a list of strings")


# -- masking ------------------------------------------------------------------------------------
def marker_for(original: str) -> str:
    """The placeholder marker for a cell: one that its own text does not already contain."""
    marker, number = _MARKER, 0
    while marker + ":" in original:
        number += 1
        marker = f"{_MARKER}{number}"
    return marker


def mask(source: str) -> str:
    """`source` with its IPython-only lines replaced by placeholders, line for line."""
    lines = source.split("\n")
    marker = marker_for(source)
    # Comments may stand above a cell magic: Colab's form lines (`# @title ...`) do, and the
    # notebook runs the cell with the magic all the same.
    first = next((number for number, line in enumerate(lines)
                  if line.strip() and not line.lstrip().startswith("#")), None)
    forced: set[int] = set()
    cell_magic = None
    if first is not None and lines[first].strip().startswith("%%"):
        words = lines[first].strip()[2:].split()
        if not words or words[0] not in PYTHON_CELL_MAGICS:
            # The body may be bash, HTML, another language: none of it is Python. The
            # placeholders go to column 0 since the body's indentation means nothing here.
            return "\n".join(_placeholder(line, number, marker, "") if line.strip() else line
                             for number, line in enumerate(lines))
        forced.add(first)
        cell_magic = (first, "%%" + words[0], cell_magic_timed(lines[first].strip()))
    candidates = [number for number, line in enumerate(lines) if number not in forced and _is_ipython_line(line)]
    heads = forced | _confirmed(lines, candidates, forced, marker)
    masked = _masked(lines, heads, marker)
    if cell_magic is not None:
        number, name, timed = cell_magic
        masked[number] = _placeholder(lines[number], number, marker, _INDENT.match(lines[number]).group(), name, timed)
    return "\n".join(_with_statements(lines, masked, heads - forced, marker))


def _with_statements(lines: list[str], masked: list[str], heads: set[int], marker: str) -> list[str]:
    """`masked` with each line magic that runs a statement replaced by that statement, where it
    compiles on its own and the cell compiles with the statements in it as well as without."""
    statements = {}
    for number in heads:
        line = lines[number].rstrip("\r")
        magic = line_magic(line)
        if magic is None or line.rstrip().endswith("\\"):
            continue  # not one that runs a statement, or continued on the next line (masked with it)
        statement = line[magic.start:].rstrip(" \t")
        if not statement or not _compiles(statement):
            continue
        ending = "\r" if lines[number].endswith("\r") else ""
        statements[number] = (f"{_INDENT.match(line).group()}{statement}  "
                              f"{magic_comment(marker, number, '%' + magic.name, magic.timed)}{ending}")
    if not statements:
        return masked
    translated = [statements.get(number, line) for number, line in enumerate(masked)]
    if not _compiles("\n".join(translated)) and _compiles("\n".join(masked)):
        return masked
    return translated


def _compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `"\d"` and the like: the user's code, not jaxlint's to report
            compile(text, "<cell>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def _masked(lines: list[str], heads: set[int], marker: str) -> list[str]:
    """`lines` with the given lines replaced by placeholders, and so are the lines that a
    masked line continues onto with a final backslash (IPython joins those into the magic)."""
    out = list(lines)
    for head in sorted(heads):
        indent = _INDENT.match(lines[head]).group()
        number = head
        while True:
            out[number] = _placeholder(lines[number], number, marker, indent)
            if not lines[number].rstrip().endswith("\\") or number + 1 >= len(lines):
                break
            number += 1
    return out


def _is_ipython_line(line: str) -> bool:
    """The line-based test: could this line be IPython syntax if it starts a statement?"""
    stripped = line.strip()
    if not stripped:
        return False
    if stripped[0] in "%!?":
        return True
    return bool(_HELP_SUFFIX.match(stripped) or _ASSIGNED_ESCAPE.match(line))


def _confirmed(lines: list[str], candidates: list[int], forced: set[int], marker: str) -> set[int]:
    """The candidates whose placeholder starts a logical line, so they are not inside Python.

    The cell is tokenized with every remaining candidate masked. The first candidate found not
    to start a logical line (it is in a string, in brackets, after a backslash) is given back its
    text and the cell is tokenized again: its own text may close a bracket or a string and so
    change how every later line reads. Lines the tokenizer never reached (it stopped on an
    error) keep the line-based verdict.
    """
    remaining = list(candidates)
    while remaining:
        starts, reached = _logical_line_starts("\n".join(_masked(lines, forced | set(remaining), marker)))
        rejected = next((number for number in remaining
                         if number < reached and (number, _indent(lines[number])) not in starts), None)
        if rejected is None:
            break
        remaining.remove(rejected)
    return set(remaining)


def _logical_line_starts(text: str) -> tuple[set[tuple[int, int]], int]:
    """(0-based line, column) of the first token of each logical line, and the number of lines
    the tokenizer got through: all of them unless it raised, else up to its last token."""
    starts: set[tuple[int, int]] = set()
    at_start, last_row = True, 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
            last_row = token.end[0]
            if token.type in _SKIPPED:
                continue
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                at_start = True
                continue
            if at_start:
                starts.add((token.start[0] - 1, token.start[1]))
                at_start = False
    except _TOKENIZE_ERRORS:
        # An unterminated string, a bad dedent, a character the tokenizer refuses: what it read
        # before that is sound, the lines after it are left to the line-based test.
        return starts, last_row
    return starts, text.count("\n") + 1


def _indent(line: str) -> int:
    return len(_INDENT.match(line).group())


def _placeholder(line: str, number: int, marker: str, indent: str, magic: str | None = None,
                 timed: bool = False) -> str:
    ending = "\r" if line.endswith("\r") else ""
    return f"{indent}pass  {magic_comment(marker, number, magic, timed)}{ending}"


def translations(source: str, original: str) -> dict[int, Translation]:
    """The lines of `source` (a masked cell) that hold a line magic's statement, read off the two
    texts: such a line is the statement at the magic's indentation and its marker comment, and the
    line as stored ends in the same statement."""
    if _MARKER not in source:
        return {}
    marker = marker_for(original)
    pattern = re.compile(rf"^([ \t]*)(.*?)  # {re.escape(marker)}:(\d+) %\w+(?: timed)?\r?$")
    found = {}
    originals = original.split("\n")
    for number, line in enumerate(source.split("\n")):
        match = pattern.match(line)
        if match is None or int(match.group(3)) != number or number >= len(originals) or match.group(2) == "pass":
            continue
        stored = originals[number].rstrip("\r").rstrip(" \t")
        statement = match.group(2)
        if not stored.endswith(statement):
            continue
        start = len(match.group(1))
        found[number] = Translation(start, start + len(statement), len(stored) - len(statement) - start)
    return found


# -- unmasking ----------------------------------------------------------------------------------
def unmask(cell: Cell, fixed_source: str) -> str:
    """The fixed source with the masked IPython lines put back exactly as they were stored.

    When the fix kept the number of lines and every masked line as it was, lines are put back
    by position. Otherwise each one is found by its marker comment, which names the line it stands
    for. A placeholder whose indentation a fix changed gets the original line re-indented the
    same way. A magic's statement that a fix changed goes back after the magic and its options as
    stored, with what the fix put after the marker comment (a `# noqa`). Raises NotebookError if a
    fix dropped a marker: the IPython line would be lost.
    """
    originals = cell.original.split("\n")
    masked_lines = cell.source.split("\n")
    masked = {number: line for number, line in enumerate(masked_lines)
              if number < len(originals) and line != originals[number]}
    if not masked:
        return fixed_source
    fixed = fixed_source.split("\n")
    if len(fixed) == len(masked_lines) and all(fixed[number] == line for number, line in masked.items()):
        for number in masked:
            fixed[number] = originals[number]
        return "\n".join(fixed)
    marker = re.escape(marker_for(cell.original))
    pattern = re.compile(rf"^([ \t]*)(.*?)  # {marker}:(\d+)((?: %%?[\w.]+(?: timed)?)?)(.*?)(\r?)$")
    translations = cell.translations
    restored: set[int] = set()
    for position, line in enumerate(fixed):
        match = pattern.match(line)
        number = int(match.group(3)) if match else -1
        if number not in masked or number in restored:
            continue
        indent, body, tail = match.group(1), match.group(2), match.group(5)
        old_indent = _INDENT.match(masked[number]).group()
        original = originals[number]
        translation = translations.get(number)
        if translation is None:
            if body != "pass" or tail:
                continue
        elif body + tail != masked[number][translation.start:translation.end] or indent != old_indent:
            if not body:
                continue
            stored = original.rstrip("\r")
            head = stored[:translation.start + translation.shift]
            original = head + body + tail + original[len(stored):]
        if indent != old_indent and original.startswith(old_indent):
            original = indent + original[len(old_indent):]
        fixed[position] = original
        restored.add(number)
    lost = sorted(set(masked) - restored)
    if lost:
        raise NotebookError(f"cell {cell.index}: a fix removed the IPython line {lost[0] + 1}; not writing fixes")
    return "\n".join(fixed)


# -- writing back -------------------------------------------------------------------------------
def write_notebook(text: str, new_sources: dict[int, str]) -> str:
    """The notebook with the given cells' sources replaced and every other byte kept.

    A cell stored as a list of lines stays a list (split after each newline, as Jupyter does), a
    string stays a string. Raises NotebookError when the file's JSON formatting cannot be
    reproduced exactly, or when an index is not a cell of the notebook.
    """
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom):]
    notebook = _load(body)
    dump = _serializer_for(notebook, body)
    cells = notebook["cells"]
    for index, source in sorted(new_sources.items()):
        if not (isinstance(index, int) and 0 <= index < len(cells) and isinstance(cells[index], dict)):
            raise NotebookError(f"no cell {index} in the notebook; not writing fixes")
        cell = cells[index]
        cell["source"] = _split_lines(source) if isinstance(cell.get("source"), list) else source
    return bom + dump(notebook)


def _split_lines(source: str) -> list[str]:
    """Lines each ending in "\\n" except the last; only "\\n" splits, like Jupyter's own lists."""
    parts = source.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _serializer_for(notebook: dict, text: str) -> Callable[[dict], str]:
    """A function writing JSON exactly as `text` is written, found by trying the possible formats."""
    for dump in _candidate_serializers(text):
        if dump(notebook) == text:
            return dump
    raise NotebookError("cannot reproduce the notebook's JSON formatting; not writing fixes")


def _candidate_serializers(text: str):
    """The formats `text` could have been written in.

    Most choices can be read off the text: the indentation from its second line (an indented
    dump always starts `{`, newline, the indent, then a key), the line ending and final newline
    from its end (JSON strings escape their newlines, so raw ones are layout), and whether
    non-ASCII characters were escaped from whether any appear. Key order and, for one-line JSON,
    the separators are tried both ways.
    """
    crlf = "\r\n" in text
    line_end = "\r\n" if crlf else "\n"
    end = line_end if text.endswith(line_end) else ""
    indented = re.match(r"\{\r?\n( +|\t+)\"", text)
    indent = indented.group(1) if indented else None
    separator_sets = [(",", ": ")] if indent is not None else [(", ", ": "), (",", ":")]
    for separators in separator_sets:
        for sort_keys in (True, False):
            yield _serializer(indent, separators, sort_keys, text.isascii(), end, crlf)


def _serializer(indent: str | None, separators: tuple[str, str], sort_keys: bool, ensure_ascii: bool,
                end: str, crlf: bool) -> Callable[[dict], str]:
    def dump(data: dict) -> str:
        out = json.dumps(data, indent=indent, separators=separators, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
        if crlf:
            out = out.replace("\n", "\r\n")
        return out + end
    return dump


def cell_name(index: int) -> str:
    """How a message names the notebook cell at `index` (0-based, markdown included): counted from 1,
    as the text output's positions and the notebook's reader count, saying so, since JSON's `cell`
    is the 0-based index."""
    return f"cell {index + 1} (counted from 1)"
