"""The language server's life as the protocol orders it, ahead of the handlers: what is answered
with an error before a message reaches them, and the answer to `initialize`.

- Before `initialize`, a request is answered -32002 (not initialized) and a notification dropped;
  after `shutdown`, a request is answered -32600 (invalid request) and a notification dropped;
  `exit` ends the server at any time (status 0 after `shutdown`, 1 otherwise).
- What is not a JSON-RPC 2.0 message is answered -32600; a second `initialize` too.
- `initialize` is answered from `capabilities_for` without the protocol library, which takes longer
  to import than an editor should wait; the library is told of it afterwards (`server.py`).

Nothing here imports the protocol library or the analysis: it runs while they are still loading.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Callable

from .. import __version__

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002

FIX_ALL_KIND = "source.fixAll.jaxlint"
_ENCODINGS = ("utf-8", "utf-16", "utf-32")


def error_response(ident, code: int, message: str) -> dict:
    return {"id": ident, "error": {"code": code, "message": message}}


@dataclass
class Verdict:
    """What becomes of one message: handed on (`error` and `exit_status` None), answered with
    `error` (a response to send), dropped (`dropped`), or the end of the server (`exit_status`)."""

    error: dict | None = None
    dropped: bool = False
    exit_status: int | None = None

    @property
    def handed_on(self) -> bool:
        return self.error is None and not self.dropped and self.exit_status is None


class Lifecycle:
    """The protocol's states: new, initialized, shut down."""

    def __init__(self) -> None:
        self.initialized = False
        self.shut_down = False

    def admit(self, message) -> Verdict:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            ident = message.get("id") if isinstance(message, dict) else None
            return Verdict(error_response(_valid_id(ident), INVALID_REQUEST, "not a JSON-RPC 2.0 message"))
        method = message.get("method")
        if method is None:
            if "id" in message and ("result" in message or "error" in message):
                return Verdict()  # the client's answer to a request of the server's
            return Verdict(error_response(_valid_id(message.get("id")), INVALID_REQUEST,
                                          "a message with neither a method nor a result"))
        if not isinstance(method, str) or ("id" in message and _valid_id(message["id"]) is None):
            return Verdict(error_response(_valid_id(message.get("id")), INVALID_REQUEST,
                                          "a message whose method or id is not valid"))
        if method == "exit":
            return Verdict(exit_status=0 if self.shut_down else 1)
        if "id" not in message:
            return Verdict(dropped=not self.initialized or self.shut_down)
        ident = message["id"]
        if self.shut_down:
            return Verdict(error_response(ident, INVALID_REQUEST, f"{method}: the server is shut down; "
                                          "only exit is accepted"))
        if method == "initialize":
            if self.initialized:
                return Verdict(error_response(ident, INVALID_REQUEST, "initialize was already received"))
            self.initialized = True
            return Verdict()
        if not self.initialized:
            return Verdict(error_response(ident, SERVER_NOT_INITIALIZED,
                                          f"{method}: the server is not initialized; initialize comes first"))
        if method == "shutdown":
            self.shut_down = True
        return Verdict()


def _valid_id(ident):
    return ident if isinstance(ident, (int, str)) and not isinstance(ident, bool) else None


# -- initialize -------------------------------------------------------------------------------------
def answerable(params) -> bool:
    """Whether `initialize` params are well-formed enough to be answered before the protocol
    library reads them (the library answers anything else itself, an error included)."""
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return False
    process, root = params.get("processId"), params.get("rootUri")
    folders = params.get("workspaceFolders")
    return (process is None or _is_int(process)) and isinstance(root, (str, type(None))) \
        and isinstance(folders, (list, type(None)))


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def capabilities_for(params: dict) -> dict:
    """The answer to `initialize`: what the server does, given what the client can."""
    client = params["capabilities"]
    general = client.get("general")
    offered = general.get("positionEncodings") if isinstance(general, dict) else None
    encoding = next((e for e in offered if e in _ENCODINGS), "utf-16") if isinstance(offered, list) else "utf-16"
    synchronization = _field(_field(client, "textDocument"), "synchronization")
    sync = {"openClose": True, "change": 1, "save": True}
    for asked in ("willSave", "willSaveWaitUntil"):  # said not to be done, where the client asks
        if _field(synchronization, asked) is not None:
            sync[asked] = False
    capabilities = {
        "positionEncoding": encoding,
        "textDocumentSync": sync,
        "hoverProvider": True,
        "codeActionProvider": {"codeActionKinds": ["quickfix", FIX_ALL_KIND], "resolveProvider": True},
        "executeCommandProvider": {"commands": []},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
    }
    if client.get("notebookDocument") is not None:
        capabilities["notebookDocumentSync"] = {"notebookSelector": [
            {"notebook": "jupyter-notebook", "cells": [{"language": "python"}]}]}
    return {"capabilities": capabilities, "serverInfo": {"name": "jaxlint", "version": __version__}}


def _field(value, name: str):
    return value.get(name) if isinstance(value, dict) else None


# -- the inbox --------------------------------------------------------------------------------------
class Inbox:
    """The client's messages, read on a thread of their own (the server's main thread stays free to
    answer signals): taken one by one with `take` until `deliver_to` hands them, in order, to a
    callback (the event loop's), None last when the stream ends; then `ended` is called, on the
    reading thread."""

    def __init__(self, read: Callable[[], object], ended: Callable[[], None] = lambda: None) -> None:
        self._read = read
        self._ended = ended
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._deliver: Callable[[object], None] | None = None
        threading.Thread(target=self._run, name="jaxlint-reader", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                item = self._read()
            except Exception:  # noqa: BLE001 - an unreadable stream is an ended one
                item = None
            with self._lock:
                if self._deliver is not None:
                    self._deliver(item)
                else:
                    self._queue.put(item)
            if item is None:
                self._ended()
                return

    def take(self):
        """The next message (blocking), before `deliver_to`."""
        return self._queue.get()

    def deliver_to(self, deliver: Callable[[object], None]) -> None:
        with self._lock:
            while not self._queue.empty():
                deliver(self._queue.get_nowait())
            self._deliver = deliver
