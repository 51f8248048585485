"""`# noqa` and `# noqa: CODES` on the reported line, read the way flake8 reads them."""
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
