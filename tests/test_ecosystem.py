"""The ecosystem check: jaxlint over the 40 real projects of ../shared/corpus against the ledger of
verdicts (tests/ecosystem/ledger.json). A change that moves findings comes with its triage:
`python scripts/ecosystem.py --base main` shows what moved, and the ledger says what it is worth."""
from __future__ import annotations

import pytest

from ecosystem_support import ecosystem

pytestmark = pytest.mark.ecosystem


@pytest.fixture(scope="module")
def corpus_repos():
    """The corpus's repositories; without the corpus every test here fails, in one line."""
    try:
        return ecosystem.corpus_repos(ecosystem.DEFAULT_CORPUS)
    except ecosystem.EcosystemError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def corpus_findings(corpus_repos):
    return ecosystem.check_corpus(ecosystem.head_command(), ecosystem.DEFAULT_CORPUS, corpus_repos, jobs=2)


@pytest.fixture(scope="module")
def ledger_check(corpus_findings):
    return ecosystem.check_ledger(corpus_findings, ecosystem.read_ledger())


def test_the_corpus_is_checked_whole(corpus_findings):
    # A run that lost repositories or rules would pass the ledger checks below vacuously.
    repos = {finding.repo for finding in corpus_findings}
    assert len(repos) >= 30, f"findings in only {len(repos)} repositories"
    assert sum(finding.behavioural for finding in corpus_findings) >= 100


def test_every_behavioural_finding_has_a_verdict(ledger_check):
    assert not ledger_check.unjudged, "\n".join(ledger_check.problems())


def test_every_true_finding_is_still_reported(ledger_check):
    assert not ledger_check.lost_true_positives, "\n".join(ledger_check.problems())


def test_no_recorded_miss_is_reported(ledger_check):
    assert not ledger_check.reported_misses, "\n".join(ledger_check.problems())


def test_no_verdict_outlives_its_finding(ledger_check):
    assert not ledger_check.stale, "\n".join(ledger_check.problems())


def test_every_ledger_entry_names_a_file_of_the_corpus(corpus_repos):
    ledger = ecosystem.read_ledger()
    repos = set(corpus_repos)
    missing = [ecosystem.describe(entry) for entry in ledger
               if entry["repo"] not in repos or not (ecosystem.DEFAULT_CORPUS / entry["repo"] / entry["path"]).is_file()]
    assert not missing, missing


def test_precision_page_is_generated_from_the_ledger(corpus_repos):
    expected = ecosystem.render_precision(ecosystem.read_ledger(), ecosystem.manifest_rows(ecosystem.DEFAULT_CORPUS),
                                          ecosystem.rule_names())
    assert ecosystem.PRECISION_DOC.read_text(encoding="utf-8") == expected, \
        "docs/precision.md is out of date: run `python scripts/generate_docs.py`"
