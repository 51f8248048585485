"""The ecosystem check's own logic (scripts/ecosystem.py) on small made-up corpora and ledgers;
the check over the real corpus is tests/test_ecosystem.py."""
from __future__ import annotations

import json

import pytest

from ecosystem_support import ecosystem

Finding = ecosystem.Finding


def finding(line=3, code="JAX101", message="key reused", repo="a+b", path="train.py", cell=None, column=5):
    return Finding(repo, path, cell, line, column, code, message)


def entry(line=3, code="JAX101", verdict="TP", repo="a+b", path="train.py", cell=None, why="reason"):
    return {"repo": repo, "path": path, "cell": cell, "line": line, "code": code, "verdict": verdict, "why": why}


def test_a_behavioural_finding_without_a_verdict_is_unjudged_and_other_codes_need_none():
    found = [finding(3), finding(4, code="JAX602"), finding(5, code="JAX000")]
    check = ecosystem.check_ledger(found, [])
    assert [f.line for f in check.unjudged] == [3]
    assert "1 behavioural findings have no verdict" in check.problems()[0]


def test_findings_of_one_code_on_one_line_share_a_verdict():
    found = [finding(3, column=5), finding(3, column=20, message="other")]
    assert not ecosystem.check_ledger(found, [entry(3)]).problems()
    # ... but not across codes, cells or files
    assert ecosystem.check_ledger([finding(3, code="JAX201")], [entry(3)]).unjudged
    assert ecosystem.check_ledger([finding(3, cell=2)], [entry(3)]).unjudged
    assert ecosystem.check_ledger([finding(3, path="eval.py")], [entry(3)]).unjudged


def test_a_true_finding_no_longer_reported_is_lost():
    check = ecosystem.check_ledger([], [entry(3, verdict="TP")])
    assert check.lost_true_positives == [entry(3, verdict="TP")]
    assert not check.stale


@pytest.mark.parametrize("verdict", ["FP", "debatable"])
def test_a_false_or_debatable_verdict_without_its_finding_is_stale(verdict):
    check = ecosystem.check_ledger([], [entry(3, verdict=verdict)])
    assert check.stale and not check.lost_true_positives


def test_pruning_deletes_only_the_stale_false_alarms():
    ledger = [entry(3, verdict="FP"), entry(4, verdict="debatable"), entry(5, verdict="TP"),
              entry(6, verdict="FN"), entry(7, verdict="FP")]
    check = ecosystem.check_ledger([finding(7)], ledger)
    kept = ecosystem.pruned(ledger, check)
    assert [(e["line"], e["verdict"]) for e in kept] == [(5, "TP"), (6, "FN"), (7, "FP")]
    assert ecosystem.check_ledger([finding(7)], kept).lost_true_positives == [entry(5, verdict="TP")]


def test_a_recorded_miss_that_is_now_reported_must_be_judged_again():
    misses = [entry(7, verdict="FN")]
    assert not ecosystem.check_ledger([], misses).problems()
    check = ecosystem.check_ledger([finding(7)], misses)
    assert check.reported_misses == misses
    assert check.unjudged  # a miss is no verdict on the finding that replaces it


def test_a_run_over_some_repositories_is_checked_against_their_entries_only():
    ledger = [entry(3, repo="a+b"), entry(3, repo="c+d")]
    assert not ecosystem.check_ledger([finding(3, repo="a+b")], ledger, repos=["a+b"]).problems()
    assert ecosystem.check_ledger([finding(3, repo="a+b")], ledger).lost_true_positives


@pytest.mark.parametrize("change, problem", [
    (lambda e: e.update(extra=1), "keys must be exactly"),
    (lambda e: e.pop("why"), "keys must be exactly"),
    (lambda e: e.update(verdict="tp"), "verdict 'tp'"),
    (lambda e: e.update(line=0), "line must be"),
    (lambda e: e.update(cell="3"), "cell must be"),
    (lambda e: e.update(code="JAX602"), "JAX602 is not a behavioural code"),
    (lambda e: e.update(why="two\nlines"), "why must be one non-empty line"),
])
def test_a_malformed_ledger_entry_is_named(tmp_path, change, problem):
    bad = entry()
    change(bad)
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps([entry(1), bad]))
    with pytest.raises(ecosystem.EcosystemError, match=f"entry 1: {problem}"):
        ecosystem.read_ledger(path)


def test_two_verdicts_for_one_place_are_refused_but_a_miss_beside_a_finding_is_not(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps([entry(3), entry(3, verdict="FP")]))
    with pytest.raises(ecosystem.EcosystemError, match="a second verdict"):
        ecosystem.read_ledger(path)
    path.write_text(json.dumps([entry(3), entry(3, verdict="FN")]))
    assert len(ecosystem.read_ledger(path)) == 2


def test_the_ledger_is_well_formed_and_in_its_canonical_layout(tmp_path):
    ledger = ecosystem.read_ledger()
    assert ledger, "the ledger is empty"
    assert {e["verdict"] for e in ledger} <= set(ecosystem.VERDICTS)
    rewritten = tmp_path / "ledger.json"
    ecosystem.write_ledger(ledger, rewritten)
    assert rewritten.read_text(encoding="utf-8") == ecosystem.LEDGER.read_text(encoding="utf-8"), \
        "the ledger is not in canonical order: write it with ecosystem.write_ledger"


def test_the_difference_sorts_findings_into_appeared_disappeared_and_reworded():
    base = [finding(1), finding(2), finding(3, message="old words")]
    head = [finding(2), finding(3, message="new words"), finding(4, code="JAX201")]
    diff = ecosystem.difference(base, head)
    assert [f.line for f in diff.appeared] == [4]
    assert [f.line for f in diff.disappeared] == [1]
    assert [(was.message, now.message) for was, now in diff.reworded] == [("old words", "new words")]
    assert not ecosystem.difference(head, list(reversed(head)))


def test_the_difference_is_printed_per_rule_with_the_source_line(tmp_path):
    (tmp_path / "a+b").mkdir()
    (tmp_path / "a+b" / "train.py").write_text("import jax\nx = 1\nnoise = jax.random.normal(key)\n")
    notebook = {"cells": [{"cell_type": "markdown", "source": ["# title"]},
                          {"cell_type": "code", "source": ["import jax\n", "if x > 0:\n", "    pass"]}]}
    (tmp_path / "a+b" / "demo.ipynb").write_text(json.dumps(notebook))
    diff = ecosystem.difference([finding(1, code="JAX201", path="demo.ipynb", cell=1, message="gone")],
                                [finding(3), finding(2, code="JAX201", path="demo.ipynb", cell=1, message="if")])
    text = ecosystem.render_difference(diff, tmp_path, "main", "head")
    assert text.startswith("main -> head: +2 -1 findings, 0 reworded, in 1 repositories")
    blocks = text.split("\n\n")
    assert blocks[1].splitlines()[0] == "JAX101  +1 -0 ~0"
    assert "+ a+b/train.py:3:5" in blocks[1] and "| noise = jax.random.normal(key)" in blocks[1]
    assert blocks[2].splitlines()[0] == "JAX201  +1 -1 ~0"
    assert "+ a+b/demo.ipynb[cell 1]:2:5" in blocks[2] and "| if x > 0:" in blocks[2]
    assert "- a+b/demo.ipynb[cell 1]:1:5" in blocks[2] and "| import jax" in blocks[2]
    assert ecosystem.render_difference(ecosystem.difference([], []), tmp_path, "main", "head") == \
        "No change in findings between main and head."


def test_a_missing_corpus_is_a_one_line_error(tmp_path):
    with pytest.raises(ecosystem.EcosystemError, match="no corpus at .*MANIFEST.tsv is missing") as raised:
        ecosystem.corpus_repos(tmp_path / "nowhere")
    assert "\n" not in str(raised.value)


def test_a_corpus_missing_a_repository_or_asked_for_an_unknown_one_is_an_error(tmp_path):
    (tmp_path / "MANIFEST.tsv").write_text("repo\tcommit\na/b\t123\nc/d\t456\n")
    (tmp_path / "a+b").mkdir()
    with pytest.raises(ecosystem.EcosystemError, match="lacks 1 of its repositories: c\\+d"):
        ecosystem.corpus_repos(tmp_path)
    (tmp_path / "c+d").mkdir()
    assert ecosystem.corpus_repos(tmp_path) == ["a+b", "c+d"]
    assert ecosystem.corpus_repos(tmp_path, ["c+d"]) == ["c+d"]
    with pytest.raises(ecosystem.EcosystemError, match="not a corpus repository: e\\+f"):
        ecosystem.corpus_repos(tmp_path, ["e+f"])


@pytest.mark.system
def test_a_repository_is_checked_as_a_user_runs_it(tmp_path):
    # Two modules of one project: the finding in the helper exists only because the step in the
    # other module jits it, so a run file by file would miss it.
    repo = tmp_path / "a+b"
    repo.mkdir()
    (repo / "helpers.py").write_text("def relu(x):\n    if x > 0:\n        return x\n    return 0 * x\n")
    (repo / "train.py").write_text("import jax\nfrom helpers import relu\n\nstep = jax.jit(relu)\n")
    found = ecosystem.check_repo(ecosystem.head_command(), tmp_path, "a+b")
    assert [(f.path, f.line, f.code) for f in found] == [("helpers.py", 2, "JAX201")]
    assert "(train.py:4)" in found[0].message or "train.py" in found[0].message
    assert str(tmp_path) not in found[0].message


def test_the_precision_page_counts_verdicts_per_rule():
    ledger = [entry(1, verdict="TP"), entry(2, verdict="FP", why="not a draw"), entry(3, verdict="debatable"),
              entry(4, verdict="FN", why="key in an object"), entry(5, code="JAX201", verdict="TP")]
    manifest = [{"repo": "a/b", "commit": "0123456789abcdef", "framework": "jax", "kind": "scripts",
                 "lines": "1200"}]
    text = ecosystem.render_precision(ledger, manifest, {"JAX101": "prng-key-reuse", "JAX201": "traced-control"})
    assert "| [JAX101](rules/JAX101-prng-key-reuse.md) prng-key-reuse | 3 | 1 | 1 | 1 | 50% | 33% | 1 |" in text
    assert "| **all behavioural rules** | 4 | 2 | 1 | 1 | 67% | 50% | 1 |" in text
    assert "- `a+b/train.py:2`: not a draw" in text and "- `a+b/train.py:4`: key in an object" in text
    assert "| a/b | `0123456789ab` | jax | scripts | 1,200 | 4 |" in text
