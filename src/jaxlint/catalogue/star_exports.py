"""The names `from m import *` binds for JAX's public modules, NumPy's and a few of the standard
library's (`data/star-exports.tsv`, rebuilt by `scripts/build_star_exports.py` from the libraries
themselves), loaded once per process."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "data" / "star-exports.tsv"


@dataclass(frozen=True)
class LibraryExports:
    #: name -> the qualified name of the object where it is not `module.name` (a module imported
    #: under another name: `jnp` in `jax.example_libraries.stax` is `jax.numpy`), else ""
    names: dict[str, str]
    #: names that only some of the versions the table was built from bind
    maybe: frozenset[str]


@lru_cache(maxsize=None)
def load_star_exports(path: Path = TABLE) -> dict[str, LibraryExports]:
    names: dict[str, dict[str, str]] = {}
    maybe: dict[str, set[str]] = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            module = row["module"]
            names.setdefault(module, {})[row["name"]] = row["object"]
            if row["versions"] == "some":
                maybe.setdefault(module, set()).add(row["name"])
    return {module: LibraryExports(found, frozenset(maybe.get(module, ()))) for module, found in names.items()}


def library_exports(module: str) -> LibraryExports | None:
    """What `from module import *` binds, for a module of the table; None for any other."""
    return load_star_exports().get(module)
