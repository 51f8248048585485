"""The rule catalogue: complete, consistent with the code, its docs in sync (its examples are run
by tests/test_catalogue_examples.py)."""
import re

import pytest
from click.testing import CliRunner

from jaxlint.catalogue.rule_docs import (FIELDS, RUNTIME_CHECKS, CatalogueError, RuleDoc, catalogue_codes, load_catalogue,
                                        read_entry, render_pages, render_text, rule_entries, RuleEntries)
from jaxlint.frontends.cli import main
from jaxlint.model.settings import PARSE_ERROR_CODE, UNUSED_NOQA_CODE
from jaxlint.engine.registry import all_rules, known_codes

from conftest import ROOT

DOCS = load_catalogue()


#: the codes the engine reports itself, without a rule class
ENGINE_CODES = {PARSE_ERROR_CODE, UNUSED_NOQA_CODE}


def test_every_rule_has_an_entry_and_every_entry_a_rule_or_the_engine():
    assert set(all_rules()) | ENGINE_CODES == set(DOCS)


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


#: What `scripts/add_rule.py` writes where an entry's text is still to be written.
PLACEHOLDER = "TODO"


def unfinished(doc: RuleDoc) -> list[str]:
    """The fields of an entry that still hold the placeholder of a new rule's skeleton. The loader
    accepts them, so that a rule can be run while it is written; this test does not."""
    texts = {field: getattr(doc, field) for field in ("summary", "why", "bad", "good", "fix")}
    texts["references"] = " ".join(doc.references)
    for kind, examples in (("invalid", doc.invalid), ("valid", doc.valid)):
        for number, example in enumerate(examples, start=1):
            texts[f"{kind} {number}"] = example.code + example.note
    return [field for field, text in texts.items() if PLACEHOLDER in text]


@pytest.mark.parametrize("code", sorted(DOCS))
def test_no_entry_keeps_the_placeholder_text_of_a_new_rule(code):
    assert unfinished(DOCS[code]) == [], f"{code}: fill in what scripts/add_rule.py left as {PLACEHOLDER}"


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
    # the engine's own findings are about the file, not code that could be run
    assert all(DOCS[code].runtime.check == "static" for code in ENGINE_CODES)
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


def test_runtime_docs_explain_every_check_and_behaviour_the_catalogue_uses():
    """docs/runtime.md is written by hand and explains the kinds of check and the behaviours, while
    which rule has which is generated (the rule index): a rule added with a check or a behaviour
    already explained needs no edit there."""
    text = (ROOT / "docs" / "runtime.md").read_text(encoding="utf-8")
    section = text[text.index("## Which findings are run"):text.index("## Verdicts")]
    explained = {name for cell in re.findall(r"^\| ([^|]*) \|", section, re.M)
                 for name in re.findall(r"`([a-z-]+)`", cell)}
    used = {doc.runtime.check for doc in DOCS.values()} | {doc.runtime.behaviour for doc in DOCS.values()
                                                          if doc.runtime.behaviour}
    assert used <= explained, sorted(used - explained)
    assert not re.findall(r"JAX\d{3}", section), "which rule is checked how is the rule index's to say"


# -- the [[invalid]] and [[valid]] examples --------------------------------------------------------
EXAMPLES = '''
[[invalid]]
note = "an assignment"
code = """
import jax
x = 1
"""
lines = [2]

[[valid]]
code = "y = 2\\n"
'''


def test_examples_are_read_in_order_with_their_notes_and_lines(tmp_path):
    path = tmp_path / "JAX999-example.toml"
    path.write_text(ENTRY + '[runtime]\ncheck = "static"\n' + EXAMPLES, encoding="utf-8")
    doc = read_entry(path)
    [invalid], [valid] = doc.invalid, doc.valid
    assert (invalid.reported, invalid.code, invalid.note, invalid.lines) == (True, "import jax\nx = 1", "an assignment", (2,))
    assert (valid.reported, valid.code, valid.note, valid.lines) == (False, "y = 2", "", None)
    assert [e.code for e in doc.examples()] == ["b", "g", "import jax\nx = 1", "y = 2"]
    page = render_text(doc)
    assert "## More examples" in page and "### Reported" in page and "an assignment (line 2)" in page
    assert page.index("## Use instead") < page.index("## More examples") < page.index("## Fix")


def test_an_entry_without_more_examples_has_no_section_for_them():
    assert "## More examples" not in render_text(DOCS["JAX000"])


@pytest.mark.parametrize("tables, message", [
    ('invalid = "x"\n', "must be an array of tables"),
    ('[[invalid]]\nnote = "n"\n', "`code` must be a non-empty string"),
    ('[[valid]]\ncode = "x = 1"\nlines = [1]\n', "unknown fields ['lines']"),
    ('[[invalid]]\ncode = "x = 1"\nwhy = "w"\n', "unknown fields ['why']"),
    ('[[invalid]]\ncode = "x = 1"\nnote = """a\nb"""\n', "`note` must be one line"),
    ('[[invalid]]\ncode = "x = 1"\nlines = [2]\n', "`lines` must be a non-empty list"),
    ('[[invalid]]\ncode = "x = 1"\nlines = []\n', "`lines` must be a non-empty list"),
    ('[[invalid]]\ncode = "x = 1"\nlines = ["1"]\n', "`lines` must be a non-empty list"),
])
def test_a_malformed_example_is_an_error_naming_the_file(tmp_path, tables, message):
    path = tmp_path / "JAX999-example.toml"
    path.write_text(ENTRY + tables + '[runtime]\ncheck = "static"\n', encoding="utf-8")
    with pytest.raises(CatalogueError) as info:
        read_entry(path)
    assert message in str(info.value) and str(path) in str(info.value)
