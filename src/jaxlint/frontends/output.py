"""Turning findings into reports: concise and full text, JSON (and JSON lines), GitHub Actions
annotations, GitLab Code Quality, JUnit XML and SARIF.

Every function here is pure apart from `show_source` and the `full` format (output_full.py), which
read the reported files to quote the offending lines. Findings arrive already sorted; nothing here
reorders them.

Notebook cells: a finding's `cell` is the 0-based index into the notebook's `cells` list
(markdown cells included), and that is what JSON reports. The formats meant for people (text,
GitHub annotations, SARIF messages) say `cell N` with N counted from 1 from the top of the
notebook, markdown cells included: `cell 1` is the first cell, so JSON `"cell": 2` is `cell 3`.
"""
from __future__ import annotations

import json
import posixpath
from collections import Counter
from pathlib import PurePosixPath, PureWindowsPath
from typing import Mapping, Protocol, Sequence
from urllib.parse import quote

from ..model.finding import Applicability, Finding, Severity
from .output_full import render_full
from .output_gitlab import render_gitlab
from .output_junit import render_junit
from .source_cache import SourceCache

#: `text` is the older name of `concise`
FORMATS = ("full", "concise", "text", "json", "json-lines", "github", "gitlab", "junit", "sarif")

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"

_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
#: the characters of a concise line after its code that a runtime verdict is fitted into
CONCISE_LENGTH = 140
#: the least of a runtime verdict a concise line keeps, however long the headline
RUNTIME_NOTE_MIN = 40
_GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
# Plural forms for the summary's severity breakdown, most severe first.
_SEVERITY_WORDS = ((Severity.ERROR, "error", "errors"), (Severity.WARNING, "warning", "warnings"),
                   (Severity.INFO, "info", "info"))


class RuleInfo(Protocol):
    """What the reports need to know about a rule; the catalogue's entries provide it. SARIF also
    takes `why` (the full description), `help_text` and `help_markdown` where they exist."""

    code: str
    name: str
    summary: str
    severity: Severity
    help_uri: str | None


def render(findings: Sequence[Finding], fmt: str, *, rules: Mapping[str, RuleInfo] | None = None,
           show_source: bool = False, colour: bool = False, files: Sequence[str] = ()) -> str:
    """Return the whole report for `findings` in format `fmt` (one of FORMATS).

    The text ends with a newline unless it is empty; text, JSON lines and github reports of no
    findings are empty, JSON and GitLab's are then `[]` and SARIF a run with no results. JSON lines
    holds the objects of the JSON report, one per line. `rules` (by code) supplies rule
    summaries, default severities and help links for SARIF; without it the findings' own names
    and severities are used. `show_source` (text only) quotes each finding's line under it with
    the reported span underlined.

    Text lines look like `path:line:col: CODE message`, or `path:cell N, line M:col: CODE message`
    for a notebook, where N counts cells from 1 (see the module docstring). ` [*]` marks a
    finding whose fix `--fix` applies; a runtime verdict is appended as `[verdict: evidence]`.
    `full` adds the severity after the code, quotes the source under each finding and shows the
    change its fix makes (output_full.py); `colour` (full only) adds ANSI colours. `files`: the
    files checked, for JUnit, where a file without findings is a test that passed.
    """
    if fmt in ("text", "concise"):
        return _render_text(findings, show_source)
    if fmt == "full":
        return render_full(findings, _text_parts, _via_line, colour=colour)
    if fmt == "json":
        return json.dumps([f.to_json() for f in findings], indent=2) + "\n"
    if fmt == "json-lines":
        return "".join(json.dumps(f.to_json()) + "\n" for f in findings)
    if fmt == "github":
        return "".join(_github_line(f, rules) + "\n" for f in findings)
    if fmt == "gitlab":
        return render_gitlab(findings)
    if fmt == "junit":
        return render_junit(findings, files, _text_parts, _via_line)
    if fmt == "sarif":
        return json.dumps(sarif_document(findings, rules), indent=2) + "\n"
    raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")


def is_fixable(finding: Finding) -> bool:
    """True when `--fix` would apply the finding's fix."""
    return finding.fix is not None and finding.fix.applicability == Applicability.SAFE


def cell_label(finding: Finding) -> str | None:
    """`cell N` (N counted from 1) for a notebook finding, None for a plain file."""
    return None if finding.cell is None else f"cell {finding.cell + 1}"


# -- text ----------------------------------------------------------------------------------------

def _render_text(findings: Sequence[Finding], show_source: bool) -> str:
    sources = SourceCache() if show_source else None
    out: list[str] = []
    for finding in findings:
        out.append(_text_line(finding) + "\n")
        via = _via_line(finding)
        if via:
            out.append(via + "\n")
        if sources is not None:
            out.extend(line + "\n" for line in _source_excerpt(finding, sources))
    return "".join(out)


def _text_line(finding: Finding) -> str:
    where, text = _text_parts(finding)
    return f"{where}: {finding.code} {text}"


def _text_parts(finding: Finding) -> tuple[str, str]:
    """The text line's position (`path:line:col`) and what follows the code: the message's headline
    (the `full` format adds the rest below it; JSON, SARIF and GitHub annotations have it whole)
    and marks."""
    label = cell_label(finding)
    where = (f"{finding.path}:{finding.start.line}:{finding.start.column}" if label is None
             else f"{finding.path}:{label}, line {finding.start.line}:{finding.start.column}")
    text = _one_line(finding.parts.headline)
    if is_fixable(finding):
        text += " [*]"
    runtime = _runtime_note(finding)
    if runtime:
        # the line stays one short line: the whole evidence is in the `full` report's note and in JSON
        room = max(CONCISE_LENGTH - len(text) - 3, RUNTIME_NOTE_MIN)
        text += f" [{runtime if len(runtime) <= room else runtime[:room - 1] + '…'}]"
    return where, text


def _via_line(finding: Finding) -> str:
    """`  via train.py:6 (`train_step` calls it under `jax.jit`)`: where the tracing comes from, in
    other files; "" when the trace has no such place (the lines of its own file that a finding
    refers to, such as a key's first use, its message names already)."""
    def where(step) -> str:
        return f"{step.path}:{step.line}" if step.cell is None else f"{step.path}:cell {step.cell + 1}, line {step.line}"

    elsewhere = [step for step in finding.trace if step.path != finding.path]
    return "  via " + " → ".join(f"{where(step)} ({step.message})" for step in elsewhere) if elsewhere else ""


def _runtime_note(finding: Finding) -> str | None:
    """`verdict: evidence` from a runtime check, on one line; None when there was none."""
    runtime = finding.runtime
    if not runtime:
        return None
    verdict = str(runtime.get("verdict") or "runtime")
    evidence = _one_line(str(runtime.get("evidence") or ""))
    return f"{verdict}: {evidence}" if evidence else verdict


def _one_line(text: str) -> str:
    return " ".join(text.split()) if ("\n" in text or "\r" in text) else text


def _source_excerpt(finding: Finding, sources: SourceCache) -> list[str]:
    """The reported line, indented, with a caret line under the reported span (first line only)."""
    lines = sources.lines(finding.path, finding.cell)
    if lines is None or not 1 <= finding.start.line <= len(lines):
        return []
    text = lines[finding.start.line - 1].rstrip("\r\n")
    start = max(finding.start.column - 1, 0)
    if start > len(text):
        return []
    if finding.end.line == finding.start.line and finding.end.column > finding.start.column:
        end = min(finding.end.column - 1, len(text))
    else:
        end = len(text)
    width = max(end - start, 1)
    # Keep tabs before the span so the carets line up under it in a terminal.
    pad = "".join(ch if ch == "\t" else " " for ch in text[:start])
    gutter = f"{finding.start.line:>5} | "
    return [f"{gutter}{text}", f"{' ' * (len(gutter) - 2)}| {pad}{'^' * width}"]


# -- GitHub Actions workflow commands ------------------------------------------------------------

def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _github_line(finding: Finding, rules: Mapping[str, RuleInfo] | None) -> str:
    title = f"{finding.code} ({_rule_name(finding, rules)})"
    label = cell_label(finding)
    if label is None:
        properties = [
            ("file", finding.path),
            ("line", str(finding.start.line)),
            ("col", str(finding.start.column)),
            ("endLine", str(finding.end.line)),
            ("endColumn", str(finding.end.column)),
            ("title", title),
        ]
    else:
        # a line number would point into the notebook's JSON: the annotation is on the file, and
        # its title names the cell and the line in it
        properties = [("file", finding.path), ("title", f"{label}, line {finding.start.line}: {title}")]
    message = finding.message
    runtime = _runtime_note(finding)
    if runtime:
        message = f"{message} [{runtime}]"
    props = ",".join(f"{key}={_escape_property(value)}" for key, value in properties)
    return f"::{_GITHUB_COMMAND[finding.severity]} {props}::{_escape_data(message)}"


# -- SARIF 2.1.0 ---------------------------------------------------------------------------------

def sarif_document(findings: Sequence[Finding], rules: Mapping[str, RuleInfo] | None = None) -> dict:
    """The SARIF log (as a dict) for `findings`: one run, one rule descriptor per code reported."""
    first_of: dict[str, Finding] = {}
    for finding in findings:
        first_of.setdefault(finding.code, finding)
    codes = sorted(first_of)
    index_of = {code: i for i, code in enumerate(codes)}
    driver: dict = {"name": "jaxlint", "version": _version()}
    driver["rules"] = [_sarif_rule(code, first_of[code], (rules or {}).get(code)) for code in codes]
    results = [_sarif_result(f, index_of[f.code]) for f in findings]
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": results}],
    }


def _version() -> str:
    try:
        from .. import __version__
    except ImportError:
        return "0"
    return str(__version__)


def _sarif_rule(code: str, example: Finding, info: RuleInfo | None) -> dict:
    name = getattr(info, "name", None) or example.name
    summary = getattr(info, "summary", None) or name
    severity = getattr(info, "severity", None) or example.severity
    descriptor: dict = {"id": code, "name": name, "shortDescription": {"text": summary}}
    why = getattr(info, "why", None)
    if why:
        descriptor["fullDescription"] = {"text": why}
    help_text, help_markdown = getattr(info, "help_text", None), getattr(info, "help_markdown", None)
    if help_text:
        descriptor["help"] = {"text": help_text, **({"markdown": help_markdown} if help_markdown else {})}
    help_uri = getattr(info, "help_uri", None)
    if help_uri:
        descriptor["helpUri"] = help_uri
    descriptor["defaultConfiguration"] = {"level": _SARIF_LEVEL[Severity(severity)]}
    return descriptor


def _sarif_artifact(path: str) -> dict:
    """artifactLocation: a relative POSIX URI against %SRCROOT%, or a file: URI for absolute paths."""
    if PureWindowsPath(path).is_absolute() and not PurePosixPath(path).is_absolute():
        return {"uri": PureWindowsPath(path).as_uri()}
    posix = path.replace("\\", "/")
    if posix.startswith("/"):
        return {"uri": PurePosixPath(posix).as_uri()}
    posix = posixpath.normpath(posix)
    # A name that is not valid UTF-8 reaches here with its bytes as surrogates: they are
    # percent-encoded as those bytes, which is what the URI of such a file is.
    return {"uri": quote(posix, safe="/", errors="surrogateescape"), "uriBaseId": "%SRCROOT%"}


def _sarif_result(finding: Finding, rule_index: int) -> dict:
    message = finding.message
    label = cell_label(finding)
    if label is not None:
        message = f"{label}: {message}"
    region = {
        "startLine": finding.start.line,
        "startColumn": finding.start.column,
        "endLine": finding.end.line,
        "endColumn": finding.end.column,
    }
    result: dict = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": _SARIF_LEVEL[finding.severity],
        "message": {"text": message},
        "locations": [{"physicalLocation": {"artifactLocation": _sarif_artifact(finding.path),
                                            "region": region}}],
    }
    fix = _sarif_fix(finding)
    if fix is not None:
        result["fixes"] = [fix]
    if finding.trace:
        result["relatedLocations"] = [
            {"id": index, "message": {"text": step.message},
             "physicalLocation": {"artifactLocation": _sarif_artifact(step.path),
                                  "region": {"startLine": step.line}}}
            for index, step in enumerate(finding.trace)]
    properties: dict = {}
    if finding.cell is not None:
        properties["cell"] = finding.cell
    if finding.runtime is not None:
        properties["runtime"] = finding.runtime
    if properties:
        result["properties"] = properties
    return result


def _sarif_fix(finding: Finding) -> dict | None:
    """The finding's fix as a SARIF fix: its edits as replacements in the reported file.

    None for a fix that is only shown, and for a notebook, whose edits are in lines of its cells
    while a SARIF region would be lines of the notebook's JSON."""
    fix = finding.fix
    if fix is None or fix.applicability is Applicability.DISPLAY_ONLY or finding.cell is not None:
        return None
    replacements = [{"deletedRegion": {"startLine": edit.start.line, "startColumn": edit.start.column,
                                       "endLine": edit.end.line, "endColumn": edit.end.column},
                     "insertedContent": {"text": edit.content}}
                    for edit in fix.edits]
    return {"description": {"text": fix.title},
            "artifactChanges": [{"artifactLocation": _sarif_artifact(finding.path), "replacements": replacements}],
            "properties": {"applicability": fix.applicability.value}}


def _rule_name(finding: Finding, rules: Mapping[str, RuleInfo] | None) -> str:
    info = (rules or {}).get(finding.code)
    return getattr(info, "name", None) or finding.name


# -- summary and statistics ----------------------------------------------------------------------

def _plural(count: int, singular: str, plural: str | None = None) -> str:
    return f"{count} {singular if count == 1 else (plural or singular + 's')}"


def summary_line(findings: Sequence[Finding], files_checked: int, fixed: int = 0, errors: bool = False,
                 not_analysed: int = 0, unsafe_fixes: bool = False) -> str:
    """One line for stderr after a text report.

    `Found 3 findings (2 errors, 1 warning) in 2 of 12 files; 1 fixable with --fix.` (the file
    count is the files with findings, out of those checked), or `All checks passed: 12 files, no
    findings.` Fixes already applied come first: `Fixed 4 findings. ...`. With `errors` (the run
    printed errors: a missing path, an internal error), no findings never reads as a pass:
    `No findings in 12 files, but there were errors (see above).` Files that are Python but could
    not be analysed (`not_analysed`) keep it from reading as a pass too, and a run that checked no
    file says so (`No files checked.`). Unsafe fixes are counted apart (`1 more with --fix
    --unsafe-fixes`), or with the safe ones under `unsafe_fixes`.
    """
    prefix = f"Fixed {_plural(fixed, 'finding')}. " if fixed > 0 else ""
    if not findings and not files_checked:
        return f"{prefix}No files checked{', and there were errors (see above)' if errors else ''}."
    if not findings:
        left = " left" if fixed > 0 else ""
        if errors:
            return f"{prefix}No findings{left} in {_plural(files_checked, 'file')}, but there were errors (see above)."
        if not_analysed:
            return (f"{prefix}No findings{left} in {_plural(files_checked, 'file')}, but "
                    f"{_plural(not_analysed, 'file was', 'files were')} not fully analysed (see above).")
        return f"{prefix}All checks passed: {_plural(files_checked, 'file')}, no findings{left}."
    counts = Counter(f.severity for f in findings)
    breakdown = ", ".join(_plural(counts[sev], one, many) for sev, one, many in _SEVERITY_WORDS if counts[sev])
    with_findings = len({f.path for f in findings})
    files = (f"{with_findings} of {_plural(files_checked, 'file')}" if files_checked > with_findings
             else _plural(with_findings, "file"))
    line = f"{prefix}Found {_plural(len(findings), 'finding')} ({breakdown}) in {files}"
    fixable = sum(1 for f in findings if is_fixable(f))
    unsafe = sum(1 for f in findings if f.fix is not None and f.fix.applicability is Applicability.UNSAFE)
    if unsafe_fixes:
        fixable, unsafe = fixable + unsafe, 0
    if fixable:
        line += f"; {fixable} fixable with --fix{' --unsafe-fixes' if unsafe_fixes else ''}"
    if unsafe:
        line += (f" ({unsafe} more with --fix --unsafe-fixes)" if fixable
                 else f"; {unsafe} fixable with --fix --unsafe-fixes")
    line += "."
    return line + (" There were errors (see above)." if errors else "")


def fixes_listing(fixed: Sequence[tuple[str, Mapping[str, int]]], *, applied: bool, shown: bool = False) -> str:
    """`--show-fixes`: the findings fixed (`applied`), shown as a patch (`shown`, with --diff) or
    that `--fix` would fix, by file and code:

    ```
    Fixed 3 findings:
      pkg/a.py:
        2 × JAX601
        1 × JAX602
    ```
    """
    counted = [(path, counts) for path, counts in fixed if sum(counts.values())]
    total = sum(sum(counts.values()) for _, counts in counted)
    if not total:
        return "No findings fixed.\n" if applied or shown else "No findings to fix.\n"
    heading = "Fixed" if applied else "The patch fixes" if shown else "--fix would fix"
    lines = [f"{heading} {_plural(total, 'finding')}:"]
    for path, counts in counted:
        lines.append(f"  {path}:")
        lines.extend(f"    {count} × {code}" for code, count in sorted(counts.items()) if count)
    return "\n".join(lines) + "\n"


def statistics(findings: Sequence[Finding], fmt: str = "concise") -> str:
    """A table of findings per code, most frequent first (ties by code): count, code, name, and
    `[*]` when `--fix` can fix at least one of them. Empty when there are no findings.

    With `fmt` `json`, the same rows as a JSON list of `{"code", "name", "count"}` (`[]` when
    there are no findings), with `json-lines` those objects one per line; any other format gets
    the table."""
    counts = Counter(f.code for f in findings)
    if fmt == "json":
        return json.dumps(_statistics_rows(findings, counts), indent=2) + "\n"
    if fmt == "json-lines":
        return "".join(json.dumps(row) + "\n" for row in _statistics_rows(findings, counts))
    if not counts:
        return ""
    names: dict[str, str] = {}
    fixable: set[str] = set()
    for finding in findings:
        names.setdefault(finding.code, finding.name)
        if is_fixable(finding):
            fixable.add(finding.code)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    count_width = max(5, max(len(str(n)) for n in counts.values()))
    code_width = max(len(code) for code in counts)
    name_width = max(len(name) for name in names.values())
    lines = []
    for code, count in rows:
        line = f"{count:>{count_width}}  {code:<{code_width}}  {names[code]:<{name_width}}"
        line = f"{line}  [*]" if code in fixable else line.rstrip()
        lines.append(line)
    return "\n".join(lines) + "\n"


def _statistics_rows(findings: Sequence[Finding], counts: Counter) -> list[dict]:
    names: dict[str, str] = {}
    for finding in findings:
        names.setdefault(finding.code, finding.name)
    return [{"code": code, "name": names[code], "count": count}
            for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
