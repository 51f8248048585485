"""The rule catalogue: one TOML file per rule under `rules/`, read at run time."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..model.finding import Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

FIELDS = ("code", "name", "severity", "summary", "why", "bad", "good", "fix", "references")


class CatalogueError(Exception):
    pass


@dataclass(frozen=True)
class RuleDoc:
    code: str
    name: str
    severity: Severity
    summary: str
    why: str
    bad: str
    good: str
    fix: str
    references: tuple[str, ...]
    path: Path

    @property
    def help_uri(self) -> str | None:
        return self.references[0] if self.references else None


def catalogue_dir() -> Path:
    """`jaxlint/catalogue/rules` inside an installed wheel, else `rules/` of a source checkout."""
    packaged = Path(__file__).resolve().parent / "rules"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[3] / "rules"
    if checkout.is_dir():
        return checkout
    raise CatalogueError(f"rule catalogue not found (looked in {packaged} and {checkout})")


def read_entry(path: Path) -> RuleDoc:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogueError(f"{path}: {exc}") from exc
    missing = [f for f in FIELDS if f not in data]
    unknown = sorted(set(data) - set(FIELDS))
    if missing or unknown:
        raise CatalogueError(f"{path}: missing fields {missing}, unknown fields {unknown}")
    try:
        severity = Severity(data["severity"])
    except ValueError as exc:
        raise CatalogueError(f"{path}: bad severity {data['severity']!r}") from exc
    return RuleDoc(
        code=data["code"],
        name=data["name"],
        severity=severity,
        summary=data["summary"].strip(),
        why=data["why"].strip(),
        bad=data["bad"].strip("\n"),
        good=data["good"].strip("\n"),
        fix=data["fix"].strip(),
        references=tuple(data["references"]),
        path=path,
    )


@lru_cache(maxsize=None)
def load_catalogue() -> dict[str, RuleDoc]:
    docs = {}
    for path in sorted(catalogue_dir().glob("JAX*.toml")):
        doc = read_entry(path)
        if not path.name.startswith(doc.code):
            raise CatalogueError(f"{path}: file name does not start with its code {doc.code}")
        docs[doc.code] = doc
    return docs


def render_text(doc: RuleDoc) -> str:
    """The rule's page as `jaxlint rule CODE` prints it (Markdown, readable as plain text)."""
    refs = "\n".join(f"- {ref}" for ref in doc.references) or "- (none)"
    return (
        f"# {doc.code} {doc.name}\n\n"
        f"Severity: {doc.severity.value}\n\n"
        f"## What it does\n\n{doc.summary}\n\n"
        f"## Why is this bad\n\n{doc.why}\n\n"
        f"## Example\n\n```python\n{doc.bad}\n```\n\n"
        f"## Use instead\n\n```python\n{doc.good}\n```\n\n"
        f"## Fix\n\n{doc.fix}\n\n"
        f"## References\n\n{refs}\n"
    )


def render_pages(docs: dict[str, RuleDoc]) -> dict[str, str]:
    """The docs/rules/ pages generated from the catalogue: file name -> content."""
    pages = {f"{doc.code}-{doc.name}.md": render_text(doc) for doc in docs.values()}
    rows = "\n".join(
        f"| [{doc.code}]({doc.code}-{doc.name}.md) | {doc.name} | {doc.severity.value} | {doc.summary} |"
        for doc in docs.values()
    )
    pages["index.md"] = (
        "# Rules\n\n"
        "Generated from the catalogue in `rules/` by `scripts/generate_docs.py`; do not edit by hand.\n"
        "`jaxlint rule CODE` prints the same page in a terminal.\n\n"
        "| code | name | severity | summary |\n|---|---|---|---|\n" + rows + "\n"
    )
    return pages
