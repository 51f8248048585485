"""The project index: what the analysis of each module told the others, kept on disk between runs.

One JSON file per project (its source roots), beside the result cache. Per module (by real path):

* `stat` and `hash`: the file's (modification time, size) and the SHA-256 of its text, so that an
  unchanged file is neither read nor parsed again for what follows;
* `imports`: the project modules it imports (the import graph);
* `answers`: what its functions told other modules (the function a name reaches and its
  parameters, what a call returns for a given signature, which parameters it consumes as keys,
  whether it returns an array) and what a star import of it binds, each with the answers of other modules its computation could
  have used (`deps`);
* `seeds`: per `context` (its text and the seeds it receives), the seeds it gives other modules
  (functions it traces there, with their chains) and the answers its analysis used. Modules that
  import one another are settled together: the first of them (by path) keeps, per context of the
  whole group (each member's text and the seeds it receives from outside), what every member
  received and gave (`members`).

A run over a few files reads the index: a recorded answer or seed set stands while its module's
text is the same and every answer it used is still the same (checked the same way, recursively);
otherwise the module is analysed again and the record replaced. So editing a helper in a way that
changes nothing its importers asked about costs no analysis of them, and a change that does is
never missed. An index that cannot be read is ignored (it is only a cache); one that cannot be
written is not written.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

#: How many seed sets (for different received seeds) a module keeps.
MAX_CONTEXTS = 4
FORMAT = 3


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def combined(parts: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()[:24]


class ProjectIndex:
    def __init__(self, path: str | Path | None, salt: str, writable: bool = True,
                 marker: str | Path | None = None) -> None:
        """`path`: the index file (None: kept in memory only), written back only if `writable`.
        `salt` names what made it (the version of jaxlint and the settings): an index made
        otherwise is not used. `marker`: a `.gitignore` written (if missing) when the index is."""
        self.path = Path(path) if path is not None else None
        self.salt = salt
        self.writable = writable
        self.marker = Path(marker) if marker is not None else None
        self.modules: dict[str, dict[str, Any]] = {}
        self.dirty = False
        #: the modules whose entries this process changed (a save keeps other processes' others)
        self._touched: set[str] = set()
        if self.path is not None:
            self._load()

    def _load(self) -> None:
        self.modules = self._read()

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError, RecursionError):
            return {}
        if isinstance(data, dict) and data.get("format") == FORMAT and data.get("salt") == self.salt \
                and isinstance(data.get("modules"), dict):
            return {k: v for k, v in data["modules"].items() if isinstance(v, dict)}
        return {}

    def save(self) -> None:
        if self.path is None or not self.dirty or not self.writable:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.marker is not None and not os.path.lexists(self.marker):  # never through a link
                self.marker.write_text("# created by jaxlint\n*\n", encoding="utf-8")
            handle, temp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
        except OSError:
            return
        # workers of one run save in turn: what another saved meanwhile is kept, ours replaces it
        # only for the modules this process changed
        merged = self._read()
        merged.update({path: self.modules[path] for path in self._touched if path in self.modules})
        try:
            # one string, then one write: `json.dump` hands the file thousands of small pieces
            # (three times slower on a large project's index)
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(json.dumps({"format": FORMAT, "salt": self.salt, "modules": merged}, separators=(",", ":")))
            os.replace(temp, self.path)
            self.dirty = False
        except (OSError, TypeError, ValueError):
            try:
                os.unlink(temp)
            except OSError:
                pass

    # -- the file itself --------------------------------------------------------------------------
    def entry(self, path: str) -> dict[str, Any] | None:
        """The module's entry when the file is unchanged since it was made (same time and size)."""
        entry = self.modules.get(path)
        if entry is None:
            return None
        try:
            info = os.stat(path)
        except OSError:
            return None
        return entry if entry.get("stat") == [info.st_mtime_ns, info.st_size] else None

    def start(self, path: str, text_hash: str) -> dict[str, Any]:
        """The entry for the file as it is now: kept when its text is the same, else a new one."""
        try:
            info = os.stat(path)
            stat = [info.st_mtime_ns, info.st_size]
        except OSError:
            stat = None
        entry = self.modules.get(path)
        if entry is None or entry.get("hash") != text_hash:
            entry = self.modules[path] = {"hash": text_hash}
        if entry.get("stat") != stat:
            entry["stat"] = stat
        self._changed(path)
        return entry

    def _changed(self, path: str) -> None:
        self.dirty = True
        self._touched.add(path)

    # -- what was learnt ----------------------------------------------------------------------------
    def record_answer(self, path: str, question: str, record: dict) -> None:
        """`record`: {"a": the answer, "deps": [[path, question, answer], ...] it may depend on}."""
        entry = self.modules.get(path)
        if entry is None:
            return
        entry.setdefault("answers", {})[question] = record
        self._changed(path)

    def seeds(self, path: str, context: str) -> dict | None:
        entry = self.modules.get(path)
        found = entry.get("seeds", {}).get(context) if entry else None
        return found if isinstance(found, dict) and "gives" in found and "deps" in found else None

    def record_seeds(self, path: str, context: str, record: dict) -> None:
        """`record`: {"gives": the seeds given, "deps": the answers the analysis asked for}."""
        entry = self.modules.get(path)
        if entry is None:
            return
        kept = entry.setdefault("seeds", {})
        if kept.get(context) == record:
            return
        kept[context] = record
        while len(kept) > MAX_CONTEXTS:
            kept.pop(next(iter(kept)))
        self._changed(path)
