"""Regenerate docs/rules/ from the rule catalogue in rules/, and docs/precision.md from the ecosystem
ledger (tests/ecosystem/ledger.json) and the corpus manifest; tests fail when they drift apart."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    out = write_rule_pages(ROOT)
    print(f"wrote {len(list(out.glob('*.md')))} pages to {out.relative_to(ROOT)}")
    return write_precision()


def write_rule_pages(root: Path) -> Path:
    """docs/rules/ of the tree at `root`, from its catalogue (a page per entry and the index; pages
    of entries that are gone are removed). Returns the folder."""
    from jaxlint.catalogue.rule_docs import read_entry, render_pages

    docs = {}
    for path in sorted((root / "rules").glob("JAX*.toml")):
        doc = read_entry(path)
        docs[doc.code] = doc
    out = root / "docs" / "rules"
    out.mkdir(parents=True, exist_ok=True)
    pages = render_pages(docs)
    for stale in out.glob("*.md"):
        if stale.name not in pages:
            stale.unlink()
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")
    return out


def write_precision() -> int:
    sys.path.insert(0, str(ROOT / "scripts"))
    import ecosystem

    try:
        manifest = ecosystem.manifest_rows(ecosystem.DEFAULT_CORPUS)
        ledger = ecosystem.read_ledger()
    except (OSError, ecosystem.EcosystemError) as exc:
        print(f"docs/precision.md not written: {exc}", file=sys.stderr)
        return 1
    text = ecosystem.render_precision(ledger, manifest, ecosystem.rule_names())
    ecosystem.PRECISION_DOC.write_text(text, encoding="utf-8")
    print(f"wrote {ecosystem.PRECISION_DOC.relative_to(ROOT)} ({len(ledger)} verdicts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
