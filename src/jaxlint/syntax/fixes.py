"""Applying fixes to text: non-overlapping safe fixes in one round, as plain text edits."""
from __future__ import annotations

import re
from typing import Iterable

from ..model.finding import Applicability, Edit, Finding, Position

_LINE_END = re.compile(r"\r\n|\r|\n")


def line_offsets(text: str) -> list[int]:
    """Offset of the first character of each line (line 1 at index 0), split as the parser splits."""
    offsets = [0]
    offsets.extend(match.end() for match in _LINE_END.finditer(text))
    return offsets


def to_offset(offsets: list[int], position: Position) -> int:
    return offsets[position.line - 1] + position.column - 1


def applicable(finding: Finding, unsafe: bool = False) -> bool:
    """Whether `--fix` applies the finding's fix: a safe one, or with `unsafe` (`--unsafe-fixes`)
    an unsafe one too; a display-only fix never."""
    fix = finding.fix
    return fix is not None and (fix.applicability is Applicability.SAFE
                                or (unsafe and fix.applicability is Applicability.UNSAFE))


def apply_fixes(text: str, findings: Iterable[Finding], unsafe: bool = False) -> tuple[str, int]:
    """Apply every safe fix (with `unsafe`, every unsafe one too) that does not overlap one applied
    before it; returns (text, fixes applied)."""
    offsets = line_offsets(text)
    taken: list[tuple[int, int]] = []
    accepted: list[tuple[int, int, str]] = []
    applied = 0
    fixes = [f.fix for f in findings if applicable(f, unsafe)]
    fixes.sort(key=lambda fix: min(e.start for e in fix.edits))
    for fix in fixes:
        spans = [(to_offset(offsets, e.start), to_offset(offsets, e.end), e.content) for e in fix.edits]
        if any(_overlaps(start, end, taken) for start, end, _ in spans):
            continue
        taken.extend((start, end) for start, end, _ in spans)
        accepted.extend(spans)
        applied += 1
    for start, end, content in sorted(accepted, reverse=True):
        text = text[:start] + content + text[end:]
    return text, applied


def _overlaps(start: int, end: int, taken: list[tuple[int, int]]) -> bool:
    return any(start < t_end and t_start < end or start == t_start for t_start, t_end in taken)


def edit_text(text: str, edit: Edit) -> str:
    offsets = line_offsets(text)
    return text[: to_offset(offsets, edit.start)] + edit.content + text[to_offset(offsets, edit.end):]
