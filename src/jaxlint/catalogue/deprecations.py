"""The deprecated-API table shipped with jaxlint (`data/deprecations.tsv`), loaded once per process."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "data" / "deprecations.tsv"


def _version(text: str) -> tuple[int, ...] | None:
    return tuple(int(p) for p in text.split(".")) if text else None


def version_text(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True)
class Deprecation:
    symbol: str
    #: attribute | module | method | property | keyword (`function:keyword`) | positional
    #: (`function:index`: the argument at that index, named `replacement`, must now be passed by
    #: keyword) | config (`jax.config.update:flag`) | context (a callable whose results must not be
    #: entered with `with`)
    kind: str
    replacement: str
    deprecated_in: tuple[int, ...] | None
    removed_in: tuple[int, ...] | None
    replacement_since: tuple[int, ...] | None
    mechanical: bool
    advice: str
    source: str = ""

    def fixable_for(self, target: tuple[int, ...] | None) -> bool:
        """A mechanical rename whose replacement exists in the oldest JAX the project supports."""
        if not (self.mechanical and self.replacement):
            return False
        return target is None or self.replacement_since is None or self.replacement_since <= target


@dataclass(frozen=True)
class DeprecationTable:
    by_symbol: dict[str, Deprecation]
    methods: dict[str, Deprecation]
    keywords: dict[str, dict[str, Deprecation]]
    #: attributes of JAX arrays read without a call (`arr.device_buffer`), by attribute name
    properties: dict[str, Deprecation]
    #: function -> index of a positional argument -> the entry that says it must be a keyword
    positionals: dict[str, dict[int, Deprecation]]
    #: configuration setter -> flag name -> the entry of the removed flag
    flags: dict[str, dict[str, Deprecation]]
    #: callables whose results are deprecated as `with` context managers (`with mesh:`)
    contexts: dict[str, Deprecation]


    def lookup(self, qualified: str) -> Deprecation | None:
        """The entry for `qualified` or for its longest deprecated prefix (a deprecated module)."""
        name = qualified
        while name:
            entry = self.by_symbol.get(name)
            if entry is not None:
                return entry
            name = name.rpartition(".")[0]
        return None


@lru_cache(maxsize=None)
def load_table(path: Path = TABLE) -> DeprecationTable:
    by_symbol: dict[str, Deprecation] = {}
    methods: dict[str, Deprecation] = {}
    properties: dict[str, Deprecation] = {}
    keywords: dict[str, dict[str, Deprecation]] = {}
    positionals: dict[str, dict[int, Deprecation]] = {}
    flags: dict[str, dict[str, Deprecation]] = {}
    contexts: dict[str, Deprecation] = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            entry = Deprecation(
                symbol=row["symbol"], kind=row["kind"], replacement=row["replacement"],
                deprecated_in=_version(row["deprecated_in"]), removed_in=_version(row["removed_in"]),
                replacement_since=_version(row["replacement_since"]),
                mechanical=row["mechanical"] == "yes", advice=row["advice"], source=row.get("source") or "",
            )
            if entry.kind == "method":
                methods[entry.symbol.rpartition(".")[2]] = entry
            elif entry.kind == "property":
                properties[entry.symbol.rpartition(".")[2]] = entry
            elif entry.kind == "keyword":
                function, _, keyword = entry.symbol.partition(":")
                keywords.setdefault(function, {})[keyword] = entry
            elif entry.kind == "positional":
                function, _, index = entry.symbol.partition(":")
                positionals.setdefault(function, {})[int(index)] = entry
            elif entry.kind == "config":
                setter, _, flag = entry.symbol.partition(":")
                flags.setdefault(setter, {})[flag] = entry
            elif entry.kind == "context":
                contexts[entry.symbol] = entry
            else:
                by_symbol[entry.symbol] = entry
    return DeprecationTable(by_symbol, methods, keywords, properties, positionals, flags, contexts)


@lru_cache(maxsize=None)
def old_path_aliases() -> dict[str, str]:
    """Old dotted paths that name the same object as their replacement (`jax.api` -> `jax`,
    `jax.tree_multimap` -> `jax.tree.map`): the table's mechanical renames of modules and attributes
    within JAX."""
    return {entry.symbol: entry.replacement for entry in load_table().by_symbol.values()
            if entry.mechanical and entry.kind in ("attribute", "module")
            and (entry.replacement == "jax" or entry.replacement.startswith("jax."))}
