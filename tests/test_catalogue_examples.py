"""Every example in the catalogue goes through the engine. The page's `bad` and each `[[invalid]]`
must be reported by the entry's rule (on exactly its `lines`, where it gives them); the page's
`good` and each `[[valid]]` must not be. A new example in a TOML file is a new test case here."""
from functools import lru_cache

import pytest

from jaxlint.catalogue.rule_docs import Example, load_catalogue
from jaxlint.engine.checker import check_source, enabled_rules
from jaxlint.model.settings import Settings

DOCS = load_catalogue()


def _cases():
    for code, doc in DOCS.items():
        counts = {True: 0, False: 0}
        for example in doc.examples():
            counts[example.reported] += 1
            number = counts[example.reported]
            if number == 1:  # the page's own pair comes first
                name = "bad" if example.reported else "good"
            else:
                name = f"{'invalid' if example.reported else 'valid'}{number - 1}"
            yield pytest.param(code, example, id=f"{code}-{name}")


@lru_cache(maxsize=None)
def findings(code: str, source: str) -> tuple:
    """Every finding of `source` checked as a file of its own, with `code` selected (a code that is
    off by default is selected by its full code)."""
    settings = Settings(extend_select=(code,))
    return tuple(check_source(source, "example.py", settings, enabled_rules(settings, "example.py")))


@pytest.mark.parametrize("code, example", list(_cases()))
def test_example_is_reported_where_the_entry_says(code: str, example: Example):
    lines = sorted({f.start.line for f in findings(code, example.source) if f.code == code})
    if not example.reported:
        assert lines == [], f"{code} reports lines {lines} of an example it must leave alone"
    elif example.lines is None:
        assert lines, f"{code} reports nothing on an example it must report"
    else:
        assert tuple(lines) == example.lines


@pytest.mark.parametrize("code", sorted(DOCS))
def test_the_pages_use_instead_example_has_no_finding_of_any_rule(code: str):
    """What a rule's page recommends must not be reported by another rule either."""
    good = Example(False, DOCS[code].good)
    assert [f.code for f in findings(code, good.source)] == []
