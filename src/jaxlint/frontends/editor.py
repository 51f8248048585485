"""What an editor asks of jaxlint about a buffer it holds, saved or not: its findings, the text a
fix or a `# noqa` comment gives, the fixes of one code (or of all) applied to a fixed point.

No editor protocol here (that is `server.py`): positions are the findings' own (lines and
columns from 1, columns in characters). A buffer is checked as `jaxlint check` checks the file
of its name: the configuration found from its directory, `per-file-ignores`, the exclusions (an
excluded file has no findings), and the project it is a module of, whose other modules are read
from disk (`forget_disk` when files on disk change).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from ..api import PARSE_ERROR, NotAnalysed, RuleFailure, lint_source
from ..engine.checker import UNUSED_NOQA, fix_until_stable, has_safe_fix, parse_error, syntax_error
from ..engine import notebook as nb
from ..engine.notebook_check import JoinedCells, findings_with_broken_cells
from ..model.finding import Applicability, Edit, Finding, Position
from ..model.settings import Settings
from ..syntax.fixes import apply_fixes
from ..syntax.noqa import source_lines
from .add_noqa import annotate
from .config import ConfigError, installed_jax_version, load_settings

#: the name a buffer with no file behind it (an untitled one) is checked as
UNTITLED = "untitled.py"


@dataclass
class BufferFindings:
    """The findings of one buffer, and what a front end says about them besides."""

    findings: list[Finding] = field(default_factory=list)
    #: one line: the configuration could not be read (the defaults were used), a part of the
    #: file was not analysed, a rule failed
    notes: list[str] = field(default_factory=list)
    #: the exclusions leave the file out: nothing was checked
    excluded: bool = False


@dataclass
class _Context:
    settings: Settings
    enabled: frozenset[str]
    project: object | None
    config_error: str | None


class BufferLinter:
    """Checks buffers as files of their projects; one per editor session."""

    def __init__(self, fallback_directory: str | None = None) -> None:
        #: where the configuration of a buffer with no file is looked for (the workspace's root)
        self.fallback_directory = fallback_directory or os.getcwd()
        #: (source roots, settings fingerprint) -> the project's modules, walked once until `forget_disk`
        self._modules: dict[tuple, tuple[str, ...]] = {}

    # -- context --------------------------------------------------------------------------------
    def _context(self, path: str | None) -> _Context:
        from ..api import all_rules, known_codes

        start = os.path.dirname(path) if path else self.fallback_directory
        error = None
        try:
            settings = load_settings(start, known_codes())
        except ConfigError as exc:
            settings, error = Settings(target_jax_version=installed_jax_version()), str(exc)
        name = path or UNTITLED
        enabled = settings.enabled_codes([PARSE_ERROR, *all_rules()], name)
        return _Context(settings, enabled, self._project(path, settings), error)

    def _project(self, path: str | None, settings: Settings):
        if path is None:
            return None
        from .runner import project_plan, project_session

        try:
            plan = project_plan(settings, [path], [path], self._modules_under)
            return project_session(plan, settings, (path,))
        except Exception:  # noqa: BLE001 - the file alone is still checked
            return None

    def _modules_under(self, roots: tuple[str, ...], settings: Settings) -> tuple[str, ...]:
        from .runner import project_modules

        key = (roots, settings.fingerprint())
        if key not in self._modules:
            self._modules[key] = project_modules(roots, settings)
        return self._modules[key]

    def excluded(self, path: str | None, settings: Settings) -> bool:
        from .discovery import is_excluded

        return path is not None and is_excluded(path, settings.exclude, settings.root)

    def forget_disk(self) -> None:
        """Files on disk changed (a save, a new module): the projects are read again when next asked."""
        from .runner import forget_project_sessions

        forget_project_sessions()
        self._modules.clear()

    # -- findings -------------------------------------------------------------------------------
    def lint(self, path: str | None, text: str) -> BufferFindings:
        """The findings of `text` as the file `path` (None: an untitled buffer)."""
        context = self._context(path)
        outcome = BufferFindings()
        if context.config_error:
            outcome.notes.append(f"invalid jaxlint configuration, defaults used: {context.config_error}")
            outcome.findings.append(parse_error(path or UNTITLED, "invalid jaxlint configuration, defaults used: "
                                                + context.config_error))
        if self.excluded(path, context.settings):
            outcome.excluded = True
            return outcome
        outcome.findings += self._findings(path or UNTITLED, text, context, context.enabled, outcome.notes)
        return outcome

    def _findings(self, name: str, text: str, context: _Context, enabled: frozenset[str],
                  notes: list[str]) -> list[Finding]:
        try:
            return lint_source(text, name, context.settings, enabled=enabled, project=context.project)
        except RuleFailure as failure:
            notes.append(f"internal error, some rules skipped: {failure}")
            return failure.findings
        except NotAnalysed as partial:
            notes.append(f"not analysed: {partial.reason}")
            return partial.findings

    # -- fixes ----------------------------------------------------------------------------------
    def fixed_by_one(self, text: str, finding: Finding, name: str) -> str | None:
        """The text with this finding's safe fix applied, or None (no safe fix, or one whose
        result would not parse)."""
        if finding.fix is None or finding.fix.applicability is not Applicability.SAFE:
            return None
        fixed, applied = apply_fixes(text, [replace(finding, cell=None)])
        if not applied or fixed == text or syntax_error(fixed, name) is not None:
            return None
        return fixed

    def fixed_all(self, path: str | None, text: str, code: str | None = None) -> str | None:
        """The text with every safe fix applied until none is left (`code`: only that rule's),
        as `jaxlint check --fix` does; None when nothing changes or the result would not parse."""
        context = self._context(path)
        if self.excluded(path, context.settings):
            return None
        enabled = context.enabled if code is None else context.enabled & {code, PARSE_ERROR}
        name = path or UNTITLED
        notes: list[str] = []
        findings = self._findings(name, text, context, enabled, notes)
        if notes or not has_safe_fix(findings):
            return None

        def recheck(source: str) -> list[Finding]:
            return lint_source(source, name, context.settings, enabled=enabled, project=context.project)

        try:
            fixed, _ = fix_until_stable(text, findings, recheck)
        except (NotAnalysed, RuleFailure):
            return None
        if fixed == text or syntax_error(fixed, name) is not None:
            return None
        return fixed

    # -- suppression ----------------------------------------------------------------------------
    @staticmethod
    def with_noqa(text: str, finding: Finding) -> str | None:
        """The text with `# noqa: CODE` on the finding's line (merged into a `# noqa` it has), or
        None where no comment can go without changing the program (`--add-noqa`'s rules)."""
        annotated = annotate(text, [replace(finding, cell=None)])
        if annotated is None or annotated.added == 0:
            return None
        return annotated.text

    # -- notebooks ------------------------------------------------------------------------------
    def lint_cells(self, path: str | None, cells: list[tuple[int, str]]) -> "NotebookFindings":
        """The findings of a notebook's code cells (index in the notebook, text), each finding
        and each fix edit with the index of its cell; cells checked together, as `jaxlint check`
        checks a notebook (cell by cell when one of them does not parse)."""
        name = path or "untitled.ipynb"
        context = self._context(path)
        outcome = NotebookFindings(cells=[nb.Cell(index, nb.mask(text), text) for index, text in cells])
        if context.config_error:
            outcome.notes.append(f"invalid jaxlint configuration, defaults used: {context.config_error}")
        if self.excluded(path, context.settings) or not outcome.cells:
            outcome.excluded = self.excluded(path, context.settings)
            return outcome
        joined = JoinedCells(outcome.cells)
        try:
            found = lint_source(joined.text, name, context.settings, enabled=context.enabled,
                                line_label=joined.line_label, project=context.project)
        except RuleFailure as failure:
            outcome.notes.append(f"internal error, some rules skipped: {failure}")
            found = failure.findings
        except NotAnalysed as partial:
            outcome.notes.append(f"not analysed: {partial.reason}")
            found = partial.findings
        if any(f.code == PARSE_ERROR for f in found):
            # the cells after one that does not parse are checked with what it binds, as `jaxlint check` does
            recovered = findings_with_broken_cells(outcome.cells, name, context.enabled, lambda text, label: lint_source(
                text, name, context.settings, enabled=context.enabled - {UNUSED_NOQA}, line_label=label,
                project=context.project))
            outcome.findings = recovered if recovered is not None else \
                self._cell_by_cell(outcome.cells, name, context, outcome.notes)
        else:
            outcome.findings = [joined.to_cell(f) for f in found]
        return outcome

    def _cell_by_cell(self, cells: list[nb.Cell], name: str, context: _Context, notes: list[str]) -> list[Finding]:
        findings = []
        for cell in cells:
            found = self._findings(name, cell.source, context, context.enabled, notes)
            alone = JoinedCells([cell])  # the same lines, and the columns of its line magics' statements
            findings += [alone.to_cell(f) for f in found]
        return findings

    def fixed_cells(self, path: str | None, cells: list[tuple[int, str]], code: str | None = None,
                    finding: Finding | None = None) -> dict[int, str] | None:
        """The new text of each cell changed by one finding's fix (`finding`), or by every safe
        fix (`code`: only that rule's) applied until none is left; None when nothing changes, or
        a fix would break a cell or lose an IPython line."""
        name = path or "untitled.ipynb"
        context = self._context(path)
        if self.excluded(path, context.settings):
            return None
        code_cells = [nb.Cell(index, nb.mask(text), text) for index, text in cells]
        joined = JoinedCells(code_cells)
        enabled = context.enabled if code is None else context.enabled & {code, PARSE_ERROR}
        if finding is not None:
            enabled = context.enabled & {finding.code, PARSE_ERROR}

        def recheck(source: str) -> list[Finding]:
            return joined.fixable(lint_source(source, name, context.settings, enabled=enabled,
                                              line_label=joined.line_label, project=context.project))

        try:
            found = recheck(joined.text)
            if finding is not None:
                found = [f for f in found if joined.to_cell(f) == finding]
            if not has_safe_fix(found) or any(f.code == PARSE_ERROR for f in found):
                return None
            if finding is not None:
                fixed, _ = apply_fixes(joined.text, found)
            else:
                fixed, _ = fix_until_stable(joined.text, found, recheck)
        except (NotAnalysed, RuleFailure):
            return None
        sources = joined.split(fixed)
        if fixed == joined.text or sources is None or syntax_error(fixed, name) is not None:
            return None
        try:
            return {cell.index: nb.unmask(cell, source)
                    for cell, source in zip(code_cells, sources) if source != cell.source}
        except nb.NotebookError:
            return None


@dataclass
class NotebookFindings(BufferFindings):
    cells: list[nb.Cell] = field(default_factory=list)


def changed_span(old: str, new: str) -> tuple[int, int, str]:
    """The one replacement that turns `old` into `new`: (start, end) offsets in `old` and the
    text that replaces them, the common beginning and end left out (an editor keeps the cursor
    and the marks outside it where they were)."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return start, end_old, new[start:end_new]


def offset_position(text: str, offset: int) -> Position:
    """The position (line and column from 1, in characters) of an offset in `text`."""
    lines = source_lines(text[:offset])
    return Position(len(lines), len(lines[-1]) + 1)


def text_edit(old: str, new: str) -> Edit:
    """`changed_span` as an edit in positions of `old`."""
    start, end, content = changed_span(old, new)
    return Edit(offset_position(old, start), offset_position(old, end), content)
