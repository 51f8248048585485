"""The progress line on a terminal's stderr: rewritten in place, at most ten times a second, and
erased when the phase it counts ends. Never used for pipes or CI logs (the caller decides)."""
from __future__ import annotations

import sys
import time

#: seconds between two rewrites of the line (a rewrite per file would cost more than it tells)
REFRESH_SECONDS = 0.1


class ProgressLine:
    def __init__(self, what: str, unit: str) -> None:
        self.what, self.unit = what, unit
        self._shown_at = float("-inf")
        self._visible = False

    def show(self, count: int, total: int) -> None:
        now = time.monotonic()
        if count < total and now - self._shown_at < REFRESH_SECONDS:
            return
        self._shown_at = now
        sys.stderr.write(f"\r\033[Kjaxlint: {self.what} {count}/{total} {self.unit}")
        sys.stderr.flush()
        self._visible = True

    def clear(self) -> None:
        if self._visible:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self._visible = False


class ModulesProgress:
    """The project analysis: modules settled before the files are checked (in the process that
    checks them)."""

    def __init__(self) -> None:
        self.line = ProgressLine("analysing the project:", "import groups")

    def __call__(self, done: int, total: int) -> None:
        if done >= total:
            self.line.clear()
        elif total > 1:
            self.line.show(done, total)
