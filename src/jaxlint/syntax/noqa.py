"""`# noqa` and `# noqa: CODES` on the reported line, read the way flake8 reads them; `# jaxlint:
noqa` and `# jaxlint: noqa: CODES` on a line of their own, for the whole file; and adding
`# noqa: CODES` comments to the lines of findings (`--add-noqa`)."""
from __future__ import annotations

import re

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
