"""Jupyter notebooks: the code cells as Python source, and fixed sources written back into the JSON.

IPython-only lines (magics, shell escapes, help) are replaced by placeholders that keep the line
count and indentation, so positions in the rest of the cell stay exact and libcst can parse it.
"""
from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass

PLACEHOLDER = "pass  # jaxlint: ipython line {}"
_PLACEHOLDER_LINE = re.compile(r"^(\s*)pass  # jaxlint: ipython line (\d+)$")
#: Cell magics whose body is Python: only the magic line itself is masked.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit"})
_SHELL_ASSIGNMENT = re.compile(r"^\s*[\w.,\s]+=\s*[!%]")
_HELP = re.compile(r"^[\w.]+(\(\))?\?{1,2}$")


class NotebookError(Exception):
    """The file is not a notebook that can be read; the message is one line."""


@dataclass(frozen=True)
class Cell:
    #: position in the notebook's list of cells, counting every cell
    index: int
    #: the Python source with IPython-only lines masked
    source: str
    #: the source exactly as stored
    original: str


def read_notebook(text: str) -> list[Cell]:
    notebook = _load(text)
    if not _is_python(notebook):
        return []
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {index} is not an object")
        if cell.get("cell_type") != "code":
            continue
        original = _source_text(cell.get("source", ""), index)
        cells.append(Cell(index, mask(original), original))
    return cells


def _load(text: str) -> dict:
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    if not isinstance(notebook, dict):
        raise NotebookError("not a notebook: the JSON is not an object")
    if not isinstance(notebook.get("cells"), list):
        raise NotebookError("not a notebook: no list of cells (only nbformat 4 notebooks are read)")
    return notebook


def _is_python(notebook: dict) -> bool:
    metadata = notebook.get("metadata") or {}
    if not isinstance(metadata, dict):
        return True
    for language in ((metadata.get("kernelspec") or {}).get("language"), (metadata.get("language_info") or {}).get("name")):
        if isinstance(language, str) and language.lower() not in ("python", "python3", "ipython"):
            return False
    return True


def _source_text(source, index: int) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    raise NotebookError(f"cell {index}: source is neither a string nor a list of strings")


# -- masking ------------------------------------------------------------------------------------
def mask(source: str) -> str:
    lines = source.split("\n")
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        magic = first[2:].split()[0] if first[2:].split() else ""
        if magic not in PYTHON_CELL_MAGICS:
            return "\n".join(_placeholder(line, i) if line.strip() else line for i, line in enumerate(lines))
        lines[0] = _placeholder(lines[0], 0)
    inside_strings = _string_interior_lines(lines)
    depth = 0
    for number, line in enumerate(lines):
        continuation = depth > 0 or (number > 0 and lines[number - 1].rstrip().endswith("\\"))
        if number not in inside_strings and not continuation and _is_ipython_line(line):
            lines[number] = _placeholder(line, number)
        elif number not in inside_strings:
            depth = max(0, depth + _bracket_balance(line))
    return "\n".join(lines)


def _bracket_balance(line: str) -> int:
    """Opening minus closing brackets on a line, ignoring strings and comments (roughly)."""
    code = re.sub(r"(\"[^\"]*\"|'[^']*')", "", line).split("#", 1)[0]
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


def _is_ipython_line(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    if stripped[0] in "%!" or stripped.startswith("?"):
        return True
    if _HELP.match(stripped):
        return True
    return bool(_SHELL_ASSIGNMENT.match(line))


def _placeholder(line: str, number: int) -> str:
    indent = line[: len(line) - len(line.lstrip())]
    return indent + PLACEHOLDER.format(number)


def _string_interior_lines(lines: list[str]) -> set[int]:
    """Line numbers (0-based) that start inside a multi-line string: never masked."""
    # Magic lines break the tokenizer, so tokenize a copy where every candidate is neutralised.
    probe = [("pass" if _is_ipython_line(line) else line) for line in lines]
    interior: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO("\n".join(probe) + "\n").readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                interior.update(range(token.start[0], token.end[0]))  # lines after the first, 0-based
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return interior


def unmask(cell: Cell, fixed_source: str) -> str:
    """The fixed source with the masked IPython lines put back as they were."""
    originals = cell.original.split("\n")
    restored = []
    for line in fixed_source.split("\n"):
        match = _PLACEHOLDER_LINE.match(line)
        if match and int(match.group(2)) < len(originals):
            restored.append(originals[int(match.group(2))])
        else:
            restored.append(line)
    return "\n".join(restored)


# -- writing back -------------------------------------------------------------------------------
def write_notebook(text: str, new_sources: dict[int, str]) -> str:
    """The notebook with the given cells' sources replaced and everything else kept byte for byte."""
    notebook = _load(text)
    dump = _serializer_for(notebook, text)
    for index, source in new_sources.items():
        cell = notebook["cells"][index]
        if isinstance(cell.get("source"), list):
            cell["source"] = source.splitlines(keepends=True)
        else:
            cell["source"] = source
    return dump(notebook)


def _serializer_for(notebook: dict, text: str):
    for indent in (1, 2, 4, None):
        for sort_keys in (True, False):
            for ensure_ascii in (False, True):
                for newline in ("\n", ""):
                    def dump(data, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, newline=newline):
                        separators = (",", ": ") if indent is not None else (", ", ": ")
                        return json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii,
                                          separators=separators) + newline
                    if dump(notebook) == text:
                        return dump
    raise NotebookError("cannot reproduce the notebook's JSON formatting; not writing fixes")
