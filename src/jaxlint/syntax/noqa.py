"""`# noqa` and `# noqa: CODES` on the reported line, read the way flake8 reads them."""
from __future__ import annotations

import re

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


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
