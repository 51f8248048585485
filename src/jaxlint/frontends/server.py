"""`jaxlint server`: a language server over stdio, a thin front end over `editor.py`.

How a session goes:

1. The client's messages are read on a thread of their own (`lsp_framing.FrameReader`), which
   never loses its place on a malformed frame and never reads a body it refused.
2. `initialize` is answered at once, while the protocol library and the analysis are imported on
   another thread: an editor waits for that answer before it shows anything.
3. Then every message goes through `lsp_lifecycle.Lifecycle` (the JSON-RPC errors the protocol
   asks for: not initialized, shut down, invalid request, invalid params, parse error) to the
   handlers (`lsp_handlers.py`) on an event loop in the main thread.

The server ends on `exit` (0 after a shutdown request, else 1, as the protocol says), when the
client closes the stream or can no longer be written to (1), and on SIGINT, SIGTERM or SIGHUP, at
once in every case, a check under way or not. A check may hold the interpreter for a second or
more at a time (libcst's parser of a large buffer), so neither a signal nor the end of the stream
waits for Python code to run: the stop signals keep their default action (the process ends as
the signal ends it: 128 + N to a shell), and the thread that reads the stream ends the process
itself when the event loop has not ended it within `_GRACE_SECONDS`. What the server prints goes
to stderr: stdout carries the protocol alone.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
from importlib.machinery import PathFinder
from importlib.util import find_spec

from .lsp_framing import BadFrame, FrameReader, FrameWriter
from .lsp_lifecycle import (INVALID_PARAMS, PARSE_ERROR, Inbox, Lifecycle, answerable, capabilities_for,
                            error_response)
from .stopping import STOP_SIGNALS

logger = logging.getLogger(__name__)
#: how long the event loop has to end the session after the client's stream ended
_GRACE_SECONDS = 0.5


def _require(name: str) -> None:
    """ImportError naming `name` when the module cannot be imported (without importing it: the
    protocol library loads while `initialize` is answered)."""
    package, _, rest = name.partition(".")
    missing = ImportError(f"No module named {name!r}", name=name)
    if sys.modules.get(name, ...) is None:
        raise missing
    spec = find_spec(package) if sys.modules.get(package, ...) is not None else None
    if spec is None:
        raise ImportError(f"No module named {package!r}", name=package)
    if rest and PathFinder.find_spec(name, [os.path.join(location, *rest.split(".")[:-1])
                                            for location in spec.submodule_search_locations or []]) is None:
        raise missing


for _module in ("pygls", "lsprotocol", "pygls.lsp.server"):
    _require(_module)


def _warm_up() -> None:
    """Imports what the handlers and the first check need, while the main thread answers `initialize`."""
    try:
        from . import lsp_handlers  # noqa: F401
        from .. import api

        api.all_rules()
    except Exception:  # noqa: BLE001 - the main thread imports it again and reports what fails
        pass


class _Ending:
    """How the session ends: the first reason given wins."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.done: asyncio.Future | None = None

    def end(self, status: int) -> None:
        """From any thread."""
        if self.status is None:
            self.status = status
            if self.loop is not None and self.done is not None:
                self.loop.call_soon_threadsafe(lambda: self.done.done() or self.done.set_result(None))


def serve() -> int:
    """Serve on stdin and stdout until the session ends; its exit status."""
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the protocol stream
    ending = _Ending()
    writer = FrameWriter(protocol_out, lost=lambda: ending.end(1))
    lifecycle = Lifecycle()
    _stop_signals_end_the_process()
    inbox = Inbox(FrameReader(sys.stdin.fileno()).read, ended=lambda: _end_process_soon(lifecycle))
    warming = threading.Thread(target=_warm_up, name="jaxlint-warm-up", daemon=True)
    warming.start()
    initialize, answer = _until_initialize(inbox, writer, lifecycle, ending)
    if ending.status is not None:
        return ending.status
    warming.join()  # one thread imports at a time: two importing the same modules can deadlock
    from .lsp_handlers import REPLAYED_INITIALIZE, build_server

    server = build_server()
    server.protocol.set_writer(writer)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    ending.loop, ending.done = loop, loop.create_future()
    if answer is None:
        _hand_on(server, initialize, writer)
    else:  # answered already: pygls is told of it, its answer kept
        _hand_on(server, {**initialize, "id": REPLAYED_INITIALIZE}, writer)
        if server.protocol.replayed_answer != answer:
            logger.warning("jaxlint server: the capabilities announced differ from pygls's: %s",
                           server.protocol.replayed_answer)
    inbox.deliver_to(lambda item: loop.call_soon_threadsafe(_receive, server, lifecycle, writer, ending, item))
    loop.run_until_complete(ending.done)
    return ending.status if ending.status is not None else 1


def _until_initialize(inbox: Inbox, writer: FrameWriter, lifecycle: Lifecycle,
                      ending: _Ending) -> tuple[dict | None, dict | None]:
    """Reads messages until `initialize`, answering what comes before it: the request and the
    answer sent to it (None when its params are for pygls to judge); (None, None) when the session
    ended first."""
    while True:
        item = inbox.take()
        if item is None:
            ending.end(0 if lifecycle.shut_down else 1)
            return None, None
        if isinstance(item, BadFrame):
            writer.send(error_response(None, PARSE_ERROR, item.reason))
            continue
        verdict = lifecycle.admit(item)
        if verdict.exit_status is not None:
            ending.end(verdict.exit_status)
            return None, None
        if verdict.error is not None:
            writer.send(verdict.error)
        if not verdict.handed_on:
            continue
        if not answerable(item.get("params")):
            return item, None
        answer = capabilities_for(item["params"])
        writer.send({"id": item["id"], "result": answer})
        return item, answer


def _stop_signals_end_the_process() -> None:
    """SIGINT, SIGTERM and SIGHUP end the process as their default action does, wherever it is
    (an ignored one, under `nohup`, stays ignored)."""
    for signum in STOP_SIGNALS:
        try:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, signal.SIG_DFL)
        except ValueError:  # not the main thread: the handlers stay as they are
            return


def _end_process_soon(lifecycle: Lifecycle) -> None:
    """On the reading thread, once the client's stream has ended: the event loop ends the session
    (it has been told); if a check holds the interpreter past the grace period, this ends it."""
    time.sleep(_GRACE_SECONDS)
    sys.stderr.flush()
    os._exit(0 if lifecycle.shut_down else 1)


def _receive(server, lifecycle: Lifecycle, writer: FrameWriter, ending: _Ending, item) -> None:
    """On the event loop: one message of the client's."""
    if ending.status is not None:
        return
    if item is None:
        ending.end(0 if lifecycle.shut_down else 1)
        return
    if isinstance(item, BadFrame):
        writer.send(error_response(None, PARSE_ERROR, item.reason))
        return
    verdict = lifecycle.admit(item)
    if verdict.exit_status is not None:
        ending.end(verdict.exit_status)
    elif verdict.error is not None:
        writer.send(verdict.error)
    elif verdict.handed_on:
        _hand_on(server, item, writer)


def _hand_on(server, message: dict, writer: FrameWriter) -> None:
    """Gives a message to pygls; what pygls cannot read as the method's params is -32602."""
    from pygls.exceptions import JsonRpcException

    quiet = logging.getLogger("pygls.protocol.json_rpc")
    quiet.disabled = True  # it logs a traceback for params it cannot read: the client is told instead
    try:
        structured = server.protocol.structure_message(message)
    except JsonRpcException as error:
        cause = error.__cause__ or error
        reason = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
        if "id" in message:
            writer.send(error_response(message["id"], INVALID_PARAMS,
                                       f"{message.get('method')}: invalid params ({reason})"))
        else:
            logger.warning("jaxlint server: %s with invalid params ignored (%s)", message.get("method"), reason)
        return
    finally:
        quiet.disabled = False
    server.protocol.handle_message(structured)
