"""The flake8 plugin: the same engine and messages; flake8 itself applies selection and `# noqa`.

Importing this module is cheap (no libcst, no JAX): flake8 loads it for every run, and files that
never mention JAX return before the engine is imported.

flake8 runs no plugin on a file that does not parse: it reports E999 (E902 for a file it cannot
tokenize or read) itself, which `--select JAX` hides, so such a file would pass silently. The
plugin therefore adds JAX000 beside that error, as `jaxlint check` reports it, whenever flake8's
selection would not show the error itself (`_report_unchecked_files`).
"""
from __future__ import annotations

import os
from functools import lru_cache
from typing import Iterator

from .. import __version__
from ..model.settings import may_use_jax


class JaxlintChecker:
    name = "jaxlint"
    version = __version__

    def __init__(self, tree, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def parse_options(cls, options) -> None:
        """Called by flake8 once its options are read, in each process that checks files."""
        _report_unchecked_files()

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines)
        if not may_use_jax(source):
            return
        try:
            from ..api import NotAnalysed, RuleFailure, lint_source

            settings, enabled, config_error = _settings_for(os.path.dirname(os.path.abspath(self.filename)))
            if config_error:
                yield 1, 0, f"JAX000 invalid jaxlint configuration, defaults used: {config_error}", type(self)
            project = _project_for(self.filename, settings)
            try:
                findings = lint_source(source, self.filename, settings, enabled=enabled, apply_noqa=False,
                                       project=project)
            except RuleFailure as failure:
                findings = failure.findings
                yield 1, 0, f"JAX000 jaxlint internal error, some rules skipped: {failure}", type(self)
            except NotAnalysed as partial:
                # valid Python jaxlint cannot analyse (all of it, or with some rules): flake8 has
                # no channel for a note, and a finding here would fail a valid file
                findings = partial.findings
            if project is not None:
                project.save()  # what this file's analysis learnt, for the next file and run
        except Exception as exc:  # a plugin that raises stops flake8's whole run
            yield 1, 0, f"JAX000 jaxlint could not check this file: {type(exc).__name__}: {exc}", type(self)
            return
        from ..syntax.noqa import file_suppressed, suppressed_in_file

        in_file = file_suppressed(self.lines) if findings else frozenset()
        for finding in findings:  # `# noqa` on a line is flake8's own; `# jaxlint: noqa` is ours
            if not suppressed_in_file(finding.code, in_file):
                yield finding.start.line, finding.start.column - 1, f"{finding.code} {finding.message}", type(self)


#: flake8's own codes for a file it could not check: no plugin ran on it
UNCHECKED_CODES = ("E999", "E902")


def _report_unchecked_files() -> None:
    """Make flake8 add JAX000 to the results of a file it could not parse or read. flake8 offers
    no hook for this, so its file checker's `run_checks` is wrapped; with a flake8 whose checker
    differs, nothing is wrapped and such files stay E999 only."""
    try:
        from flake8.checker import FileChecker
        from flake8.style_guide import Decision, DecisionEngine
    except ImportError:
        return
    original = getattr(FileChecker, "run_checks", None)
    if original is None or getattr(original, "adds_jax000", False):
        return

    def run_checks(self):
        outcome = original(self)
        try:
            results = outcome[1]
            failed = [item for item in results if item[0] in UNCHECKED_CODES]
            if failed:
                code, line, column, text = failed[0][:4]
                shown = DecisionEngine(self.options).decision_for(code) is Decision.Selected
                if not shown:
                    self.report("JAX000", line, column, f"the file could not be checked: {text}")
        except Exception:  # noqa: BLE001 - a flake8 whose results look otherwise: leave them alone
            pass
        return outcome

    run_checks.adds_jax000 = True  # type: ignore[attr-defined]
    FileChecker.run_checks = run_checks


@lru_cache(maxsize=64)
def _settings_for(directory: str):
    """Analysis settings from [tool.jaxlint] (selection is flake8's own business here)."""
    from dataclasses import replace

    from ..model.settings import Settings
    from .config import ConfigError, installed_jax_version, load_settings
    from ..api import PARSE_ERROR, all_rules, known_codes

    error = None
    try:
        settings = load_settings(directory, known_codes())
    except ConfigError as exc:
        settings, error = Settings(target_jax_version=installed_jax_version()), str(exc)
    settings = replace(settings, select=("JAX",), ignore=(), extend_select=(), per_file_ignores=())
    return settings, frozenset({PARSE_ERROR, *all_rules()}), error


def _project_for(filename: str, settings):
    """The project the file is a module of (the same as `jaxlint check` finds), settled for it."""
    from .cache import CACHE_DIR_NAME
    from .runner import project_session

    if not os.path.exists(filename):
        return None  # stdin: no file of the project to stand for
    plan = _plan_for(filename, settings)
    if plan is None:
        return None
    # the index is kept where jaxlint already keeps its cache, never started by flake8
    keep = os.path.isdir(os.path.join(settings.root, CACHE_DIR_NAME))
    return project_session(plan, settings, (filename,), keep_index=keep)


def _plan_for(filename: str, settings):
    from .runner import project_plan

    key = (filename, settings.fingerprint())  # settings may hold unhashable runtime examples
    if key not in _PLANS:
        _PLANS[key] = project_plan(settings, [filename], [filename], _modules_under)
    return _PLANS[key]


def _modules_under(roots: tuple[str, ...], settings) -> tuple[str, ...]:
    """The project's modules, walked once per flake8 process and project (not once per file)."""
    from .runner import project_modules

    key = (roots, settings.fingerprint())
    if key not in _MODULES:
        _MODULES[key] = project_modules(roots, settings)
    return _MODULES[key]


_PLANS: dict = {}
_MODULES: dict = {}
