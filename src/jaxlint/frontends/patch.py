"""Unified diffs of a file's bytes, in the form `git apply` and `patch` accept.

The diff is taken on bytes, not decoded text, so that it applies to the file as it is on disk:
whatever its encoding, byte-order mark and line endings. Lines are split the way patch tools
split them, after each LF only: a CRLF line ends in CR LF, and a file that uses CR alone is one
long line. A last line without LF gets the `\\ No newline at end of file` marker.
"""
from __future__ import annotations

import difflib
import os

#: Unchanged lines shown around each change, as `diff -u` does.
CONTEXT_LINES = 3
NO_NEWLINE_MARKER = b"\\ No newline at end of file\n"


def unified_patch(path: str, before: bytes, after: bytes) -> bytes:
    """The patch that turns `before` into `after` for the file at `path` (relative to where the
    patch will be applied, without the `a/`/`b/` prefixes, which are added); b"" if equal."""
    old, new = split_lines(before), split_lines(after)
    hunks = []
    for group in difflib.SequenceMatcher(None, old, new).get_grouped_opcodes(CONTEXT_LINES):
        old_start, old_stop = group[0][1], group[-1][2]
        new_start, new_stop = group[0][3], group[-1][4]
        hunks.append(b"@@ -%s +%s @@\n" % (_range(old_start, old_stop), _range(new_start, new_stop)))
        for tag, old_from, old_to, new_from, new_to in group:
            if tag == "equal":
                hunks.extend(_marked(b" ", old[old_from:old_to]))
            else:
                hunks.extend(_marked(b"-", old[old_from:old_to]))
                hunks.extend(_marked(b"+", new[new_from:new_to]))
    if not hunks:
        return b""
    name = os.fsencode(path).replace(os.sep.encode(), b"/")
    header = [b"--- " + quote_path(b"a/" + name) + b"\n", b"+++ " + quote_path(b"b/" + name) + b"\n"]
    if b" " in name and not header[0].endswith(b'"\n'):
        # A tab ends a name that holds spaces, as git writes it: GNU patch would stop at the space.
        header = [line[:-1] + b"\t\n" for line in header]
    return b"".join(header + hunks)


def split_lines(data: bytes) -> list[bytes]:
    """The lines of `data`, each ending in LF except perhaps the last; a CR alone ends no line."""
    pieces = data.split(b"\n")
    last = pieces.pop()
    lines = [piece + b"\n" for piece in pieces]
    if last:
        lines.append(last)
    return lines


def quote_path(name: bytes) -> bytes:
    """`name` as git writes it in a patch header: in double quotes, with C escapes, when it holds a
    quote, a backslash or a control character (a tab would otherwise end the name); else as is."""
    if not any(byte < 0x20 or byte == 0x7F or byte in b'"\\' for byte in name):
        return name
    escaped = bytearray(b'"')
    for byte in name:
        if byte in b'"\\':
            escaped += b"\\" + bytes([byte])
        elif byte < 0x20 or byte == 0x7F:
            escaped += b"\\%03o" % byte
        else:
            escaped.append(byte)
    return bytes(escaped + b'"')


def _range(start: int, stop: int) -> bytes:
    """A hunk's range: first line (1-based) and count; an empty range names the line before it."""
    count = stop - start
    return b"%d,%d" % (start + 1 if count else start, count)


def _marked(prefix: bytes, lines: list[bytes]) -> list[bytes]:
    out = []
    for line in lines:
        out.append(prefix + line)
        if not line.endswith(b"\n"):
            out.append(b"\n" + NO_NEWLINE_MARKER)
    return out
