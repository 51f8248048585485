"""`--output-file`: the report goes to a file that is either the whole new report or left as it was."""
from __future__ import annotations

import os
import tempfile


class ReportFileError(Exception):
    """The report file could not be written; the message says why, on one line."""


def write_report_file(path: str, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same directory, renamed over `path`
    once complete: a reader never sees half a report, and a failure leaves `path` untouched.

    The new file gets the mode an existing report had, or the usual mode for a new file (umask).
    File names held as surrogates (bytes not valid UTF-8) are written back as those bytes.
    """
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ReportFileError(f"{path}: is a directory")
    try:
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as exc:
        raise ReportFileError(f"{path}: cannot write it ({exc.strerror or exc})") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", errors="surrogateescape", newline="") as stream:
            stream.write(text)
        os.chmod(temporary, _mode_for(path))
        os.replace(temporary, path)
    except OSError as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise ReportFileError(f"{path}: cannot write it ({exc.strerror or exc})") from None


def _mode_for(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
