"""The GitLab Code Quality report: a JSON array of issues, which GitLab shows in merge requests.

Each issue's `fingerprint` identifies it across pipelines, so that GitLab can tell new findings
from old ones: it is made of the path, the code, the message and how many identical findings
come before it in the file, and not of the line, so that a finding keeps its fingerprint when
code above it moves.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Sequence

from ..model.finding import Finding, Severity

_GITLAB_SEVERITY = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def render_gitlab(findings: Sequence[Finding]) -> str:
    seen: Counter = Counter()
    issues = []
    for finding in findings:
        identity = (finding.path, finding.code, finding.message)
        occurrence = seen[identity]
        seen[identity] += 1
        issues.append(_issue(finding, occurrence))
    return json.dumps(issues, indent=2) + "\n"


def _issue(finding: Finding, occurrence: int) -> dict:
    description = finding.message
    line = finding.start.line
    if finding.cell is not None:
        # the file's lines are the notebook's JSON: the issue goes on its first line and says where
        description = f"cell {finding.cell + 1}, line {finding.start.line}: {description}"
        line = 1
    key = "\0".join((finding.path, finding.code, finding.message, str(occurrence)))
    return {
        "description": f"{finding.code} {description}",
        "check_name": finding.code,
        "fingerprint": hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest(),
        "severity": _GITLAB_SEVERITY[finding.severity],
        "location": {"path": finding.path, "lines": {"begin": line}},
    }
