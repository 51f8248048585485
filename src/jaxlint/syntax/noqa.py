"""`# noqa` and `# noqa: CODES` on the reported line, read the way flake8 reads them; `# jaxlint:
noqa` and `# jaxlint: noqa: CODES` on a line of their own, for the whole file; adding
`# noqa: CODES` comments to the lines of findings (`--add-noqa`); and the directives of a text
with the place of each code, for the report of those that suppress nothing (JAX001)."""
from __future__ import annotations

import re
import tokenize
from dataclasses import dataclass

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
#: A line break as Python's tokenizer (and libcst, and every position jaxlint reports) counts it:
#: `str.splitlines` also breaks at form feeds, vertical tabs and Unicode separators.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """The lines of a source text, numbered as findings number them (line N is item N - 1)."""
    return _LINE_BREAK.split(text)


#: `# jaxlint: noqa` / `# jaxlint: noqa: JAX101, JAX3` alone on a line: the whole file
FILE_NOQA = re.compile(r"^\s*#\s*jaxlint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$",
                       re.IGNORECASE)


def file_suppressed(lines: list[str]) -> "frozenset[str] | bool":
    """What `# jaxlint: noqa` lines suppress in the whole file: True for everything, else the code
    prefixes named (upper case; empty when there is no such line)."""
    codes: set[str] = set()
    for line in lines:
        if "jaxlint" not in line.lower():
            continue
        match = FILE_NOQA.match(line)
        if match is None:
            continue
        if not match.group("codes"):
            return True
        codes.update(code.upper() for code in _CODE.findall(match.group("codes")))
    return frozenset(codes)


def suppressed_in_file(code: str, file_codes: "frozenset[str] | bool") -> bool:
    if file_codes is True:
        return True
    return any(code.upper().startswith(prefix) for prefix in file_codes)


def with_noqa(line: str, codes: list[str]) -> str:
    """The line with `# noqa: CODES` at its end, or the codes added to the `# noqa: ...` it has
    (a bare `# noqa` already suppresses everything: the line is returned as it is)."""
    match = NOQA.search(line)
    if match is not None:
        if not match.group("codes"):
            return line
        present = [c.upper() for c in _CODE.findall(match.group("codes"))]
        added = [c for c in codes if not any(c.startswith(p) for p in present)]
        if not added:
            return line
        return line[:match.end()] + ", " + ", ".join(added) + line[match.end():]
    body = line.rstrip(" \t")
    return f"{body}  # noqa: {', '.join(codes)}"


def suppressed(code: str, lines: list[str], line: int) -> bool:
    if not 1 <= line <= len(lines):
        return False
    match = NOQA.search(lines[line - 1])
    if match is None:
        return False
    codes = match.group("codes")
    if not codes:
        return True
    return any(code.upper().startswith(c.upper()) for c in _CODE.findall(codes))


@dataclass(frozen=True)
class NoqaCode:
    """One code of a directive as written (`jax101`), its upper-case form, and its columns (from 0)."""

    written: str
    start: int
    end: int

    @property
    def code(self) -> str:
        return self.written.upper()


@dataclass(frozen=True)
class NoqaDirective:
    """A `# noqa: CODES` comment (or, with `file_level`, a `# jaxlint: noqa: CODES` line) that
    names codes; columns from 0 in its line, `end` after the last code."""

    line: int
    start: int
    end: int
    codes: tuple[NoqaCode, ...]
    file_level: bool


def noqa_directives(text: str) -> list[NoqaDirective]:
    """The directives with codes in `text` that are comments, each where `suppressed` and
    `file_suppressed` read it: a `# noqa` that is text in a string literal suppresses findings
    as it does for flake8, but it is not listed here, and neither is a bare `# noqa`, which names
    no code. Empty when the text cannot be tokenized."""
    if "noqa" not in text.lower():
        return []
    lines = source_lines(text)
    candidates = [number for number, line in enumerate(lines, start=1) if "noqa" in line.lower()]
    comments = _comment_columns(text, candidates[-1])
    found = []
    for number in candidates:
        line, column = lines[number - 1], comments.get(number)
        if column is None:
            continue
        match = FILE_NOQA.match(line)
        file_level = match is not None
        if match is None:
            match = NOQA.search(line)
            # the first `# noqa` of the line is the one that suppresses: it must be the comment
            if match is None or match.start() < column:
                continue
        elif line.index("#") != column:
            continue
        if match.group("codes") is None:
            continue
        offset = match.start("codes")
        codes = tuple(NoqaCode(m.group(), offset + m.start(), offset + m.end())
                      for m in _CODE.finditer(match.group("codes")))
        found.append(NoqaDirective(number, column if file_level else match.start(), match.end("codes"), codes,
                                   file_level))
    return found


def _comment_columns(text: str, last_line: int) -> dict[int, int]:
    """The column where a comment starts, by line, up to `last_line`; {} when the text does not
    tokenize (the tokenizer then cannot say what is a comment)."""
    pieces = iter(_LINE_PIECE.findall(text))
    columns: dict[int, int] = {}
    try:
        for token in tokenize.generate_tokens(lambda: next(pieces, "")):
            if token.type == tokenize.COMMENT:
                columns[token.start[0]] = token.start[1]
            if token.start[0] > last_line:
                break
    except (tokenize.TokenError, SyntaxError):
        return {}
    return columns


#: a line with its line break, split where `source_lines` splits
_LINE_PIECE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
