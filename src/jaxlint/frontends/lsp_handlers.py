"""The language server's handlers (pygls): what `jaxlint server` does with each message once
`server.py` has read it and the protocol's life (`lsp_lifecycle.py`) lets it through.

- Diagnostics when a document opens, is saved, or changes (`debounce`: a change on its own is
  checked after `DEBOUNCE_SECONDS`, a burst of changes once it has been quiet for
  `BURST_DEBOUNCE_SECONDS`; the last version is always checked, and a check of a version that is
  no longer the last is dropped before it starts); severity from the rule's
  catalogue entry, the code linked to the rule's page, the calls that trace a function from
  another module as related locations.
- Code actions: a finding's fix, `# noqa: CODE` on its line, every fix of that code in the file
  (`source.fixAll.jaxlint`: every safe fix, as `jaxlint check --fix`).
- Hover on a finding: the rule's documentation, as `jaxlint rule CODE` prints it.
- Notebook documents (LSP 3.17), their code cells checked together as `jaxlint check` checks a
  notebook, where the client syncs notebooks.

Checks run on one worker thread, one at a time, never on the event loop; the thread never keeps
the process alive (the server exits at once on a signal or when the client goes, a check under
way or not). What the client is shown of the findings is `lsp_findings.py`; positions in the
client's units, `lsp_positions.py`.
"""
from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
from concurrent.futures import Future
from typing import Callable

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from .. import __version__
from ..engine.checker import parse_error
from .editor import BufferLinter
from .lsp_findings import FIX_ALL_KIND, Checked, FindingsView
from .lsp_positions import UTF16

#: how long a document must be left alone after a change before it is checked
DEBOUNCE_SECONDS = 0.05
#: the same within a burst of changes (each less than this after the one before): a check that has
#: started cannot be stopped, and one of a version typed past would delay the check of the last
BURST_DEBOUNCE_SECONDS = 0.3
#: the id the server gives the `initialize` it replays to pygls, its answer already sent
REPLAYED_INITIALIZE = "jaxlint-initialize"
_PYTHON_SUFFIXES = (".py", ".pyi")
#: the files on disk whose changes can change a finding: modules, notebooks, the configuration
WATCHED = ("**/*.py", "**/*.pyi", "**/*.ipynb", "**/pyproject.toml")

logger = logging.getLogger(__name__)


class CheckWorker:
    """One daemon thread that runs what it is given in order, skipping what was cancelled before it
    started (a check of a version already replaced)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._run, name="jaxlint-check", daemon=True).start()

    def submit(self, function: Callable, *args) -> Future:
        future: Future = Future()
        self._jobs.put((future, function, args))
        return future

    def run(self, function: Callable, *args) -> asyncio.Future:
        """`function(*args)` on the worker, awaitable from the event loop (cancelling it drops the
        job if it has not started)."""
        return asyncio.wrap_future(self.submit(function, *args))

    def _run(self) -> None:
        while True:
            future, function, args = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(function(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever awaits it
                future.set_exception(exc)
            del future, function, args  # what the job held is not this thread's to keep


class _Protocol(LanguageServerProtocol):
    """pygls's protocol, but the answer to the replayed `initialize` is kept, not sent: the client
    had its answer before pygls was loaded (`lsp_lifecycle.capabilities_for`)."""

    replayed_answer = None

    def _send_response(self, msg_id, result=None, error=None):
        if msg_id == REPLAYED_INITIALIZE:
            # as it would have been sent
            self.replayed_answer = json.loads(json.dumps(error or result, default=self._serialize_message))
            return
        super()._send_response(msg_id, result, error)


class JaxlintServer(LanguageServer):
    def __init__(self) -> None:
        notebooks = lsp.NotebookDocumentSyncOptions(notebook_selector=[
            lsp.NotebookDocumentFilterWithNotebook(notebook="jupyter-notebook",
                                                   cells=[lsp.NotebookCellLanguage(language="python")])])
        super().__init__("jaxlint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
                         notebook_document_sync=notebooks, protocol_cls=_Protocol)
        self.linter = BufferLinter()
        #: the worker thread every check runs on, one at a time
        self.checker = CheckWorker()
        self.checked: dict[str, Checked] = {}
        self.pending: dict[str, asyncio.Task] = {}
        #: when each document last changed (the event loop's clock)
        self.changed_at: dict[str, float] = {}
        self.resolve_edits = False
        self.watch_files = False
        self.shut_down = False

    # -- the documents ----------------------------------------------------------------------------
    def snapshot(self, target: str) -> Checked | None:
        """The current version of a document or notebook (no findings yet), None once closed."""
        notebook = self.workspace.get_notebook_document(notebook_uri=target)
        if notebook is not None:
            cell_uris, cells, texts = {}, [], {}
            for index, cell in enumerate(notebook.cells):
                if cell.kind != lsp.NotebookCellKind.Code:
                    continue
                document = self.workspace.text_documents.get(cell.document)
                text = document.source if document is not None else ""
                cell_uris[index], texts[cell.document] = cell.document, text
                cells.append((index, text))
            return Checked(notebook.version, _path(target), texts, cell_uris=cell_uris, cells=cells, notebook=True)
        document = self.workspace.text_documents.get(target)
        if document is None:
            return None
        return Checked(document.version, _path(target), {target: document.source})

    def targets(self) -> list[str]:
        open_cells = {cell.document for nb in self.workspace.notebook_documents.values() for cell in nb.cells}
        documents = [uri for uri in self.workspace.text_documents if uri not in open_cells and self.is_python(uri)]
        return [*documents, *self.workspace.notebook_documents]

    def is_python(self, uri: str) -> bool:
        """Whether a text document is Python source to check (a notebook opened as JSON text is not)."""
        document = self.workspace.text_documents.get(uri)
        if uri.endswith(".ipynb") or document is None:
            return False
        return document.language_id == "python" or uri.endswith(_PYTHON_SUFFIXES)

    # -- checking -----------------------------------------------------------------------------------
    def schedule(self, target: str, delay: float) -> None:
        """Check `target` after `delay` seconds, in place of a check still waiting for it."""
        waiting = self.pending.pop(target, None)
        if waiting is not None:
            waiting.cancel()
        self.pending[target] = asyncio.ensure_future(self._check_later(target, delay))

    def debounce(self, target: str) -> float:
        """How long to wait before checking `target`, which has just changed."""
        now = asyncio.get_running_loop().time()
        before = self.changed_at.get(target)
        self.changed_at[target] = now
        in_burst = before is not None and now - before < BURST_DEBOUNCE_SECONDS
        return BURST_DEBOUNCE_SECONDS if in_burst else DEBOUNCE_SECONDS

    async def _check_later(self, target: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        await self.current(target)

    async def current(self, target: str) -> Checked | None:
        """The findings of the current version of `target`, checked now if they are not known."""
        snapshot = self.snapshot(target)
        if snapshot is None:
            return None
        known = self.checked.get(target)
        if known is not None and known.version == snapshot.version and known.texts == snapshot.texts:
            return known
        checked = await self.checker.run(self._check, snapshot)
        latest = self.snapshot(target)
        if latest is None:
            return None
        if latest.version == checked.version and latest.texts == checked.texts:
            self.checked[target] = checked
            self.publish(checked)
            for note in checked.notes:
                self.window_log_message(lsp.LogMessageParams(lsp.MessageType.Warning, f"jaxlint: {note}"))
        return checked

    def _check(self, snapshot: Checked) -> Checked:
        """On the worker thread: the findings of a snapshot; never raises."""
        name = snapshot.path or "untitled.py"
        try:
            if snapshot.notebook:
                found = self.linter.lint_cells(snapshot.path, snapshot.cells)
            else:
                found = self.linter.lint(snapshot.path, next(iter(snapshot.texts.values())))
            snapshot.findings = found.findings
            snapshot.notes = [f"{name}: {note}" for note in found.notes]
        except Exception as exc:  # noqa: BLE001 - a bug in jaxlint must not take the server down
            logger.exception("checking %s failed", name)
            message = f"jaxlint could not check this file: {type(exc).__name__}: {exc} (please report this)"
            snapshot.findings = [parse_error(name, message)]
        return snapshot

    def publish(self, checked: Checked) -> None:
        by_uri: dict[str, list[lsp.Diagnostic]] = {uri: [] for uri in checked.texts}
        view = self.view()
        for finding in checked.findings:
            uri = checked.uri_of(finding)
            if uri is not None:
                by_uri.setdefault(uri, []).append(view.diagnostic(finding, checked.texts.get(uri, "")))
        for uri, diagnostics in by_uri.items():
            version = None if checked.notebook else checked.version
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, diagnostics, version))

    def view(self, target: str = "") -> FindingsView:
        """The protocol's values for the findings of `target`, in the encoding agreed with the client."""
        encoding = str(self.workspace.position_encoding or UTF16)
        return FindingsView(self.linter, encoding, target, self.resolve_edits)

    def forget(self, target: str, uris: list[str]) -> None:
        waiting = self.pending.pop(target, None)
        if waiting is not None:
            waiting.cancel()
        self.checked.pop(target, None)
        self.changed_at.pop(target, None)
        for uri in uris:
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, []))


# -- helpers ----------------------------------------------------------------------------------------
def _path(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    return to_fs_path(uri)


def build_server() -> JaxlintServer:
    server = JaxlintServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: JaxlintServer, params: lsp.InitializeParams) -> None:
        root = params.root_uri or (params.workspace_folders[0].uri if params.workspace_folders else None)
        if root and _path(root):
            ls.linter = BufferLinter(_path(root))
        action = params.capabilities.text_document and params.capabilities.text_document.code_action
        support = action and action.resolve_support
        ls.resolve_edits = bool(support and "edit" in support.properties)
        watched = params.capabilities.workspace and params.capabilities.workspace.did_change_watched_files
        ls.watch_files = bool(watched and watched.dynamic_registration)

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: JaxlintServer, params: lsp.InitializedParams) -> None:
        """Where the client can, it tells of changes on disk (another branch checked out, a module
        added, the configuration edited): what other modules say may have changed."""
        if not ls.watch_files:
            return
        watchers = [lsp.FileSystemWatcher(glob_pattern=pattern) for pattern in WATCHED]
        registration = lsp.Registration(id="jaxlint-watched-files", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                        register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers))
        try:
            await ls.client_register_capability_async(lsp.RegistrationParams([registration]))
        except Exception:  # noqa: BLE001 - without it, saves still refresh the projects
            logger.warning("the client refused to watch files for jaxlint")

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: JaxlintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        if ls.is_python(params.text_document.uri):
            ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: JaxlintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        if ls.is_python(params.text_document.uri):
            ls.schedule(params.text_document.uri, ls.debounce(params.text_document.uri))

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: JaxlintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        disk_changed(ls, params.text_document.uri)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_files(ls: JaxlintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        disk_changed(ls, None)

    def disk_changed(ls: JaxlintServer, saved: str | None) -> None:
        """What other modules tell a file, and the configuration, may have changed: every open
        document is checked again (the saved one first)."""
        ls.checker.submit(ls.linter.forget_disk)  # on the worker: after the check under way, before the next
        ls.checked.clear()
        for target in ls.targets():
            ls.schedule(target, 0 if target == saved else DEBOUNCE_SECONDS)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: JaxlintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri, [params.text_document.uri])

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: JaxlintServer, params: lsp.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: JaxlintServer, params: lsp.DidChangeNotebookDocumentParams) -> None:
        structure = params.change.cells and params.change.cells.structure
        for closed in (structure.did_close or []) if structure else []:
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(closed.uri, []))
        ls.schedule(params.notebook_document.uri, ls.debounce(params.notebook_document.uri))

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: JaxlintServer, params: lsp.DidSaveNotebookDocumentParams) -> None:
        disk_changed(ls, params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: JaxlintServer, params: lsp.DidCloseNotebookDocumentParams) -> None:
        ls.forget(params.notebook_document.uri, [cell.uri for cell in params.cell_text_documents])

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL_KIND],
                                          resolve_provider=True))
    async def code_action(ls: JaxlintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        uri = params.text_document.uri
        checked = await ls.current(target_of_uri(ls, uri))
        if checked is None:
            return None
        only = list(params.context.only) if params.context.only else None
        view = ls.view(target_of_uri(ls, uri))
        return await ls.checker.run(view.code_actions, checked, uri, params.range, only)

    @server.feature(lsp.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: JaxlintServer, action: lsp.CodeAction) -> lsp.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        target = data.get("target")
        checked = await ls.current(target) if isinstance(target, str) else None
        if checked is not None and action.edit is None:
            action.edit = await ls.checker.run(ls.view(target).fix_all_edit, checked, data.get("code"))
        return action

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: JaxlintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        uri = params.text_document.uri
        checked = await ls.current(target_of_uri(ls, uri))
        return ls.view().hover(checked, uri, params.position) if checked is not None else None

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: JaxlintServer, params) -> None:
        ls.shut_down = True
        for task in ls.pending.values():
            task.cancel()

    return server


def target_of_uri(ls: JaxlintServer, uri: str) -> str:
    """The notebook a cell belongs to, or the document itself."""
    notebook = ls.workspace.get_notebook_document(cell_uri=uri)
    return notebook.uri if notebook is not None else uri
