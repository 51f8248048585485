"""The one entry for front ends: lint a source text or a file with the given settings.

Front ends (the command line, the flake8 plugin, an editor) go through here rather than into the
engine's modules, so that the engine can change shape behind these few names.
"""
from __future__ import annotations

from typing import Callable, Iterable

from .engine.checker import PARSE_ERROR, FileResult, NotAnalysed, RuleFailure, check_source, enabled_rules
from .engine.files import check_file, encode_like, read_bytes
from .engine.registry import all_rules, known_codes
from .model.finding import Finding
from .model.settings import Settings
from .reading import MAX_NOTEBOOK_BYTES, MAX_SOURCE_BYTES, UnreadableFile, read_regular, size_limit, unreadable_reason

__all__ = ["MAX_NOTEBOOK_BYTES", "MAX_SOURCE_BYTES", "PARSE_ERROR", "FileResult", "NotAnalysed", "RuleFailure",
           "UnreadableFile", "all_rules", "encode_like", "known_codes", "lint_file", "lint_source", "read_bytes",
           "read_regular", "size_limit", "unreadable_reason"]


def lint_source(source: str, path: str, settings: Settings, *, enabled: Iterable[str] | None = None,
                apply_noqa: bool = True, line_label: Callable[[int], str] | None = None,
                project=None) -> list[Finding]:
    """Findings for Python source text, positions relative to it. `enabled`: the codes to report
    (default: those `settings` select for `path`); raises `RuleFailure` when a rule breaks, and
    `NotAnalysed` (with the findings of what did run) for valid Python jaxlint cannot analyse."""
    if enabled is None:
        enabled = enabled_rules(settings, path)
    return check_source(source, path, settings, enabled, apply_noqa, line_label, project)


def lint_file(path: str, settings: Settings, fix: bool = False, data: bytes | None = None,
              project=None) -> FileResult:
    """Check a Python file or a notebook (`data`: its bytes, if already read); with `fix`, also
    compute the fixed text and its findings, which the caller decides whether to write. The
    result's `findings` are those of the file as read; `fixed_findings` those of the fixed text."""
    return check_file(path, settings, fix, data, project)
