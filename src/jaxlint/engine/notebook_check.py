"""Checking and fixing a notebook: its code cells as one module, findings and fixes mapped to cells."""
from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import replace

from . import notebook as nb
from .cell_recovery import parses, recovered
from ..model.settings import Settings
from .checker import (PARSE_ERROR, UNUSED_NOQA, FileResult, NotAnalysed, RuleFailure, check_source, fix_until_stable,
                      has_safe_fix, parse_error)
from ..model.finding import Edit, Finding, Fix, Position
from ..semantic.source_file import CELL_BOUNDARY
from .parsing import python_tree

BOUNDARY = CELL_BOUNDARY
_BOUNDARY_LINE = re.compile(rf"^{re.escape(BOUNDARY)}\n", re.MULTILINE)


class JoinedCells:
    """All code cells as one module, so later cells see the imports and names of earlier ones."""

    def __init__(self, cells: list[nb.Cell]) -> None:
        self.cells = cells
        parts, self.first_lines, line = [], [], 1
        #: line of the joined text -> the line magic's statement on it (`nb.Translation`)
        self.translations: dict[int, nb.Translation] = {}
        for cell in cells:
            source = cell.source if cell.source.endswith("\n") or not cell.source else cell.source + "\n"
            self.first_lines.append(line)
            parts.append(source + BOUNDARY + "\n")
            self.translations.update((line + number, translation) for number, translation in cell.translations.items())
            line += source.count("\n") + 1
        self.text = "".join(parts)
        #: the lines of `translations`, in order
        self._translated_lines = sorted(self.translations)

    def _column(self, position: Position, clamp: int) -> int:
        """The column, in the cell as stored, of a position of the joined text (columns from 1). On a
        line magic's line a column outside its statement is taken to the statement's start
        (`clamp` < 0) or the line's end (`clamp` > 0): the finding then covers the magic."""
        translation = self.translations.get(position.line)
        if translation is None:
            return position.column
        column = translation.original_column(position.column - 1)
        if column is not None:
            return column + 1
        return translation.start + translation.shift + 1 if clamp < 0 else translation.end + translation.shift + 1

    def joined_position(self, cell: int | None, position: Position) -> Position:
        """A position in a cell as stored (cell index from 0) as a position of the joined text."""
        number = next((n for n, c in enumerate(self.cells) if c.index == cell), 0)
        line = position.line + self.first_lines[number] - 1 if self.cells else position.line
        translation = self.translations.get(line)
        if translation is None:
            return Position(line, position.column)
        column = min(max(position.column - 1 - translation.shift, translation.start), translation.end)
        return Position(line, column + 1)

    def fixable(self, findings: list[Finding]) -> list[Finding]:
        """The findings, without the fixes that would change a line magic's line other than inside
        its statement: what such a fix does to the magic cannot be put back into the cell."""
        if not self.translations:
            return findings
        return [f if f.fix is None or all(self._edit_is_safe(e) for e in f.fix.edits) else replace(f, fix=None)
                for f in findings]

    def _edit_is_safe(self, edit: Edit) -> bool:
        lines = self._translated_lines
        touched = lines[bisect.bisect_left(lines, edit.start.line):bisect.bisect_right(lines, edit.end.line)]
        if not touched:
            return True
        translation = self.translations[touched[0]]
        return (len(touched) == 1 and edit.start.line == edit.end.line and "\n" not in edit.content
                and "\r" not in edit.content and translation.original_column(edit.start.column - 1) is not None
                and translation.original_column(edit.end.column - 1) is not None)

    def _position(self, line: int) -> int:
        """The index among the code cells of the cell holding a line of the joined text."""
        return max(bisect.bisect_right(self.first_lines, line) - 1, 0)

    def to_cell(self, finding: Finding) -> Finding:
        position = self._position(finding.start.line)
        if self.translations:
            # columns on a line magic's line are the statement's in the joined text
            finding = self.fixable([finding])[0]
            finding = replace(finding, start=Position(finding.start.line, self._column(finding.start, -1)),
                              end=Position(finding.end.line, self._column(finding.end, 1)))
        moved = shift(finding, self.cells[position].index, self.first_lines[position] - 1)
        if any(step.cell is None and step.path == finding.path for step in finding.trace):
            # the lines of this notebook a finding refers to (a key's first use) are lines of cells too
            moved = replace(moved, trace=tuple(
                replace(step, cell=self.place(step.line)[0], line=self.place(step.line)[1])
                if step.cell is None and step.path == finding.path else step for step in finding.trace))
        if finding.fix is None:
            return moved
        # A fix can change other cells than the finding's (JAX601 renames `np` wherever it is
        # used): each edit goes to the cell it is in.
        edits = tuple(self._edit_to_cell(edit) for edit in finding.fix.edits)
        return replace(moved, fix=replace(finding.fix, edits=edits))

    def _edit_to_cell(self, edit: Edit) -> Edit:
        position = self._position(edit.start.line)
        offset = self.first_lines[position] - 1
        return Edit(Position(edit.start.line - offset, self._column(edit.start, -1)),
                    Position(edit.end.line - offset, self._column(edit.end, 1)), edit.content,
                    self.cells[position].index)

    def place(self, line: int) -> tuple[int, int]:
        """A line of the joined text as (cell index from 0, line in the cell from 1)."""
        position = self._position(line)
        return self.cells[position].index, line - self.first_lines[position] + 1

    def line_label(self, line: int) -> str:
        """A line of the joined text as the user sees it: `cell N (counted from 1), line M`. Messages go
        into JSON too, whose `cell` is the 0-based index: the label says how it counts."""
        position = self._position(line)
        return f"{nb.cell_name(self.cells[position].index)}, line {line - self.first_lines[position] + 1}"

    def split(self, text: str) -> list[str] | None:
        """Cell sources from a (fixed) joined text; None if the boundaries did not survive."""
        pieces = _BOUNDARY_LINE.split(text)
        if len(pieces) != len(self.cells) + 1 or pieces[-1] != "":
            return None
        sources = []
        for cell, piece in zip(self.cells, pieces):
            added_newline = bool(cell.source) and not cell.source.endswith("\n")
            sources.append(piece[:-1] if added_newline and piece.endswith("\n") else piece)
        return sources


def shift(finding: Finding, cell: int, offset: int) -> Finding:
    def moved(p: Position) -> Position:
        return Position(p.line - offset, p.column)

    fix = finding.fix
    if fix is not None:
        fix = Fix(fix.title, tuple(Edit(moved(e.start), moved(e.end), e.content, cell) for e in fix.edits),
                  fix.applicability)
    return replace(finding, start=moved(finding.start), end=moved(finding.end), fix=fix, cell=cell)


def check_notebook_file(text: str, path: str, settings: Settings, enabled: frozenset[str], fix: bool,
                        project=None) -> FileResult:
    try:
        cells = nb.read_notebook(text)
    except nb.NotebookError as exc:
        return FileResult(path, [parse_error(path, f"cannot read notebook: {exc}")] if PARSE_ERROR in enabled else [])
    joined = JoinedCells(cells)
    try:
        findings = check_source(joined.text, path, settings, enabled, line_label=joined.line_label, project=project)
    except RuleFailure as failure:
        return FileResult(path, [joined.to_cell(f) for f in failure.findings], internal_error=str(failure))
    except NotAnalysed as partial:
        return FileResult(path, [joined.to_cell(f) for f in partial.findings], original_text=text,
                          not_analysed=partial.reason)
    if any(f.code == PARSE_ERROR for f in findings):
        return _with_broken_cells(cells, text, path, settings, enabled, project)
    result = FileResult(path, [joined.to_cell(f) for f in findings], original_text=text)
    findings = joined.fixable(findings)
    if not (fix and has_safe_fix(findings, settings.unsafe_fixes)):
        return result
    try:
        fixed, count = fix_until_stable(joined.text, findings, lambda src: joined.fixable(check_source(
            src, path, settings, enabled, line_label=joined.line_label, project=project)), settings.unsafe_fixes)
    except (NotAnalysed, RuleFailure) as exc:
        result.fix_refused = f"fixes not applied: the fixed cells could not be analysed ({exc})"
        return result
    sources = joined.split(fixed)
    if sources is None:
        result.fix_refused = "fixes not applied: the cell boundaries could not be kept"
        return result
    try:
        refixed = check_source(fixed, path, settings, enabled, line_label=joined.line_label, project=project)
    except (NotAnalysed, RuleFailure) as exc:
        result.fix_refused = f"fixes not applied: the fixed cells could not be analysed ({exc})"
        return result
    if any(f.code == PARSE_ERROR for f in refixed):
        result.fix_refused = "fixes not applied: a fixed cell would not parse"
        return result
    try:
        # Unmasking refuses (NotebookError) when a fix lost an IPython line: then nothing is written.
        changed = {cell.index: nb.unmask(cell, source) for cell, source in zip(cells, sources) if source != cell.source}
        if not changed:
            return result
        result.fixed_text = nb.write_notebook(text, changed)
    except nb.NotebookError as exc:
        result.fix_refused = f"fixes not applied: {exc}"
        return result
    result.fixed_count = count
    result.fixed_findings = [joined.to_cell(f) for f in refixed]
    return result


def recovered_cells(cells: list[nb.Cell]) -> tuple[list[nb.Cell], list[tuple[nb.Cell, str, int, int]]]:
    """The cells, each that does not parse replaced by what can be kept of it (`cell_recovery`),
    and for each of those why it does not parse: (cell, message, line, column)."""
    kept, broken = [], []
    for cell in cells:
        if parses(cell.source):
            kept.append(cell)
            continue
        tree = python_tree(cell.source, "<cell>")
        if isinstance(tree, tuple):
            broken.append((cell, *tree))
        kept.append(replace(cell, source=recovered(cell.source)))
    return kept, broken


def notebook_module_text(cells: list[nb.Cell]) -> JoinedCells:
    """The cells joined as the notebook's module in a project: with its broken cells recovered."""
    joined = JoinedCells(cells)
    return joined if parses(joined.text) else JoinedCells(recovered_cells(cells)[0])


def _with_broken_cells(cells: list[nb.Cell], text: str, path: str, settings: Settings, enabled: frozenset[str],
                       project) -> FileResult:
    found = findings_with_broken_cells(cells, path, enabled, lambda source, label: check_source(
        source, path, settings, enabled - {UNUSED_NOQA}, line_label=label, project=project))
    if found is None:
        return _cell_by_cell(cells, text, path, settings, enabled)
    return FileResult(path, found, original_text=text)


def findings_with_broken_cells(cells: list[nb.Cell], path: str, enabled: frozenset[str],
                               check: Callable[[str, Callable[[int], str]], list[Finding]]) -> list[Finding] | None:
    """The findings of a notebook some of whose cells do not parse: a JAX000 for each of those, and
    the findings of every cell checked with what they bind (`cell_recovery`), by `check(joined
    text, line_label)`, which is not asked for JAX001 (with a cell partly unknown, whether a `noqa`
    comment is used cannot be judged). None when the cells do not parse even so, or could not be
    analysed: they are then checked one by one."""
    kept, broken = recovered_cells(cells)
    if not broken:
        return None
    joined = JoinedCells(kept)
    try:
        findings = check(joined.text, joined.line_label)
    except (RuleFailure, NotAnalysed):
        return None
    if any(f.code == PARSE_ERROR for f in findings):
        return None
    errors = [JoinedCells([cell]).to_cell(parse_error(path, f"cannot parse: {message}", line, column))
              for cell, message, line, column in broken] if PARSE_ERROR in enabled else []
    return errors + [joined.to_cell(f) for f in findings]


def _cell_by_cell(cells: list[nb.Cell], text: str, path: str, settings: Settings, enabled: frozenset[str]) -> FileResult:
    """One broken cell must not hide the others: each cell checked on its own. Without the cells
    before it, a cell's findings are not all known: whether its `noqa` comments are used is not
    judged (JAX001)."""
    findings, skipped = [], []
    enabled = enabled - {UNUSED_NOQA}
    for cell in cells:
        try:
            found = check_source(cell.source, path, settings, enabled)
        except NotAnalysed as partial:
            found = partial.findings
            skipped.append(f"{nb.cell_name(cell.index)}: {partial.reason}")
        alone = JoinedCells([cell])  # the same lines, and the columns of its line magics' statements
        findings += [alone.to_cell(f) for f in found]
    return FileResult(path, findings, original_text=text, not_analysed="; ".join(skipped) or None)

