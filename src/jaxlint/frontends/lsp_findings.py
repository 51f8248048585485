"""What a language client is shown of the findings of a document or notebook: diagnostics, code
actions (a fix, `# noqa`, every fix of a code or of all), hover; no server here (`server.py`)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from lsprotocol import types as lsp
from pygls.uris import from_fs_path

from ..catalogue.rule_docs import load_catalogue, render_text, rule_page_uri
from ..engine import notebook as nb
from ..model.finding import Applicability, Finding, Severity
from .editor import BufferLinter, text_edit
from .lsp_positions import LineIndex

SOURCE = "jaxlint"
FIX_ALL_KIND = "source.fixAll.jaxlint"
_SEVERITY = {Severity.ERROR: lsp.DiagnosticSeverity.Error, Severity.WARNING: lsp.DiagnosticSeverity.Warning,
             Severity.INFO: lsp.DiagnosticSeverity.Information}


@dataclass
class Checked:
    """The findings of one version of a document or a notebook, with the texts they are about."""

    version: object
    path: str | None
    #: uri -> text: the document, or each code cell of a notebook
    texts: dict[str, str]
    findings: list[Finding] = field(default_factory=list)
    #: in a notebook, cell index -> the cell's uri
    cell_uris: dict[int, str] = field(default_factory=dict)
    #: in a notebook, (cell index, text) of each code cell, in order
    cells: list[tuple[int, str]] = field(default_factory=list)
    #: what the check says besides its findings (one line each), for the client's log
    notes: list[str] = field(default_factory=list)
    notebook: bool = False

    def uri_of(self, finding: Finding) -> str | None:
        """The document a finding is shown in: its cell in a notebook (the first cell for a finding
        about the whole notebook), None when there is none (a notebook without code cells)."""
        if finding.cell is not None and finding.cell in self.cell_uris:
            return self.cell_uris[finding.cell]
        return next(iter(self.texts), None)


class FindingsView:
    """The protocol's values for one checked document or notebook (`target`: its uri), with
    positions in the client's `encoding`; `resolve_edits`: the client computes a "fix all" action's
    edit when it is chosen (`codeAction/resolve`), not when it is listed."""

    def __init__(self, linter: BufferLinter, encoding: str, target: str = "", resolve_edits: bool = False) -> None:
        self.linter, self.encoding, self.target, self.resolve_edits = linter, encoding, target, resolve_edits

    def range_of(self, finding: Finding, text: str) -> lsp.Range:
        index = LineIndex(text, self.encoding)
        return lsp.Range(lsp.Position(*index.to_client(finding.start)), lsp.Position(*index.to_client(finding.end)))

    def diagnostic(self, finding: Finding, text: str) -> lsp.Diagnostic:
        doc = load_catalogue().get(finding.code)
        page = rule_page_uri(doc) if doc is not None else None
        related = [lsp.DiagnosticRelatedInformation(
            lsp.Location(from_fs_path(os.path.abspath(step.path)),
                         lsp.Range(lsp.Position(step.line - 1, 0), lsp.Position(step.line - 1, 0))), step.message)
            for step in finding.trace]
        return lsp.Diagnostic(
            range=self.range_of(finding, text), message=finding.message, severity=_SEVERITY[finding.severity],
            code=finding.code, code_description=lsp.CodeDescription(page) if page else None, source=SOURCE,
            related_information=related or None)

    def edit(self, uri: str, old: str, new: str) -> lsp.TextEdit:
        change = text_edit(old, new)
        index = LineIndex(old, self.encoding)
        return lsp.TextEdit(lsp.Range(lsp.Position(*index.to_client(change.start)),
                                      lsp.Position(*index.to_client(change.end))), change.content)

    def workspace_edit(self, checked: Checked, new_texts: dict[str, str]) -> lsp.WorkspaceEdit:
        return lsp.WorkspaceEdit(changes={uri: [self.edit(uri, checked.texts[uri], text)]
                                          for uri, text in new_texts.items() if text != checked.texts[uri]})

    # -- code actions -------------------------------------------------------------------------------
    def code_actions(self, checked: Checked, uri: str, wanted: lsp.Range,
                     only: list[str] | None) -> list[lsp.CodeAction]:
        text = checked.texts.get(uri)
        if text is None:
            return []
        here = [f for f in checked.findings if checked.uri_of(f) == uri and _meets(self.range_of(f, text), wanted)]
        actions: list[lsp.CodeAction] = []
        if _asked(only, lsp.CodeActionKind.QuickFix):
            for finding in here:
                diagnostic = self.diagnostic(finding, text)
                fix = self.fix_action(checked, uri, finding, diagnostic)
                if fix is not None:
                    actions.append(fix)
                noqa = self.noqa_action(checked, uri, finding, diagnostic)
                if noqa is not None:
                    actions.append(noqa)
            offered = set()
            for finding in here:
                fixable = [f for f in checked.findings if f.code == finding.code and _safe(f)]
                if finding.code not in offered and len(fixable) > 1:
                    offered.add(finding.code)
                    actions.append(self.fix_all_action(checked, finding.code, lsp.CodeActionKind.QuickFix,
                                                       f"Fix all {finding.code} ({finding.name}) in this file"))
        if _asked(only, FIX_ALL_KIND) and any(_safe(f) for f in checked.findings):
            actions.append(self.fix_all_action(checked, None, FIX_ALL_KIND, "jaxlint: fix all safely fixable findings"))
        return actions

    def fix_action(self, checked: Checked, uri: str, finding: Finding, diagnostic) -> lsp.CodeAction | None:
        if not _safe(finding):
            return None
        # offered only where the fixed text still parses (and, in a notebook, keeps its IPython lines)
        if checked.notebook:
            fine = self.linter.fixed_cells(checked.path, checked.cells, finding=finding) is not None
        else:
            fine = self.linter.fixed_by_one(checked.texts[uri], finding, checked.path or "untitled.py") is not None
        if not fine:
            return None
        changes: dict[str, list[lsp.TextEdit]] = {}
        for edit in finding.fix.edits:
            where = checked.cell_uris.get(edit.cell, uri) if edit.cell is not None else uri
            index = LineIndex(checked.texts[where], self.encoding)
            changes.setdefault(where, []).append(lsp.TextEdit(
                lsp.Range(lsp.Position(*index.to_client(edit.start)), lsp.Position(*index.to_client(edit.end))),
                edit.content))
        return lsp.CodeAction(f"{finding.fix.title} ({finding.code})", kind=lsp.CodeActionKind.QuickFix,
                              diagnostics=[diagnostic], is_preferred=True, edit=lsp.WorkspaceEdit(changes=changes))

    def noqa_action(self, checked: Checked, uri: str, finding: Finding, diagnostic) -> lsp.CodeAction | None:
        text = checked.texts[uri]
        if checked.notebook:
            # the comment goes on the line as checked (a line magic's line holds its statement
            # there), and the line magics go back as stored
            cell = next(c for c in _cells_of(checked) if checked.cell_uris.get(c.index) == uri)
            annotated = self.linter.with_noqa(cell.source, finding)
            try:
                new = None if annotated is None else nb.unmask(cell, annotated)
            except nb.NotebookError:
                new = None
        else:
            new = self.linter.with_noqa(text, finding)
        if new is None:
            return None
        return lsp.CodeAction(f"Suppress {finding.code} on this line (# noqa: {finding.code})",
                              kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                              edit=self.workspace_edit(checked, {uri: new}))

    def fix_all_action(self, checked: Checked, code: str | None, kind: str, title: str) -> lsp.CodeAction:
        action = lsp.CodeAction(title, kind=kind, data={"target": self.target, "code": code})
        if not self.resolve_edits:
            action.edit = self.fix_all_edit(checked, code)
        return action

    def fix_all_edit(self, checked: Checked, code: str | None) -> lsp.WorkspaceEdit:
        if checked.notebook:
            cells = self.linter.fixed_cells(checked.path, checked.cells, code=code) or {}
            new_texts = {checked.cell_uris[index]: text for index, text in cells.items()}
        else:
            uri, text = next(iter(checked.texts.items()))
            fixed = self.linter.fixed_all(checked.path, text, code)
            new_texts = {uri: fixed} if fixed is not None else {}
        return self.workspace_edit(checked, new_texts)

    # -- hover --------------------------------------------------------------------------------------
    def hover(self, checked: Checked, uri: str, position: lsp.Position) -> lsp.Hover | None:
        text = checked.texts.get(uri)
        if text is None:
            return None
        point = lsp.Range(position, position)
        here = [f for f in checked.findings if checked.uri_of(f) == uri and _meets(self.range_of(f, text), point)]
        docs = load_catalogue()
        parts = [f"**{f.code}** {f.message}\n\n" + (render_text(docs[f.code]) if f.code in docs else "")
                 for f in here]
        if not parts:
            return None
        return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, "\n\n---\n\n".join(parts)))


def _safe(finding: Finding) -> bool:
    return finding.fix is not None and finding.fix.applicability is Applicability.SAFE


def _meets(found: lsp.Range, wanted: lsp.Range) -> bool:
    """Whether two ranges share a position (their ends included: a cursor just after a span is on it)."""
    def key(position: lsp.Position) -> tuple[int, int]:
        return position.line, position.character

    return key(found.start) <= key(wanted.end) and key(wanted.start) <= key(found.end)


def _asked(only: list[str] | None, kind: str) -> bool:
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


def _cells_of(checked: Checked) -> list[nb.Cell]:
    return [nb.Cell(index, nb.mask(text), text) for index, text in checked.cells]
