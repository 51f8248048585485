"""A content-hash cache of findings: an unchanged file under unchanged settings is not re-analysed."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .. import __version__
from ..model.finding import Finding

CACHE_DIR_NAME = ".jaxlint_cache"


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

    def key(self, path: str, data: bytes) -> str:
        digest = hashlib.sha256(self.salt.encode())
        digest.update(os.path.abspath(path).encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    def get(self, key: str) -> list[Finding] | None:
        try:
            raw = (self.directory / key[:2] / f"{key}.json").read_text(encoding="utf-8")
            return [Finding.from_json(item) for item in json.loads(raw)]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, findings: list[Finding]) -> None:
        """Store findings; a cache that cannot be written is skipped silently (it is only a cache)."""
        try:
            folder = self.directory / key[:2]
            folder.mkdir(parents=True, exist_ok=True)
            marker = self.directory.parent / ".gitignore"
            if not marker.exists():
                marker.write_text("# created by jaxlint\n*\n", encoding="utf-8")
            payload = json.dumps([f.to_json() for f in findings])
            handle, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(payload)
            os.replace(temp, folder / f"{key}.json")
        except OSError:
            pass
