"""Findings that scan: a message's headline, notes and help (model/message.py), and the `full`
frame's context lines and secondary labels."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, checked_with_positions
from jaxlint.frontends.cli import main
from jaxlint.frontends.output import render
from jaxlint.model.message import HEADLINE_LENGTH, message_parts

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CHECKED = sorted(p for p in FIXTURES.glob("*.py") if not p.name.endswith(".fixed.py")) + sorted(EXAMPLES.glob("*.py"))


def test_the_grammar_cuts_at_the_first_colon_and_the_next_semicolon_outside_code_and_brackets():
    parts = message_parts("`d[k]: v` in `f` (a; b: c) is wrong: it bites (here: there); write `g`; or `h`")
    assert parts.what == parts.headline == "`d[k]: v` in `f` (a; b: c) is wrong"
    assert parts.why == "it bites (here: there)"
    assert parts.instead == "write `g`; or `h`"
    assert parts.notes == ("it bites (here: there)",) and parts.help == "write `g`; or `h`"


def test_a_message_without_an_explanation_and_the_traced_suffix():
    parts = message_parts("`x` is deprecated; use `y`; traced because `step` (train.py:6) calls it under `jax.jit`")
    assert (parts.headline, parts.why, parts.help) == ("`x` is deprecated", "", "use `y`")
    assert parts.notes == ("traced because `step` (train.py:6) calls it under `jax.jit`",)
    assert message_parts("nothing to split").notes == ()


def test_a_long_first_part_loses_its_asides_then_its_last_clauses_and_becomes_the_first_note():
    what = ("`print` inside a function traced by `jax.lax.fori_loop` (the body of the loop) runs once, while JAX "
            "traces it, and shows tracers instead of values")
    parts = message_parts(f"{what}; use `jax.debug.print`")
    assert parts.headline == "`print` inside a function traced by `jax.lax.fori_loop` runs once, while JAX traces it"
    assert parts.notes == (what,)


def test_a_declared_headline_keeps_the_whole_first_part_as_a_note():
    parts = message_parts("key `k` consumed at line 3 by `f` → `g` (line 9) is used again here: same numbers; split",
                          "key `k` consumed at line 3 is used again here")
    assert parts.headline == "key `k` consumed at line 3 is used again here"
    assert parts.notes == ("key `k` consumed at line 3 by `f` → `g` (line 9) is used again here", "same numbers")


@pytest.fixture(scope="module")
def every_finding():
    """The findings of every fixture and example: each message shape the rules produce."""
    found = []
    for path in CHECKED:
        result, _ = checked_with_positions(path)
        found += result.findings
    return found


def test_every_rule_message_has_a_short_headline_and_loses_nothing(every_finding):
    assert {f.code for f in every_finding} >= {"JAX101", "JAX103", "JAX302", "JAX304", "JAX504", "JAX602"}
    long = sorted({f"{f.code}: {f.parts.headline}" for f in every_finding if len(f.parts.headline) > HEADLINE_LENGTH})
    assert not long, "\n".join(long)
    for finding in every_finding:
        parts = finding.parts
        assert parts.message == finding.message
        shown = " ".join((parts.headline, *parts.notes, parts.help))
        for piece in (parts.what, parts.why, parts.instead):
            assert piece in shown


def test_the_concise_line_stays_on_one_short_line(every_finding):
    for finding in every_finding:
        line = render([finding], "concise").rstrip("\n")
        assert "\n" not in line
        message = line.split(f": {finding.code} ", 1)[1]
        assert len(message) <= 140, line


KEYS = "import jax\n\n\ndef f(key):\n    a = jax.random.normal(key)\n    b = a * 2\n    c = jax.random.normal(key)\n    return b + c\n"


def test_full_frame_has_context_lines_a_secondary_label_and_help_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keys.py").write_text(KEYS)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "full", "keys.py"],
                                env={"NO_COLOR": "1"})
    assert result.stdout == (
        "keys.py:7:9: JAX101 [error] key `key` consumed at line 5 is used again here\n"
        "  |\n"
        "5 |     a = jax.random.normal(key)\n"
        "  |     -------------------------- `key` is first consumed here\n"
        "6 |     b = a * 2\n"
        "7 |     c = jax.random.normal(key)\n"
        "  |         ^^^^^^^^^^^^^^^^^^^^^^\n"
        "8 |     return b + c\n"
        "  = note: the two draws are identical, as JAX keys are not stateful\n"
        "  = help: split it first: `key, subkey = jax.random.split(key)` and use `subkey`\n"
    )
    concise = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", "keys.py"]).stdout
    assert concise == "keys.py:7:9: JAX101 key `key` consumed at line 5 is used again here\n"


def test_a_far_first_use_is_quoted_after_a_gap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    filler = "".join(f"    x{i} = a * {i}\n" for i in range(6))
    (tmp_path / "keys.py").write_text(KEYS.replace("    b = a * 2\n", filler))
    text = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "full", "keys.py"],
                              env={"NO_COLOR": "1"}).stdout
    lines = text.splitlines()
    label = lines.index("   |     -------------------------- `key` is first consumed here")
    assert lines[label + 1] == "   | ..." and lines[label + 2] == "11 |     x5 = a * 5"


def test_json_keeps_the_whole_message_and_gives_the_headline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keys.py").write_text(KEYS)
    (item,) = json.loads(CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json",
                                                   "keys.py"]).stdout)
    assert item["headline"] == "key `key` consumed at line 5 is used again here"
    assert item["message"].startswith(item["headline"] + ": the two draws are identical")
