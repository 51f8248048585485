"""Every fixture file: the findings are exactly the `# expect:` comments, line by line."""
from pathlib import Path

import pytest

from conftest import FIXTURES, checked_with_positions, expectations

FIXTURE_FILES = sorted(p for p in FIXTURES.glob("*.py") if not p.name.endswith(".fixed.py"))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_fixture_findings_match_expectations(path: Path):
    # `check_file` with JAX 0.4.30 targeted; a code off unless selected by its full code (JAX001)
    # is selected by its own fixtures. test_positions reads the positions asked in this same run.
    result, _ = checked_with_positions(path)
    found = sorted((f.start.line, f.code) for f in result.findings)
    assert found == expectations(path.read_text(encoding="utf-8"))


def test_every_rule_has_fixture_positives_and_negatives():
    from jaxlint.engine.registry import all_rules

    texts = {p.name: p.read_text(encoding="utf-8") for p in FIXTURE_FILES}
    for code in all_rules():
        mine = [t for name, t in texts.items() if name.startswith(code)]
        assert mine, f"{code} has no fixture file"
        assert any(code in c for t in mine for _, c in expectations(t)), f"{code} has no positive"
        assert any("negative" in t.lower() for t in mine), f"{code} fixtures have no hard negatives"
