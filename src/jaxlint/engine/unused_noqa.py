"""JAX001: `# noqa` codes that suppress nothing in this run, and `JAX` codes that name no rule.

A code is judged only when this run could have produced what it suppresses: every rule it covers
(a prefix such as `JAX1` covers a family) was enabled for the file. A code of another tool
(`E501`, `F401`), a bare `# noqa` (which silences every tool) and a code that covers JAX001 itself
are never reported. The fix removes the codes reported and keeps the others; a directive left with
no code goes, and a file-level `# jaxlint: noqa: CODES` line with it.
"""
from __future__ import annotations

import re
from typing import Iterable

from ..catalogue.rule_docs import load_catalogue
from ..model.finding import Edit, Finding, Fix, Position
from ..model.settings import UNUSED_NOQA_CODE
from ..syntax.noqa import NoqaCode, NoqaDirective, noqa_directives, source_lines

_OURS = re.compile(r"JAX[0-9]+")


def unused_noqa(source: str, path: str, findings: Iterable[Finding], enabled: frozenset[str],
                known: Iterable[str]) -> list[Finding]:
    """JAX001 findings for the directives of `source`, given every finding of the file before
    suppression (`findings`) and the codes enabled for it."""
    directives = noqa_directives(source)
    if not directives:
        return []
    known = tuple(known)
    found_on: dict[int, set[str]] = {}
    for finding in findings:
        found_on.setdefault(finding.start.line, set()).add(finding.code)
    in_file = set().union(*found_on.values())
    lines = source_lines(source)
    reported = []
    for directive in directives:
        found = in_file if directive.file_level else found_on.get(directive.line, set())
        unused, unknown = [], []
        for code in directive.codes:
            verdict = _verdict(code.code, found, enabled, known)
            if verdict == "unused":
                unused.append(code)
            elif verdict == "unknown":
                unknown.append(code)
        if unused or unknown:
            reported.append(_finding(directive, unused, unknown, lines, path))
    return reported


def _verdict(code: str, found: set[str], enabled: frozenset[str], known: tuple[str, ...]) -> str | None:
    """`unused`, `unknown`, or None for a code that is kept."""
    if not _OURS.fullmatch(code):
        return None  # another tool's
    covered = [k for k in known if k.startswith(code)]
    if not covered:
        return "unknown"
    if UNUSED_NOQA_CODE in covered or any(k not in enabled for k in covered):
        return None  # it silences this report, or a rule this run did not ask
    return None if any(f.startswith(code) for f in found) else "unused"


def _finding(directive: NoqaDirective, unused: list[NoqaCode], unknown: list[NoqaCode], lines: list[str],
             path: str) -> Finding:
    doc = load_catalogue()[UNUSED_NOQA_CODE]
    where = "in this file" if directive.file_level else "on this line"
    parts = []
    if unused:
        names = ", ".join(c.written for c in unused)
        verb = "suppresses" if len(unused) == 1 else "suppress"
        parts.append(f"`noqa` code{'s' if len(unused) > 1 else ''} {names} {verb} nothing {where}")
    if unknown:
        names = ", ".join(c.written for c in unknown)
        parts.append(f"{names} {'is not a jaxlint code' if len(unknown) == 1 else 'are not jaxlint codes'}")
    start = Position(directive.line, directive.start + 1)
    end = Position(directive.line, directive.end + 1)
    fix = _fix(directive, {c.start for c in unused + unknown}, lines)
    return Finding(UNUSED_NOQA_CODE, doc.name, doc.severity, "; ".join(parts), path, start, end, fix)


def _fix(directive: NoqaDirective, removed: set[int], lines: list[str]) -> Fix:
    """`removed`: the codes to remove, by their first column."""
    kept = [c for c in directive.codes if c.start not in removed]
    number = directive.line
    line = lines[number - 1]
    if kept:
        first, last = directive.codes[0], directive.codes[-1]
        edit = Edit(Position(number, first.start + 1), Position(number, last.end + 1),
                    ", ".join(c.written for c in kept))
        title = "Remove " + ", ".join(c.written for c in directive.codes if c.start in removed) + " from the comment"
    elif directive.file_level:
        # the whole line, with its line break (a last line without one keeps the line before's)
        has_break = number < len(lines)
        edit = Edit(Position(number, 1), Position(number + 1 if has_break else number, 1 if has_break else len(line) + 1),
                    "")
        title = "Remove the `jaxlint: noqa` line"
    else:
        edit = _without_directive(directive, line)
        title = "Remove the `noqa` comment"
    return Fix(title, (edit,))


def _without_directive(directive: NoqaDirective, line: str) -> Edit:
    """The `# noqa: CODES` comment out of its line: with the blanks before it when nothing follows
    it, else replaced by `# ` so that the rest of the comment stays one."""
    number = directive.line
    rest = line[directive.end:]
    if rest.strip(" \t,"):
        after = len(rest) - len(rest.lstrip(" \t"))
        return Edit(Position(number, directive.start + 1), Position(number, directive.end + after + 1), "# ")
    before = len(line[:directive.start].rstrip(" \t"))
    return Edit(Position(number, before + 1), Position(number, len(line) + 1), "")
