"""The language server's byte stream: `Content-Length` frames read from the client and written to it.

The reader is lenient in what it takes and never loses its place for good:

- header names in any case, lines ended by CRLF or LF alone;
- a header block with garbage before it (the end of a frame whose length was short) is found again
  by its `Content-Length` line, at the end of a line: a JSON body escapes its line breaks, so the
  text of a document never looks like one;
- a body that holds one JSON value and more (a length a few bytes too long) gives the value, and
  what follows is read as the next frame's start; a body cut short is completed from what the
  client already sent up to the next header, where that makes it whole;
- a length above `MAX_FRAME_BYTES` is refused without reading it whole (its bytes are skipped as
  the stream is searched for the next header), so no claim of the client's can exhaust memory.

What cannot be read as JSON is a `BadFrame`, which the server answers with a parse error (-32700).
"""
from __future__ import annotations

import json
import logging
import os
import re
import select
import threading
from dataclasses import dataclass
from typing import Callable

#: the largest body accepted: a buffer at the size limit of a checked file, escaped as JSON, fits
MAX_FRAME_BYTES = 64 * 1024 * 1024
#: a line longer than this while the stream is searched is cut to its end (headers are short)
_MAX_LINE = 1024 * 1024
_KEPT_OF_LONG_LINE = 256
#: how long a body that is already a whole JSON value waits for the bytes its length still claims
_GRACE_SECONDS = 0.2

_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)[ \t]*$", re.IGNORECASE)
_NEXT_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
_HEADER = re.compile(rb"[A-Za-z0-9-]+[ \t]*:.*")

logger = logging.getLogger(__name__)


@dataclass
class BadFrame:
    """A frame whose body is not one JSON value (what the client is told, in one line)."""

    reason: str


class FrameReader:
    """Reads the client's messages from a file descriptor: `read()` gives the next JSON value, a
    `BadFrame`, or None once the stream has ended."""

    def __init__(self, fd: int, limit: int = MAX_FRAME_BYTES) -> None:
        self._fd = fd
        self._limit = limit
        self._buffer = bytearray()
        self._ended = False

    def read(self):
        while True:
            length = self._header_block()
            if length is None:
                return None
            if length > self._limit:
                logger.warning("jaxlint server: refused a frame of %d bytes (the limit is %d); "
                               "looking for the next frame", length, self._limit)
                continue
            body = self._body(length)
            if body is None:
                return None
            return self._decode(body)

    # -- the stream -------------------------------------------------------------------------------
    def _more(self, wait: float | None = None) -> bool:
        """Reads what the client sent next (waiting at most `wait` seconds when given); False at
        the end of the stream, or when nothing came in time."""
        if self._ended:
            return False
        if wait is not None and not select.select([self._fd], [], [], wait)[0]:
            return False
        try:
            data = os.read(self._fd, 1 << 16)
        except OSError:
            data = b""
        if not data:
            self._ended = True
            return False
        self._buffer += data
        return True

    def _line(self) -> bytes | None:
        """The next line without its line break; None at the end of the stream."""
        searched = 0
        while True:
            end = self._buffer.find(b"\n", searched)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                return line[:-1] if line.endswith(b"\r") else line
            if len(self._buffer) > _MAX_LINE:
                del self._buffer[:-_KEPT_OF_LONG_LINE]
            searched = len(self._buffer)
            if not self._more():
                return None

    def _header_block(self) -> int | None:
        """Reads headers up to the blank line that ends them: the body's length, None at the end."""
        length = None
        out_of_step = False
        while True:
            line = self._line()
            if line is None:
                return None
            if not line.strip():
                if length is not None:
                    return length
                continue
            found = _LENGTH.search(line)
            if found is not None:
                out_of_step = out_of_step or found.start() > 0
                length = int(found.group(1))
            elif not _HEADER.fullmatch(line):
                out_of_step, length = True, None
            if out_of_step:
                logger.warning("jaxlint server: bytes outside any frame skipped")
                out_of_step = False

    def _body(self, length: int) -> bytes | None:
        while len(self._buffer) < length:
            if not self._buffer.rstrip().endswith(b"}") or not _whole_json(bytes(self._buffer)):
                if not self._more():
                    return None
            elif not self._more(_GRACE_SECONDS):
                if self._ended:
                    return None
                logger.warning("jaxlint server: a frame %d bytes shorter than its Content-Length",
                               length - len(self._buffer))
                length = len(self._buffer)
        body = bytes(self._buffer[:length])
        del self._buffer[:length]
        return body

    # -- the body ---------------------------------------------------------------------------------
    def _decode(self, body: bytes):
        try:
            text = body.decode("utf-8")
            value, end = json.JSONDecoder().raw_decode(text, len(text) - len(text.lstrip()))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            completed = self._completed(body)
            if completed is not None:
                return completed
            if isinstance(error, UnicodeDecodeError):
                return BadFrame("the message is not UTF-8")
            return BadFrame(f"the message is not JSON: {error.msg} (at character {error.pos})")
        rest = text[end:]
        if rest.strip():
            # a length too long: what follows the value is the start of the next frame
            self._buffer[:0] = rest.encode()
            logger.warning("jaxlint server: a frame longer than its JSON body; the rest read as the next frame")
        return value

    def _completed(self, body: bytes):
        """A body cut short, completed by what the client sent after it up to its next header (or
        up to now), if that makes it one JSON value."""
        following = _NEXT_HEADER.search(self._buffer)
        end = following.start() if following is not None else len(self._buffer)
        if end == 0:
            return None
        try:
            value = json.loads(body + bytes(self._buffer[:end]))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        del self._buffer[:end]
        logger.warning("jaxlint server: a frame shorter than its JSON body, completed")
        return value


def _whole_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return True


class FrameWriter:
    """Writes whole frames to the client, one at a time; `lost` is called once when the client is
    gone (the stream is broken), after which nothing is written."""

    def __init__(self, stream, lost: Callable[[], None]) -> None:
        self._stream = stream
        self._lost = lost
        self._lock = threading.Lock()
        self.broken = False

    def write(self, data: bytes) -> None:
        with self._lock:
            if self.broken:
                return
            try:
                self._stream.write(data)
                self._stream.flush()
            except (OSError, ValueError):
                self.broken = True
                self._lost()

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def close(self) -> None:
        """Nothing to close: the process ends with the stream."""
