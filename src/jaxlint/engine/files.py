"""Checking and fixing whole files: read and decode them, then check them as Python source or as a
notebook's cells."""
from __future__ import annotations

import re
import tokenize

from ..model.finding import Finding
from ..model.settings import Settings
from .checker import (PARSE_ERROR, FileResult, NotAnalysed, RuleFailure, check_source, enabled_rules,
                      fix_until_stable, has_safe_fix, parse_error, syntax_error)
from .notebook_check import check_notebook_file
from ..reading import UnreadableFile, read_regular, size_limit


# -- reading ------------------------------------------------------------------------------------
#: a line and its end as CPython's tokenizer splits them: at `\r\n`, `\r` or `\n`
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)?")


def source_encoding(data: bytes) -> str:
    """The encoding a coding cookie or a byte-order mark declares, else UTF-8 (as CPython reads
    it); raises SyntaxError for a bad declaration.

    `tokenize.detect_encoding` reads its two lines with a `readline` that it is given: one from
    `io.BytesIO` ends lines at `\n` only, so a file with `\r` line ends would be one long first
    line, checked whole as UTF-8, and a cookie on its second line never seen.
    """
    lines = (match.group() for match in _LINE.finditer(data) if match.group())
    encoding, _ = tokenize.detect_encoding(lambda: next(lines, b""))
    return encoding


def decode(data: bytes, path: str) -> str | Finding:
    """The text of a source file, or the JAX000 finding that says why it has none."""
    if b"\x00" in data:
        return parse_error(path, "cannot read: binary file (contains NUL bytes), not Python source")
    try:
        encoding = source_encoding(data)
    except SyntaxError as exc:
        return parse_error(path, f"cannot read: {exc.msg}")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return parse_error(path, f"cannot read: not valid {encoding} (byte 0x{data[exc.start]:02x} at offset {exc.start})", line)
    except LookupError:
        return parse_error(path, f"cannot read: unknown encoding {encoding!r}")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def read_bytes(path: str) -> bytes | Finding:
    """The bytes of a file to check, or the JAX000 finding that says why it cannot be read."""
    try:
        return read_regular(path, size_limit(path))
    except UnreadableFile as exc:
        return parse_error(path, f"cannot read: {exc}")
    except OSError as exc:
        return parse_error(path, f"cannot read: {exc.strerror or exc}")


def decode_file(path: str, data: bytes) -> str | Finding:
    if path.endswith(".ipynb"):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return parse_error(path, "cannot read notebook: not valid UTF-8")
    return decode(data, path)


# -- whole files --------------------------------------------------------------------------------
def check_file(path: str, settings: Settings, fix: bool = False, data: bytes | None = None,
               project=None) -> FileResult:
    """Check one file; with `fix`, also compute the fixed text and its findings (the caller decides
    whether to write it; `findings` stay those of the file as read). `project`: the
    `project_check.ProjectSession` the file is a module of, if any."""
    enabled = enabled_rules(settings, path)
    if data is None:
        data = read_bytes(path)
        if isinstance(data, Finding):
            return FileResult(path, [data] if PARSE_ERROR in enabled else [])
    text = decode_file(path, data)
    if isinstance(text, Finding):
        return FileResult(path, [text] if PARSE_ERROR in enabled else [])
    if path.endswith(".ipynb"):
        return _keep_checked_bytes(check_notebook_file(text, path, settings, enabled, fix, project), data)
    try:
        findings = check_source(text, path, settings, enabled, project=project)
    except RuleFailure as failure:
        return FileResult(path, failure.findings, internal_error=f"{failure} (please report this)")
    except NotAnalysed as partial:
        # nothing is fixed in a file whose analysis was cut short
        return FileResult(path, partial.findings, original_text=text, not_analysed=partial.reason)
    result = FileResult(path, findings, original_text=text)
    if fix and has_safe_fix(findings, settings.unsafe_fixes):
        try:
            fixed, count = fix_until_stable(text, findings, lambda src: check_source(src, path, settings, enabled,
                                                                                     project=project),
                                            settings.unsafe_fixes)
        except (NotAnalysed, RuleFailure) as exc:
            result.fix_refused = f"fixes not applied: the fixed text could not be analysed ({exc})"
            return result
        if fixed != text:
            refused = syntax_error(fixed, path)
            if refused is not None:
                result.fix_refused = f"fixes not applied: the result would not parse ({refused.message})"
            else:
                try:
                    fixed_findings = check_source(fixed, path, settings, enabled, project=project)
                except (NotAnalysed, RuleFailure) as exc:
                    result.fix_refused = f"fixes not applied: the fixed text could not be analysed ({exc})"
                    return result
                result.fixed_text, result.fixed_count = fixed, count
                result.fixed_findings = fixed_findings
    return _keep_checked_bytes(result, data)


def _keep_checked_bytes(result: FileResult, data: bytes) -> FileResult:
    if result.fixed_text is not None:
        result.original_bytes = data
    return result


def encode_like(original: bytes, text: str, path: str) -> bytes:
    """The fixed text in the original file's encoding, with its byte-order mark if it had one."""
    if path.endswith(".ipynb"):
        return text.encode("utf-8")
    encoding = source_encoding(original)
    if encoding == "utf-8-sig":
        return text.encode("utf-8-sig")
    return text.encode(encoding)
