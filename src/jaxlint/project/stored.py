"""The files jaxlint keeps between runs (the result cache, the project index, their records): read
through the same regular-file check, written whole or not at all, and sealed against damage.

Nothing read back is trusted. A file is read only when it is a regular file within a size limit
(a FIFO in its place never blocks, a link to a device is never read), and a piece of it counts only
when its seal matches: a digest of what made it (the jaxlint and its settings), where it belongs
(its key or path) and its text, so that a truncated, flipped or hand-edited piece reads as missing,
whatever it still parses as. The cache is not a place anyone is meant to write: the seal guards
against damage, not against someone forging it on purpose (they could edit the code as well).
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from ..reading import read_regular

#: What the `.gitignore` marker of the cache directory holds.
MARKER_TEXT = "# created by jaxlint\n*\n"


def read_json(path: str | Path, limit: int) -> Any:
    """The JSON a cache file holds, or None when it is missing, not a regular file, over `limit`
    bytes, or not JSON."""
    try:
        return json.loads(read_regular(str(path), limit))
    except (OSError, ValueError, RecursionError):  # unreadable, not UTF-8, not JSON, nested too deep
        return None


def write_atomically(path: str | Path, text: str) -> bool:
    """Writes `text` to `path` through a temporary file beside it: readers see the old file or the
    new one, never a part. False when it could not be written (nothing is then left behind)."""
    path = Path(path)
    try:
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    except OSError:
        return False
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
        return True
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass
        return False


def keep_out_of_version_control(marker: str | Path) -> None:
    """Writes the cache directory's `.gitignore` where it is missing, or empty (a write cut short by
    a full disk); never through a link, and never over a file someone wrote."""
    try:
        info = os.lstat(marker)
    except FileNotFoundError:
        info = None
    except OSError:
        return
    if info is not None and not (stat.S_ISREG(info.st_mode) and info.st_size == 0):
        return
    write_atomically(marker, MARKER_TEXT)


def seal(*parts: str) -> str:
    """The digest that a piece of the cache carries: of what made it, where it belongs and its text."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()[:32]
