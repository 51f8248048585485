"""The README's and the docs' relative links reach a file, and a heading of it when they name one
(as GitHub makes a heading's anchor: lower case, punctuation dropped, spaces as hyphens)."""
import re

import pytest

from conftest import ROOT

PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCED = re.compile(r"^```.*?^```", re.S | re.M)


def anchors(text: str) -> set[str]:
    headings = re.findall(r"^#+\s+(.*)$", _FENCED.sub("", text), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_anchors_are_made_as_github_makes_them():
    assert anchors("## Suppressing findings with `# noqa`\n```\n# not a heading\n```\n### `--output-file`\n") == {
        "suppressing-findings-with--noqa", "--output-file"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_reach_their_file_and_heading(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _FENCED.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination.read_text(encoding="utf-8")):
            broken.append(f"{target}: no such heading")
    assert not broken, broken
