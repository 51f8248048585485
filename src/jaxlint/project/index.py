"""The project index: what the analysis of each module told the others, kept on disk between runs.

One JSON file per project (its source roots), beside the result cache. Per module (by real path):

* `stat` and `hash`: the file's status (modification and change times, size, inode) and the
  SHA-256 of its text, so that an unchanged file is neither read nor parsed again for what follows;
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
written is not written. Each module's entry is kept as its JSON text with a seal (`stored.seal`),
and is checked field by field when the module is first asked for: an entry damaged in any way is
no entry, and the module is read and analysed again as if the index had never known it.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable

from ..jaxmodel.values import Kind
from .stored import keep_out_of_version_control, read_json, seal, write_atomically

#: How many seed sets (for different received seeds) a module keeps.
MAX_CONTEXTS = 4
FORMAT = 4
#: The largest index read: a project of ten thousand modules takes a few tens of megabytes
MAX_INDEX_BYTES = 256 * 1024 * 1024


def file_status(path: str) -> list[int] | None:
    """What says a file is still the one an entry was made from; None when it cannot be looked at."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_mtime_ns, info.st_size, info.st_ino, info.st_dev, info.st_ctime_ns]


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
        #: the entries of modules looked at, each checked (`_valid_entry`) when first asked for
        self.modules: dict[str, dict[str, Any]] = {}
        #: path -> [seal, the entry's JSON text] as read, until the module is asked for
        self._stored: dict[str, Any] = {}
        self.dirty = False
        #: the modules whose entries this process changed (a save keeps other processes' others)
        self._touched: set[str] = set()
        if self.path is not None:
            self._stored = self._read()

    def _read(self) -> dict[str, Any]:
        data = read_json(self.path, MAX_INDEX_BYTES)
        if isinstance(data, dict) and data.get("format") == FORMAT and data.get("salt") == self.salt \
                and isinstance(data.get("modules"), dict):
            return data["modules"]
        return {}

    def _module(self, path: str) -> dict[str, Any] | None:
        """The module's entry: made in this run, or read from the index when its seal and every
        field are sound (anything else is no entry)."""
        entry = self.modules.get(path)
        if entry is None and path in self._stored:
            entry = self._unsealed(path, self._stored.pop(path))
            if entry is not None:
                self.modules[path] = entry
        return entry

    def _unsealed(self, path: str, stored: Any) -> dict[str, Any] | None:
        if not (isinstance(stored, list) and len(stored) == 2 and all(isinstance(part, str) for part in stored)):
            return None
        found, text = stored
        if found != seal(self.salt, path, text):
            return None
        try:
            entry = json.loads(text)
        except (ValueError, RecursionError):
            return None
        return entry if _valid_entry(entry) else None

    def save(self) -> None:
        if self.path is None or not self.dirty or not self.writable:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        if self.marker is not None:
            keep_out_of_version_control(self.marker)
        # workers of one run save in turn: what another saved meanwhile is kept, ours replaces it
        # only for the modules this process changed
        merged = self._read()
        for path in self._touched:
            if path in self.modules:
                try:
                    text = json.dumps(self.modules[path], separators=(",", ":"))
                except (TypeError, ValueError):
                    continue
                merged[path] = [seal(self.salt, path, text), text]
        # one string, then one write: `json.dump` hands the file thousands of small pieces
        # (three times slower on a large project's index)
        if write_atomically(self.path, json.dumps({"format": FORMAT, "salt": self.salt, "modules": merged},
                                                  separators=(",", ":"))):
            self.dirty = False

    # -- the file itself --------------------------------------------------------------------------
    def entry(self, path: str) -> dict[str, Any] | None:
        """The module's entry when the file is the one it was made from: the same size, inode,
        modification and change times (a copy that keeps the modification time, `cp -p` or
        `touch -r`, still changes the inode or the change time, which no tool sets back)."""
        entry = self._module(path)
        if entry is None:
            return None
        return entry if entry.get("stat") == file_status(path) else None

    def start(self, path: str, text_hash: str) -> dict[str, Any]:
        """The entry for the file as it is now: kept when its text is the same, else a new one."""
        status = file_status(path)
        entry = self._module(path)
        if entry is None or entry.get("hash") != text_hash:
            entry = self.modules[path] = {"hash": text_hash}
        if entry.get("stat") != status:
            entry["stat"] = status
        self._changed(path)
        return entry

    def _changed(self, path: str) -> None:
        self.dirty = True
        self._touched.add(path)

    # -- what was learnt ----------------------------------------------------------------------------
    def record_answer(self, path: str, question: str, record: dict) -> None:
        """`record`: {"a": the answer, "deps": [[path, question, answer], ...] it may depend on}."""
        entry = self._module(path)
        if entry is None:
            return
        entry.setdefault("answers", {})[question] = record
        self._changed(path)

    def seeds(self, path: str, context: str) -> dict | None:
        entry = self._module(path)
        return entry.get("seeds", {}).get(context) if entry else None

    def record_seeds(self, path: str, context: str, record: dict) -> None:
        """`record`: {"gives": the seeds given, "deps": the answers the analysis asked for}."""
        entry = self._module(path)
        if entry is None:
            return
        kept = entry.setdefault("seeds", {})
        if kept.get(context) == record:
            return
        kept[context] = record
        while len(kept) > MAX_CONTEXTS:
            kept.pop(next(iter(kept)))
        self._changed(path)


def _valid_entry(entry: Any) -> bool:
    """Whether an entry read back has every field of the shape this module writes (its answers'
    own shapes are the analysis's, sealed with the entry)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("hash"), str):
        return False
    status = entry.get("stat")
    if status is not None and not (isinstance(status, list) and len(status) == 5 and all(map(_is_int, status))):
        return False
    imports = entry.get("imports", [])
    if not (isinstance(imports, list) and all(isinstance(name, str) for name in imports)):
        return False
    answers = entry.get("answers", {})
    if not isinstance(answers, dict) or not all(
            isinstance(record, dict) and "a" in record and _valid_deps(record.get("deps")) for record in answers.values()):
        return False
    seeds = entry.get("seeds", {})
    return isinstance(seeds, dict) and all(_valid_seeds_record(record) for record in seeds.values())


def _valid_seeds_record(record: Any) -> bool:
    if not (isinstance(record, dict) and _valid_deps(record.get("deps")) and _valid_seed_list(record.get("gives"))):
        return False
    members = record.get("members")
    return members is None or (isinstance(members, dict) and all(
        isinstance(pair, list) and len(pair) == 2 and all(map(_valid_seed_list, pair)) for pair in members.values()))


def _valid_deps(deps: Any) -> bool:
    """`[[path, question, answer], ...]`: the answers a record was computed from."""
    return isinstance(deps, list) and all(
        isinstance(dep, list) and len(dep) == 3 and isinstance(dep[0], str) and isinstance(dep[1], str) for dep in deps)


def _valid_seed_list(seeds: Any) -> bool:
    return isinstance(seeds, list) and all(valid_seed(seed) for seed in seeds)


def valid_seed(seed: Any) -> bool:
    """Whether a seed as stored (`encoding.seed_to_json`) can be read back."""
    if not (isinstance(seed, list) and len(seed) == 6):
        return False
    target, qualname, kinds, modes, transform, chain = seed
    return (isinstance(target, str) and isinstance(qualname, str) and isinstance(transform, str)
            and isinstance(kinds, list) and all(isinstance(k, list) and len(k) == 2 and isinstance(k[0], str)
                                                and _is_int(k[1]) and k[1] in _KINDS for k in kinds)
            and isinstance(modes, list) and all(isinstance(mode, str) for mode in modes)
            and isinstance(chain, list) and all(map(_valid_step, chain)))


def _valid_step(step: Any) -> bool:
    """A link of a seed's chain: [path, line, caller, transform, cell]."""
    return (isinstance(step, list) and len(step) == 5 and isinstance(step[0], str) and _is_int(step[1])
            and isinstance(step[2], str) and isinstance(step[3], str)
            and (step[4] is None or (_is_int(step[4]) and step[4] >= 0)))


#: the values a parameter's kind is stored as
_KINDS = frozenset(int(kind) for kind in Kind)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
