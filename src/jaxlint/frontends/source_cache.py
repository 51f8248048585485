"""The lines of reported files and notebook cells, read once each, for the reports that quote them."""
from __future__ import annotations

import json
from pathlib import Path

from ..syntax.noqa import source_lines


class SourceCache:
    """Lines of the reported files (or notebook cells), read once each; None when unreadable."""

    def __init__(self) -> None:
        self._texts: dict[str, str | None] = {}
        self._notebooks: dict[str, list | None] = {}

    def lines(self, path: str, cell: int | None = None) -> list[str] | None:
        """The lines of `path` (of its cell `cell`, counted from 0, in a notebook), numbered as
        findings number them; None when the file or the cell cannot be read."""
        if cell is None:
            if path not in self._texts:
                try:
                    self._texts[path] = Path(path).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError, ValueError):
                    self._texts[path] = None
            text = self._texts[path]
        else:
            cells = self._cells(path)
            if cells is None or not 0 <= cell < len(cells):
                return None
            entry = cells[cell]
            source = entry.get("source", "") if isinstance(entry, dict) else ""
            text = "".join(str(part) for part in source) if isinstance(source, list) else str(source)
        return None if text is None else source_lines(text)

    def _cells(self, path: str) -> list | None:
        if path not in self._notebooks:
            try:
                data = json.loads(Path(path).read_text(encoding="utf-8"))
                cells = data.get("cells") if isinstance(data, dict) else None
                self._notebooks[path] = cells if isinstance(cells, list) else None
            except (OSError, UnicodeDecodeError, ValueError):
                self._notebooks[path] = None
        return self._notebooks[path]
