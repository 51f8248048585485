"""The rule catalogue: complete, consistent with the code, its examples run, its docs in sync."""
import re

import pytest
from click.testing import CliRunner

from jaxlint.catalogue.rule_docs import (FIELDS, RUNTIME_CHECKS, CatalogueError, catalogue_codes, load_catalogue, read_entry,
                                        render_pages, rule_entries, RuleEntries)
from jaxlint.frontends.cli import main
from jaxlint.model.settings import Settings
from jaxlint.engine.checker import check_source, enabled_rules
from jaxlint.engine.registry import all_rules, known_codes

from conftest import ROOT

DOCS = load_catalogue()


def test_every_rule_has_an_entry_and_every_entry_a_rule_or_the_engine():
    assert set(all_rules()) | {"JAX000", "JAX001"} == set(DOCS)


def test_the_catalogue_alone_gives_what_the_registry_gives():
    """The command line reads the codes and the rules' entries from the catalogue, without
    importing the rules (tests/test_startup.py)."""
    assert catalogue_codes() == known_codes()
    assert list(rule_entries().items()) == [(code, cls.doc) for code, cls in all_rules().items()]
    assert dict(RuleEntries()) == load_catalogue()  # what reports describe: JAX000 and JAX001 too


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
    settings = Settings(extend_select=(code,))  # a code off by default is selected by its full code
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


# -- the [runtime] table: what runtime mode does with a rule's findings ---------------------------
def test_every_entry_says_how_runtime_mode_checks_it():
    static = {code for code, doc in DOCS.items() if doc.runtime.check == "static"}
    assert static == {"JAX000", "JAX001", "JAX205", "JAX402", "JAX503", "JAX504", "JAX601", "JAX602"}
    for code, doc in DOCS.items():
        assert doc.runtime.check in RUNTIME_CHECKS, code
        assert bool(doc.runtime.raises) == (doc.runtime.check == "raises"), code
        assert (doc.runtime.behaviour is not None) == (doc.runtime.check in ("behaviour", "key-reuse-checker")), code


ENTRY = """
code = "JAX999"
name = "example"
severity = "error"
summary = "s"
why = "w"
bad = "b"
good = "g"
fix = "f"
references = ["https://example.org"]
"""


@pytest.mark.parametrize("table, message", [
    ("", "missing fields ['runtime']"),
    ('[runtime]\ncheck = "sometimes"\n', "check must be one of"),
    ('[runtime]\ncheck = "raises"\n', "`raises` is required"),
    ('[runtime]\ncheck = "raises"\nraises = []\n', "names no exception"),
    ('[runtime]\ncheck = "static"\nraises = [{ exception = "TypeError" }]\n', "`raises` is required"),
    ('[runtime]\ncheck = "raises"\nraises = [{ exception = "Type Error" }]\n', "each of `raises`"),
    ('[runtime]\ncheck = "raises"\nraises = [{ exception = "TypeError", message = "(" }]\n', "not a regular expression"),
    ('[runtime]\ncheck = "behaviour"\n', "`behaviour` is required"),
    ('[runtime]\ncheck = "static"\nbehaviour = "print"\n', "`behaviour` is required"),
    ('[runtime]\ncheck = "static"\nwhen = "always"\n', "unknown fields ['when']"),
])
def test_a_malformed_runtime_table_is_an_error_naming_the_file(tmp_path, table, message):
    path = tmp_path / "JAX999-example.toml"
    path.write_text(ENTRY + table, encoding="utf-8")
    with pytest.raises(CatalogueError) as info:
        read_entry(path)
    assert message in str(info.value) and str(path) in str(info.value)


def test_runtime_docs_tables_agree_with_the_catalogue():
    """docs/runtime.md is written by hand: its exception table and its list of rules that are not
    run must say what the catalogue says."""
    text = (ROOT / "docs" / "runtime.md").read_text(encoding="utf-8")
    raising = {code: doc.runtime.raises for code, doc in DOCS.items() if doc.runtime.check == "raises"}
    section = text[text.index("### What JAX raises"):text.index("## Verdicts")]
    rows = dict(re.findall(r"^\| (JAX\d{3}) \|(.*)\|$", section, re.M))
    assert set(rows) == set(raising)
    for code, raises in raising.items():
        for exception, _ in raises:
            assert f"`{exception}" in rows[code], (code, exception)
    not_run = re.search(r"The other rules \(([^)]*)\)", text).group(1)
    assert set(re.findall(r"JAX\d{3}", not_run)) == {c for c, d in DOCS.items() if not d.runtime.runs}
