"""The `full` report: each finding with its severity and headline, the source it is about (a
caret line under the reported span, a line of context either side, the other lines it refers to
labelled), why it bites and what to write instead, and the exact change its fix would make.

```
pkg/a.py:4:9: JAX101 [error] key `key` is used again here
  |
2 |     a = jax.random.normal(key)
  |     -------------------------- `key` is first consumed here
3 |     b = a * 2
4 |     c = jax.random.normal(key)
  |         ^^^^^^^^^^^^^^^^^^^^^^
5 |     return b + c
  = note: key `key` consumed at line 2 is used again here
  = note: both calls get the same randomness, as JAX keys are not stateful
  = help: split it first: `key, subkey = jax.random.split(key)` and use `subkey`
```

Columns count characters, so the carets sit under the span whatever the characters' encoding; a
tab before the span is repeated in the caret line so that a terminal expands both alike. Colour
(ANSI escapes) is added only when asked for; the caller decides from the terminal and the
environment (`use_colour`).
"""
from __future__ import annotations

import os
from typing import Callable, Sequence, TextIO

from ..model.finding import Applicability, Edit, Finding, Severity, TraceLocation
from .source_cache import SourceCache

#: lines of a span quoted at most; a longer span shows its first lines and then `...`
MAX_SPAN_LINES = 4
#: lines quoted before and after the reported span, so that the frame shows where it is
CONTEXT_LINES = 1
#: separate groups of fix edits shown at most (a rename can touch many lines); the rest are counted
MAX_FIX_HUNKS = 3

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_BLUE = "\x1b[1;34m"
_RED = "\x1b[31m"
_GREEN = "\x1b[32m"
_SEVERITY_COLOUR = {Severity.ERROR: "\x1b[1;31m", Severity.WARNING: "\x1b[1;33m", Severity.INFO: "\x1b[1;36m"}


def use_colour(stream: TextIO) -> bool:
    """Whether to colour what goes to `stream`: never with `NO_COLOR` set (non-empty), always with
    `FORCE_COLOR` set (non-empty), otherwise when `stream` is a terminal that is not `TERM=dumb`.
    The order is CPython's own (`_colorize`)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


#: control characters other than the tab, shown as their Unicode pictures (one character each,
#: so the carets stay in place) instead of being sent to the terminal, which would act on them
_VISIBLE = {code: 0x2400 + code for code in range(0x20) if code != 0x09} | {0x7F: 0x2421}


def _visible(text: str) -> str:
    return text.translate(_VISIBLE)


class _Paint:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, style: str, text: str) -> str:
        return f"{style}{text}{_RESET}" if self.enabled and text else text


def render_full(findings: Sequence[Finding], text_parts: Callable[[Finding], tuple[str, str]],
                via: Callable[[Finding], str], *, colour: bool = False) -> str:
    """The full report. `text_parts(finding)` gives the concise line's position and what follows
    its code (the headline and marks), `via(finding)` the line naming the calls that trace it.
    Findings are separated by a blank line."""
    paint = _Paint(colour)
    sources = SourceCache()
    blocks: list[str] = []
    for finding in findings:
        lines = [_header(finding, *text_parts(finding), paint)]
        via_line = via(finding)
        if via_line:
            lines.append(via_line)
        file_lines = sources.lines(finding.path, finding.cell)
        parts = finding.parts
        labels = _labels(finding, len(file_lines)) if file_lines is not None else {}
        # one gutter width for the whole finding, so that its bars line up
        width = 1
        if file_lines is not None:
            shown = _shown_lines(finding, labels, file_lines)
            edits = finding.fix.edits if finding.fix is not None else ()
            width = len(str(max(shown + [e.end.line for e in edits], default=1)))
            lines.extend(_excerpt(finding, file_lines, shown, labels, width, paint))
        gutter = paint(_BLUE, f"{' ' * width} =")
        # the `via` line names the calls that trace the code already
        lines.extend(f"{gutter} note: {note}" for note in (parts.reasons if via_line else parts.notes))
        lines.extend(f"{gutter} note: {_where(step)}: {step.message}" for step in _unlabelled(finding, labels))
        runtime = finding.runtime
        if runtime and runtime.get("evidence"):
            evidence = " ".join(str(runtime["evidence"]).split())
            lines.append(f"{gutter} note: runtime, {runtime.get('verdict') or 'checked'}: {evidence}")
        if parts.help:
            lines.append(f"{gutter} help: {parts.help}")
        if file_lines is not None and finding.fix is not None and finding.fix.edits:
            lines.extend(_fix_view(finding, sources, width, paint))
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _header(finding: Finding, where: str, rest: str, paint: _Paint) -> str:
    severity = paint(_SEVERITY_COLOUR[finding.severity], f"[{finding.severity.value}]")
    return f"{paint(_BOLD, where)}: {paint(_SEVERITY_COLOUR[finding.severity], finding.code)} {severity} {rest}"


def _span_lines(finding: Finding, count: int) -> tuple[int, int]:
    """First and last line of the reported span, 1-based; an end at column 1 ends the line before."""
    first = finding.start.line
    last = finding.end.line
    if last > first and finding.end.column <= 1:
        last -= 1
    return first, max(first, min(last, count))


def _labels(finding: Finding, count: int) -> dict[int, str]:
    """The secondary labels: other lines of the finding's own file (or cell) that it refers to (a
    reused key's first use), by line."""
    return {step.line: step.message for step in finding.trace
            if step.path == finding.path and step.cell == finding.cell and 1 <= step.line <= count
            and step.line != finding.start.line}


def _unlabelled(finding: Finding, labels: dict[int, str]) -> list[TraceLocation]:
    """The places of the finding's own notebook that are in other cells than its own."""
    return [step for step in finding.trace
            if step.path == finding.path and step.line not in labels and step.cell != finding.cell]


def _where(step: TraceLocation) -> str:
    return f"line {step.line}" if step.cell is None else f"cell {step.cell + 1}, line {step.line}"


def _shown_lines(finding: Finding, labels: dict[int, str], lines: list[str]) -> list[int]:
    """The lines the frame quotes: the span (its first MAX_SPAN_LINES), CONTEXT_LINES around it,
    and each labelled line."""
    count = len(lines)
    # the empty line after a final newline is where an end position can be, not a line to quote
    text_end = count - 1 if count and lines[-1] == "" else count
    first, last = _span_lines(finding, count)
    if not 1 <= first <= count:
        return []
    shown = set(range(first, min(last, first + MAX_SPAN_LINES - 1) + 1))
    shown |= set(range(max(first - CONTEXT_LINES, 1), first))
    if last < first + MAX_SPAN_LINES:
        shown |= set(range(last + 1, min(last + CONTEXT_LINES, text_end) + 1))
    shown |= set(labels)
    return sorted(shown)


def _excerpt(finding: Finding, lines: list[str], shown: list[int], labels: dict[int, str], width: int,
             paint: _Paint) -> list[str]:
    if not shown:
        return []
    first, last = _span_lines(finding, len(lines))
    shown_last = min(last, first + MAX_SPAN_LINES - 1)
    bar = paint(_BLUE, f"{' ' * width} |")
    out = [bar]
    colour = _SEVERITY_COLOUR[finding.severity]
    previous = None
    for number in shown:
        if previous is not None and number > previous + 1:
            out.append(paint(_BLUE, f"{' ' * width} |") + " ...")
        previous = number
        text = lines[number - 1].rstrip("\r\n")
        out.append(f"{paint(_BLUE, f'{number:>{width}} |')} {_visible(text)}".rstrip())
        if number in labels:
            start = len(text) - len(text.lstrip())
            pad = "".join(ch if ch == "\t" else " " for ch in text[:start])
            marks = "-" * max(len(text.rstrip()) - start, 1)
            out.append(f"{bar} {pad}{paint(_BLUE, marks)} {labels[number]}")
            continue
        if not first <= number <= shown_last:
            continue
        start = finding.start.column - 1 if number == first else len(text) - len(text.lstrip())
        if number == finding.end.line and finding.end.column > 1:
            end = finding.end.column - 1
        else:
            end = len(text)
        start, end = min(max(start, 0), len(text)), min(end, len(text))
        carets = "^" * max(end - start, 1 if number == first else 0)
        if carets:
            pad = "".join(ch if ch == "\t" else " " for ch in text[:start])
            out.append(f"{bar} {pad}{paint(colour, carets)}")
        if number == shown_last and shown_last < last:
            out.append(paint(_BLUE, f"{' ' * width} |") + " ...")
            previous = last
    return out


# -- the fix ---------------------------------------------------------------------------------------

_APPLICABILITY_NOTE = {Applicability.SAFE: "", Applicability.UNSAFE: " (unsafe: only --fix --unsafe-fixes applies it)",
                       Applicability.DISPLAY_ONLY: " (shown only: --fix does not apply it)"}


def _fix_view(finding: Finding, sources: SourceCache, width: int, paint: _Paint) -> list[str]:
    fix = finding.fix
    out = [paint(_BLUE, f"{' ' * width} =") + f" help: {fix.title}{_APPLICABILITY_NOTE[fix.applicability]}"]
    hunks = _hunks(fix.edits, finding.cell)
    for cell, edits in hunks[:MAX_FIX_HUNKS]:
        lines = sources.lines(finding.path, cell)
        if lines is None:
            return out
        hunk = _hunk_lines(edits, lines)
        if hunk is None:
            return out
        first, old, new = hunk
        if cell != finding.cell and cell is not None:
            out.append(paint(_BLUE, f"{' ' * width} |") + f" in cell {cell + 1}:")
        out.extend(f"{paint(_RED, f'{first + i:>{width}} -')} {paint(_RED, _visible(line))}".rstrip()
                   for i, line in enumerate(old))
        out.extend(f"{paint(_GREEN, f'{first + i:>{width}} +')} {paint(_GREEN, _visible(line))}".rstrip()
                   for i, line in enumerate(new))
    if len(hunks) > MAX_FIX_HUNKS:
        more = sum(len(edits) for _, edits in hunks[MAX_FIX_HUNKS:])
        out.append(paint(_BLUE, f"{' ' * width} =") + f" and {more} more edit{'s' if more != 1 else ''}")
    return out


def _hunks(edits: Sequence[Edit], cell: int | None) -> list[tuple[int | None, list[Edit]]]:
    """The edits in groups that share a line, by cell (an edit without one is in the
    finding's), in order."""
    def cell_of(edit: Edit) -> int | None:
        return edit.cell if edit.cell is not None else cell

    ordered = sorted(edits, key=lambda e: (-1 if cell_of(e) is None else cell_of(e), e.start, e.end))
    hunks: list[tuple[int | None, list[Edit]]] = []
    for edit in ordered:
        if hunks and hunks[-1][0] == cell_of(edit) and edit.start.line <= max(e.end.line for e in hunks[-1][1]):
            hunks[-1][1].append(edit)
        else:
            hunks.append((cell_of(edit), [edit]))
    return hunks


def _hunk_lines(edits: list[Edit], lines: list[str]) -> tuple[int, list[str], list[str]] | None:
    """(first line, old lines, new lines) for edits that share lines; None when they do not fit."""
    first = edits[0].start.line
    last = max(e.end.line for e in edits)
    if not 1 <= first <= last <= len(lines):
        return None
    old_text = "\n".join(lines[first - 1:last])
    starts = [0]
    for line in lines[first - 1:last]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(line: int, column: int) -> int:
        return starts[line - first] + column - 1

    new_text = old_text
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        start, end = offset(edit.start.line, edit.start.column), offset(edit.end.line, edit.end.column)
        if not 0 <= start <= end <= len(old_text):
            return None
        new_text = new_text[:start] + edit.content + new_text[end:]
    old, new = old_text.split("\n"), new_text.split("\n")
    # an edit that ends at the start of a line brings that line in unchanged: leave it out
    while old and new and old[-1] == new[-1]:
        old.pop(), new.pop()
    while old and new and old[0] == new[0]:
        old.pop(0), new.pop(0)
        first += 1
    return first, old, new
