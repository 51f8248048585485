"""Where and how `--fix` writes a fixed file, and what `--diff` shows for it.

The policy (docs/cli.md, "Fixes"):

- A symlink is written through: the file it resolves to gets the fixes and the link stays a link.
  A file reached through several paths (symlinks, hard links) is written once.
- A file with one link is replaced atomically: a temporary file in its directory, given the file's
  mode, owner and group, then renamed over it. When that would change the file's owner or group
  (which only a privileged process may set) or its directory cannot be written, and when the file
  has several hard links (a new file would detach this name from the others), it is rewritten in
  place instead: same inode, same links, but not atomic.
- A read-only file is never written: one with no write permission bit at all (which root would
  otherwise ignore) or none for the running user.
- A file whose bytes changed since it was checked is not written: the fixes were computed for
  other text.
- The fixed text is written in the encoding of the checked bytes, with their byte-order mark.
"""
from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass

from ..api import FileResult, encode_like
from .patch import unified_patch

_ANY_WRITE_BIT = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


@dataclass(frozen=True)
class NotWritten:
    """Why a fixed file was not written (or shown), as one line after the path."""

    message: str
    #: a failure of the run (exit status 2), not a file the policy leaves alone
    error: bool


class FixWriter:
    """Writes the fixed files of one run, each real file once."""

    def __init__(self) -> None:
        #: (device, inode) of each file written -> (the path it was written as, the text written)
        self._written: dict[tuple[int, int], tuple[str, str]] = {}

    def write(self, result: FileResult) -> int | NotWritten:
        """Write `result.fixed_text` to the file; the number of fixes written (0 when they were
        already written through another path to the same file), or why nothing was written."""
        fixed_text = result.fixed_text or ""
        target = os.path.realpath(result.path)
        try:
            status = os.stat(target)
        except OSError as exc:
            return NotWritten(f"fixes not written: {exc.strerror or exc}", error=True)
        if not stat.S_ISREG(status.st_mode):
            return NotWritten("not a regular file, fixes not written", error=False)
        identity = _identity(status)
        if identity in self._written:
            written_as, written_text = self._written[identity]
            if written_text == fixed_text:
                return 0
            return NotWritten(f"fixes not written: the same file was fixed as {written_as} "
                              f"under other settings", error=False)
        if not status.st_mode & _ANY_WRITE_BIT or not os.access(target, os.W_OK):
            return NotWritten("read-only, fixes not written", error=False)
        try:
            with open(target, "rb") as handle:
                changed = handle.read() != result.original_bytes
        except OSError as exc:
            return NotWritten(f"fixes not written: {exc.strerror or exc}", error=True)
        if changed:
            return NotWritten("changed since it was checked, fixes not written", error=True)
        payload = _encoded(result)
        if isinstance(payload, NotWritten):
            return payload
        try:
            if status.st_nlink > 1 or not _replace_atomically(target, payload, status):
                failure = _rewrite_in_place(target, payload, result.original_bytes or b"")
                if failure:
                    return NotWritten(failure, error=True)
        except OSError as exc:
            return NotWritten(f"fixes not written: {exc.strerror or exc}", error=True)
        try:
            identity = _identity(os.stat(target))  # a new inode when the file was replaced
        except OSError:
            pass
        self._written[identity] = (result.path, fixed_text)
        return result.fixed_count


class PatchMaker:
    """The `--diff` patches of one run: each real file once, named so that a patch tool applied in
    the current directory changes the file itself, not a symlink to it."""

    def __init__(self) -> None:
        self._shown: set[str] = set()

    def patch(self, result: FileResult) -> bytes | NotWritten:
        """The patch from the checked bytes to what `--fix` would write; b"" if already shown."""
        target = os.path.realpath(result.path)
        if target in self._shown:
            return b""
        payload = _encoded(result)
        if isinstance(payload, NotWritten):
            return payload
        self._shown.add(target)
        return unified_patch(_patch_name(result.path, target), result.original_bytes or b"", payload)


def _identity(status: os.stat_result) -> tuple[int, int]:
    return status.st_dev, status.st_ino


def _encoded(result: FileResult) -> bytes | NotWritten:
    try:
        return encode_like(result.original_bytes or b"", result.fixed_text or "", result.path)
    except (UnicodeEncodeError, LookupError, SyntaxError) as exc:
        return NotWritten(f"fixes not written: cannot encode the fixed text: {exc}", error=True)


def _patch_name(path: str, target: str) -> str:
    """`path` as given when no symlink leads to it; else the resolved file, relative to the
    (resolved) current directory when under it: `git apply` refuses to patch through a symlink."""
    if os.path.abspath(path) == target:
        return path
    here = os.path.realpath(os.getcwd())
    if os.path.commonpath([here, target]) == here:
        return os.path.relpath(target, here)
    return target


def _replace_atomically(target: str, payload: bytes, status: os.stat_result) -> bool:
    """Replace the file by a new one holding `payload`, with its mode, owner and group; False,
    writing nothing, when the new file could not be given its owner or group or its directory
    cannot be written."""
    try:
        handle, temp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".jaxlint-", suffix=".tmp")
    except PermissionError:
        return False
    replaced = False
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
            created = os.fstat(out.fileno())
        if (created.st_uid, created.st_gid) != (status.st_uid, status.st_gid):
            try:
                os.chown(temp, status.st_uid, status.st_gid)
            except PermissionError:
                return False
        os.chmod(temp, stat.S_IMODE(status.st_mode))  # after chown, which may clear the set-id bits
        os.replace(temp, target)
        replaced = True
        return True
    finally:
        if not replaced:
            try:
                os.unlink(temp)
            except OSError:
                pass


def _rewrite_in_place(target: str, payload: bytes, original: bytes) -> str | None:
    """Overwrite the file's content, keeping its inode; the error message if that failed."""
    try:
        _overwrite(target, payload)
    except OSError as exc:
        message = f"fixes not written: {exc.strerror or exc}"
        try:
            _overwrite(target, original)
        except OSError as again:
            return f"{message}; restoring the original text failed too ({again.strerror or again}), the file may be damaged"
        return message
    return None


def _overwrite(target: str, payload: bytes) -> None:
    # No O_TRUNC: writing over the old bytes first, then cutting what is left, keeps a failure
    # (a full disk) from leaving an empty file.
    with os.fdopen(os.open(target, os.O_WRONLY), "wb") as out:
        out.write(payload)
        out.truncate()
        out.flush()
        os.fsync(out.fileno())
