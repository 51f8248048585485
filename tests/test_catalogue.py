"""The rule catalogue: complete, consistent with the code, its examples run, its docs in sync."""
import re

import pytest
from click.testing import CliRunner

from jaxlint.catalogue.rule_docs import FIELDS, load_catalogue, read_entry, render_pages
from jaxlint.frontends.cli import main
from jaxlint.model.settings import Settings
from jaxlint.engine.checker import check_source, enabled_rules
from jaxlint.engine.registry import all_rules

from conftest import ROOT

DOCS = load_catalogue()


def test_every_rule_has_an_entry_and_every_entry_a_rule_or_the_engine():
    assert set(all_rules()) | {"JAX000"} == set(DOCS)


def test_codes_and_names_are_unique_and_well_formed():
    names = [doc.name for doc in DOCS.values()]
    assert len(names) == len(set(names))
    for doc in DOCS.values():
        assert re.fullmatch(r"JAX\d{3}", doc.code)
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", doc.name), doc.name
        assert doc.path.name == f"{doc.code}-{doc.name}.toml"


@pytest.mark.parametrize("code", sorted(DOCS))
def test_entry_has_every_section(code):
    doc = DOCS[code]
    for field in FIELDS:
        assert getattr(doc, field), f"{code}: empty {field}"
    assert doc.references and all(ref.startswith("https://") for ref in doc.references)


@pytest.mark.parametrize("code", sorted(DOCS))
def test_bad_example_yields_the_code_and_good_example_none(code):
    doc = DOCS[code]
    settings = Settings()
    enabled = enabled_rules(settings, "example.py")
    bad = [f.code for f in check_source(doc.bad + "\n", "example.py", settings, enabled)]
    good = [f.code for f in check_source(doc.good + "\n", "example.py", settings, enabled)]
    assert code in bad
    assert good == []


def test_docs_pages_are_generated_from_the_catalogue():
    docs = {}
    for path in sorted((ROOT / "rules").glob("JAX*.toml")):
        doc = read_entry(path)
        docs[doc.code] = doc
    expected = render_pages(docs)
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "rules").glob("*.md")}
    assert on_disk == expected, "docs/rules/ is out of date: run `python scripts/generate_docs.py`"


def run_command(*args):
    """The command line in this process (a real subprocess is tested in test_cli.py)."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_rule_command_prints_the_page():
    result = run_command("rule", "JAX601")
    assert result.exit_code == 0
    assert result.stdout.startswith("# JAX601 jax-numpy-as-np")
    assert "## Use instead" in result.stdout and "import jax.numpy as jnp" in result.stdout


def test_rule_command_unknown_code_exits_2():
    result = run_command("rule", "JAX999")
    assert result.exit_code == 2
    assert "unknown rule" in result.stderr


def test_rules_command_lists_every_rule():
    result = run_command("rules")
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.stdout.splitlines()]
    assert listed == sorted(DOCS)
