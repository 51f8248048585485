"""`jaxlint check --add-noqa`: a `# noqa: CODES` comment on every line that has findings, so that
an existing code base starts clean and only new findings fail the next run.

A comment is added only where one can go without changing the program: not at the end of a line
that a string literal or a backslash continues onto the next line. The new text must compile to the
same tree as the old (comments change no code), else the file is left as it was.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

from ..model.finding import Finding
from ..model.settings import PARSE_ERROR_CODE, UNUSED_NOQA_CODE
from ..syntax.noqa import with_noqa

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")


@dataclass
class Annotated:
    text: str
    #: lines that got a comment (or more codes in theirs)
    added: int
    #: lines with findings where no comment can go
    refused: list[int]


def annotate(text: str, findings: list[Finding]) -> Annotated | None:
    """The text with `# noqa` comments for `findings` (plain Python files), or None when it cannot
    be done safely."""
    wanted: dict[int, list[str]] = {}
    for finding in findings:
        # a stale `noqa` (JAX001) is not silenced by another: its fix removes it
        if finding.code in (PARSE_ERROR_CODE, UNUSED_NOQA_CODE) or finding.cell is not None:
            continue
        codes = wanted.setdefault(finding.start.line, [])
        if finding.code not in codes:
            codes.append(finding.code)
    if not wanted:
        return Annotated(text, 0, [])
    try:
        before = ast.dump(ast.parse(text))
        continued = _continued_lines(text)
    except (SyntaxError, ValueError, tokenize.TokenError, RecursionError):
        return None
    lines = [m.group() for m in _LINE.finditer(text)][:-1] or [text]
    added, refused = 0, []
    for number, codes in sorted(wanted.items()):
        if number > len(lines) or number in continued:
            refused.append(number)
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        end = line[len(body):]
        new = with_noqa(body, sorted(codes))
        if new != body:
            lines[number - 1] = new + end
            added += 1
    result = "".join(lines)
    try:
        if ast.dump(ast.parse(result)) != before:
            return None
    except (SyntaxError, ValueError, RecursionError):
        return None
    return Annotated(result, added, refused)


def _continued_lines(text: str) -> set[int]:
    """Lines whose end is inside a string literal (one spanning lines) or a backslash continuation:
    a comment there would change the program."""
    found: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        (start, _), (end, _) = token.start, token.end
        if end > start and token.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.DEDENT, tokenize.INDENT):
            found.update(range(start, end))
    for number, line in enumerate(text.splitlines(), start=1):
        if line.rstrip().endswith("\\"):
            found.add(number)
    return found
