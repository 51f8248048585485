"""Reading a file to check without blocking or swallowing it: regular files only, within a size limit.

Below every other layer, and importing nothing of jaxlint, so that the command line can read
what its cache needs before the analysis is imported at all.
"""
from __future__ import annotations

import os
import stat

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
