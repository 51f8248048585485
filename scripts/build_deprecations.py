"""Regenerate src/jaxlint/catalogue/data/deprecations.tsv, the table rule JAX602 reads.

Inputs:
  * the symbols extracted from JAX's own `_deprecations` tables
    (default: ../shared/data/jax-deprecations.tsv, relative to the repository root);
  * src/jaxlint/catalogue/data/deprecations-curated.tsv, the single place for human decisions: which
    renames are mechanical, since when the replacement exists, advice, corrected versions, and the
    deprecations JAX expressed in other ways. A curated cell overrides the generated one; an empty
    cell keeps it; a cell holding `-` clears it. Curated symbols absent from the input are added.

Every row names its source: the CHANGELOG entry or release tag that shows the deprecation and the
removal (curated), or the releases whose `_deprecations` tables list the symbol (generated).

Usage: python scripts/build_deprecations.py [SOURCE_TSV] [--output PATH]
"""
from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "src" / "jaxlint" / "catalogue" / "data"
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "jax-deprecations.tsv"
CURATED = DATA / "deprecations-curated.tsv"
OUTPUT = DATA / "deprecations.tsv"

COLUMNS = ["symbol", "kind", "replacement", "deprecated_in", "removed_in", "replacement_since", "mechanical", "advice",
           "source"]
KINDS = {"attribute", "module", "method", "property", "keyword", "positional", "config", "context"}
CLEAR = "-"

# Generic advice for rows the curated file says nothing specific about.
ADVICE_NOT_A_RENAME = "it is not a drop-in rename: check the arguments and behaviour at this call site"
ADVICE_NO_REPLACEMENT = "no public replacement: remove the dependency on this API"


def normalise_replacement(text: str) -> str:
    text = text.strip()
    if text.endswith("()"):
        text = text[:-2]
    if text.startswith("jnp."):
        text = "jax.numpy." + text[len("jnp."):]
    return text


def read_tsv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def generated_rows(source: Path) -> dict[str, dict[str, str]]:
    rows: dict[str, dict[str, str]] = {}
    for row in read_tsv(source):
        symbol = row["symbol"].strip()
        if symbol.rpartition(".")[2].startswith("_"):
            continue  # private names are not something users write
        rows[symbol] = {
            "symbol": symbol,
            "kind": "attribute",
            "replacement": normalise_replacement(row["replacement_named_by_jax"]),
            "deprecated_in": row["listed_since"].strip(),
            "removed_in": (row["raises_since"] or row["entry_gone_in"]).strip(),
            "replacement_since": "",
            "mechanical": "no",
            "advice": "",
            "source": table_source(row),
        }
    return rows


def table_source(row: dict[str, str]) -> str:
    """Where the extracted facts come from: the releases whose `_deprecations` tables hold the symbol."""
    text = f"_deprecations table of jax-v{row['listed_since'].strip()}"
    if row["raises_since"].strip():
        text += f"; raises from jax-v{row['raises_since'].strip()}"
    if row["entry_gone_in"].strip():
        text += f"; entry gone in jax-v{row['entry_gone_in'].strip()}"
    return text


def apply_curated(rows: dict[str, dict[str, str]], curated: list[dict[str, str]]) -> None:
    for row in curated:
        symbol = row["symbol"].strip()
        target = rows.setdefault(symbol, {column: "" for column in COLUMNS} | {"symbol": symbol, "mechanical": "no"})
        for column in COLUMNS[1:]:
            value = (row.get(column) or "").strip()
            if value == CLEAR:
                target[column] = ""
            elif value:
                target[column] = value


def finish(row: dict[str, str]) -> dict[str, str]:
    if row["kind"] not in KINDS:
        raise ValueError(f"{row['symbol']}: unknown kind {row['kind']!r}")
    if row["mechanical"] == "yes" and not row["replacement"]:
        raise ValueError(f"{row['symbol']}: mechanical without a replacement")
    if not row["source"]:
        raise ValueError(f"{row['symbol']}: no source for the entry")
    if row["mechanical"] != "yes" and not row["advice"]:
        row["advice"] = ADVICE_NOT_A_RENAME if row["replacement"] else ADVICE_NO_REPLACEMENT
    return row


def build(source: Path, curated: Path = CURATED) -> str:
    rows = generated_rows(source)
    apply_curated(rows, read_tsv(curated))
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE, escapechar="\\")
    writer.writerow(COLUMNS)
    for symbol in sorted(rows):
        row = finish(rows[symbol])
        writer.writerow([row[column] for column in COLUMNS])
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = build(args.source)
    args.output.write_text(text, encoding="utf-8", newline="")
    print(f"wrote {args.output} ({text.count(chr(10)) - 1} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
