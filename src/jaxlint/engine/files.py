"""Checking and fixing whole files: read and decode them, then check them as Python source or as a
notebook's cells."""
from __future__ import annotations

import os
import re
import stat
import tokenize

from ..model.finding import Finding
from ..model.settings import Settings
from .checker import (PARSE_ERROR, FileResult, NotAnalysed, RuleFailure, check_source, enabled_rules,
                      fix_until_stable, has_safe_fix, parse_error, syntax_error)
from .notebook_check import check_notebook_file


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


#: The largest source file read; a bigger one is not checked (generated code, a misnamed data file).
MAX_SOURCE_BYTES = 10 * 1024 * 1024
#: The largest notebook read: notebooks carry their cells' outputs (images, tables) besides the code.
MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024

#: Opening never waits: a FIFO opened for reading blocks until a writer comes, unless non-blocking.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class UnreadableFile(OSError):
    """A path that is not read: not a regular file, or larger than its size limit."""


def size_limit(path: str) -> int:
    return MAX_NOTEBOOK_BYTES if path.endswith(".ipynb") else MAX_SOURCE_BYTES


def describe_limit(limit: int) -> str:
    return f"the {limit / (1024 * 1024):g} MiB limit"


def unreadable_reason(info: os.stat_result, limit: int) -> str | None:
    """Why a file with this status is not read, or None when it is a regular file within `limit`."""
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file ({file_kind(info.st_mode)})"
    if info.st_size > limit:
        return f"larger than {describe_limit(limit)} ({info.st_size:,} bytes)"
    return None


def file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), "a special file")


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; raises `UnreadableFile` for anything
    else (a FIFO, a device, a socket, a bigger file) without blocking or reading it, and OSError
    when the file cannot be opened."""
    reason = unreadable_reason(os.stat(path), limit)  # refuse a device before opening it at all
    if reason:
        raise UnreadableFile(reason)
    descriptor = os.open(path, _OPEN_FLAGS)
    try:
        # the path may have been replaced since the stat: what counts is what was opened
        info = os.fstat(descriptor)
        reason = unreadable_reason(info, limit)
        if reason:
            raise UnreadableFile(reason)
        chunks, size = [], 0
        while size <= limit:
            # one read of the whole file (plus one that finds its end), without a buffer of `limit` bytes
            chunk = os.read(descriptor, min(limit + 1 - size, max(info.st_size - size, 0) + 65536))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # it grew after the check
            raise UnreadableFile(f"larger than {describe_limit(limit)}")
        return b"".join(chunks)
    finally:
        os.close(descriptor)


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
    if fix and has_safe_fix(findings):
        try:
            fixed, count = fix_until_stable(text, findings, lambda src: check_source(src, path, settings, enabled, project=project))
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
