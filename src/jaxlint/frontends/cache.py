"""A content-hash cache of findings: an unchanged file under unchanged settings is not re-analysed.

An entry is `{"key": KEY, "findings": [...]}` in `<root>/.jaxlint_cache/<version>/<KEY[:2]>/<KEY>.json`.
Nothing read from the cache is trusted: an entry that is not a regular file, is not JSON, names
another key or holds a finding of the wrong shape is a miss, and the file is overwritten after the
analysis. A cache that cannot be read or written is skipped silently: it is only a cache.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from .. import __version__
from ..model.finding import Applicability, Edit, Finding, Fix, Position, Severity, TraceLocation
from ..reading import read_regular

CACHE_DIR_NAME = ".jaxlint_cache"
#: the largest entry read: far above what any real file's findings take
MAX_ENTRY_BYTES = 16 * 1024 * 1024
_CODE = re.compile(r"JAX\d{3}")


def _code_fingerprint() -> str:
    """Changes whenever jaxlint's own files change (a development checkout, a reinstall)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".tsv", ".toml"):
            stat = path.stat()
            digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    from ..catalogue.rule_docs import catalogue_dir

    for path in sorted(catalogue_dir().glob("*.toml")):
        stat = path.stat()
        digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


class FindingCache:
    def __init__(self, root: str | Path, settings_fingerprint: str) -> None:
        self.directory = Path(root) / CACHE_DIR_NAME / __version__
        self.salt = f"{__version__}\0{_code_fingerprint()}\0{settings_fingerprint}\0"

    def key(self, path: str, data: bytes, context: str = "") -> str:
        """The key of a file's findings: its text, and `context`, what they depend on beyond it (in
        a project, the modules it imports and the seeds its importers give it)."""
        digest = hashlib.sha256(self.salt.encode())
        digest.update(os.path.abspath(path).encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
        digest.update(context.encode())
        digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    def get(self, key: str) -> list[Finding] | None:
        """The findings stored under `key`, or None: a miss, also for an entry of the wrong shape."""
        found = self.get_entry(key)
        return found[0] if found is not None else None

    def get_entry(self, key: str) -> tuple[list[Finding], Any] | None:
        """The findings stored under `key` and what was stored with them (`put`'s `extra`)."""
        try:
            entry = json.loads(read_regular(str(self.directory / key[:2] / f"{key}.json"), MAX_ENTRY_BYTES))
            if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("findings"), list):
                return None
            return [_finding(item) for item in entry["findings"]], entry.get("extra")
        except (OSError, ValueError, RecursionError):  # unreadable, not JSON, or not a finding
            return None

    def put(self, key: str, findings: list[Finding], extra: Any = None) -> None:
        """Store findings; a cache that cannot be written is skipped silently (it is only a cache)."""
        try:
            folder = self.directory / key[:2]
            folder.mkdir(parents=True, exist_ok=True)
            marker = self.directory.parent / ".gitignore"
            if not os.path.lexists(marker):  # never write through a link, whatever it points to
                marker.write_text("# created by jaxlint\n*\n", encoding="utf-8")
            payload = json.dumps({"key": key, "findings": [f.to_json() for f in findings], "extra": extra})
            handle, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        except OSError:
            return
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(payload)
            os.replace(temp, folder / f"{key}.json")
        except OSError:
            try:
                os.unlink(temp)
            except OSError:
                pass


def project_index_path(root: str | Path, roots: tuple[str, ...]) -> Path:
    """Where the index of the project with these source roots is kept, beside the results."""
    name = hashlib.sha256("\0".join(sorted(roots)).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return Path(root) / CACHE_DIR_NAME / __version__ / "projects" / f"{name}.json"


def cache_marker(root: str | Path) -> Path:
    """The `.gitignore` that keeps the cache directory out of version control."""
    return Path(root) / CACHE_DIR_NAME / ".gitignore"


def project_index_salt(settings) -> str:
    """What made an index: an index made by another jaxlint or with other settings is not used."""
    return f"{__version__}\0{_code_fingerprint()}\0{settings.fingerprint()}"


class ProjectState:
    """The context each file of a project had when its findings were stored, kept while every
    module of the project stays the file it was.

    The findings of a project's file depend on its text and on its context: what the other modules
    give it, which the project index replays, through the engine, to validate an entry. When every
    module is the same file as when the contexts were recorded (the same paths, each with the same
    size, inode, modification and change times), with the same jaxlint, settings and working
    directory, each context is still the one the replay would give: a run then finds a file's
    findings under its recorded context, without loading the analysis. This trusts a file's status
    as the index does for the modules it does not read; a file's own text is always read and hashed.

    One small file per project, beside its index (`<index name>.state.json`), rewritten by a run
    that records a new context; the record of another state is dropped.
    """

    def __init__(self, root: str | Path, roots: tuple[str, ...], salt: str, modules: tuple[str, ...]) -> None:
        self.path = project_index_path(root, roots).with_suffix(".state.json")
        self.marker = cache_marker(root)
        self.stamp = _modules_stamp(salt, roots, modules)
        self.contexts: dict[str, str] = {}
        self._changed = False
        if self.stamp is not None:
            self.contexts = self._stored()

    def _stored(self) -> dict[str, str]:
        """The contexts the record holds for this state."""
        try:
            stored = json.loads(read_regular(str(self.path), MAX_ENTRY_BYTES))
        except (OSError, ValueError, RecursionError):
            return {}
        files = stored.get("files") if isinstance(stored, dict) and stored.get("stamp") == self.stamp else None
        if not isinstance(files, dict):
            return {}
        return {path: context for path, context in files.items() if isinstance(context, str)}

    def context(self, path: str) -> str | None:
        """The context the file's findings were stored under in this state, if recorded."""
        return self.contexts.get(os.path.abspath(path))

    def record(self, path: str, context: str) -> None:
        if self.stamp is not None and self.contexts.get(os.path.abspath(path)) != context:
            self.contexts[os.path.abspath(path)] = context
            self._changed = True

    def save(self) -> None:
        """Writes the record if it changed; a cache that cannot be written is skipped silently."""
        if not self._changed:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not os.path.lexists(self.marker):  # never write through a link, whatever it points to
                self.marker.write_text("# created by jaxlint\n*\n", encoding="utf-8")
            handle, temp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
        except OSError:
            return
        # runs over other files of the same state (the pre-commit hook's batches) keep theirs
        contexts = {**self._stored(), **self.contexts}
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({"stamp": self.stamp, "files": contexts}, out, separators=(",", ":"))
            os.replace(temp, self.path)
            self._changed = False
        except OSError:
            try:
                os.unlink(temp)
            except OSError:
                pass


def _modules_stamp(salt: str, roots: tuple[str, ...], modules: tuple[str, ...]) -> str | None:
    """What the contexts of a project's files depend on: jaxlint and the settings (`salt`), the
    working directory (messages name other modules relative to it), the source roots and the status
    of every module's file; None when a module cannot be looked at."""
    digest = hashlib.sha256(f"{salt}\0{os.getcwd()}\0".encode("utf-8", "surrogateescape"))
    for root in sorted(roots):
        digest.update(f"{root}\0".encode("utf-8", "surrogateescape"))
    for path in sorted(os.path.abspath(module) for module in modules):
        try:
            info = os.stat(path)
        except OSError:
            return None
        digest.update(f"{path}\0{info.st_size}:{info.st_ino}:{info.st_dev}:{info.st_mtime_ns}:{info.st_ctime_ns}\0"
                      .encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _finding(item: Any) -> Finding:
    """A finding read back from an entry; ValueError unless every field has the shape `to_json` writes."""
    item = _fields(item, {"code": str, "name": str, "severity": str, "message": str, "path": str, "line": int,
                          "column": int, "end_line": int, "end_column": int, "cell": (int, type(None))})
    if not _CODE.fullmatch(item["code"]) or (item["cell"] is not None and item["cell"] < 0):
        raise ValueError("not a finding")
    fix = item.get("fix")
    if fix is not None:
        fix = _fields(fix, {"title": str, "applicability": str, "edits": list})
        edits = tuple(Edit(_position(edit, "line", "column"), _position(edit, "end_line", "end_column"),
                           _fields(edit, {"content": str})["content"], _cell(edit)) for edit in fix["edits"])
        fix = Fix(fix["title"], edits, Applicability(fix["applicability"]))
    trace = item.get("trace", [])
    if not isinstance(trace, list):
        raise ValueError("trace: wrong type")
    steps = tuple(TraceLocation(**{k: v for k, v in _fields(step, {"path": str, "line": int, "message": str,
                                                                  "cell": (int, type(None))}).items()
                                   if k in ("path", "line", "message", "cell")}) for step in trace)
    return Finding(item["code"], item["name"], Severity(item["severity"]), item["message"], item["path"],
                   _position(item, "line", "column"), _position(item, "end_line", "end_column"), fix, item["cell"],
                   trace=steps, headline=item["headline"] if isinstance(item.get("headline"), str) else None)


def _cell(item: dict) -> int | None:
    """The notebook cell of an edit (absent in a plain file)."""
    cell = item.get("cell")
    if cell is not None and (isinstance(cell, bool) or not isinstance(cell, int) or cell < 0):
        raise ValueError("cell: wrong type")
    return cell


def _fields(item: Any, types: dict[str, type | tuple[type, ...]]) -> dict:
    if not isinstance(item, dict):
        raise ValueError("not an object")
    for name, wanted in types.items():
        value = item.get(name)
        if isinstance(value, bool) or not isinstance(value, wanted):  # JSON true is not a line number
            raise ValueError(f"{name}: wrong type")
    return item


def _position(item: Any, line: str, column: str) -> Position:
    _fields(item, {line: int, column: int})
    if item[line] < 1 or item[column] < 1:
        raise ValueError("not a position")
    return Position(item[line], item[column])
