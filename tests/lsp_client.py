"""A minimal Language Server Protocol client over a subprocess's stdio, for the tests of `jaxlint
server`: the protocol's framing (`Content-Length` headers and JSON-RPC 2.0 bodies), requests that
wait for their response with a time limit, and the notifications the server sent, kept in order."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

#: the longest a test waits for one answer of the server
TIMEOUT = 30.0


class ServerError(AssertionError):
    pass


class LspClient:
    def __init__(self, cwd: Path, capabilities: dict | None = None, root: Path | None = None,
                 initialize: bool = True) -> None:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        self.process = subprocess.Popen([sys.executable, "-m", "jaxlint", "server"], cwd=cwd, env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: queue.Queue = queue.Queue()
        self.notifications: list[dict] = []
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.stderr: list[bytes] = []
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()
        self.root = root or cwd
        if initialize:
            self.initialize(capabilities)

    def initialize(self, capabilities: dict | None = None) -> None:
        self.initialized = self.request("initialize", {
            "processId": os.getpid(), "rootUri": self.root.as_uri(),
            "capabilities": capabilities if capabilities is not None else {}})
        self.notify("initialized", {})

    # -- framing ----------------------------------------------------------------------------------
    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            self.messages.put(json.loads(stream.read(length)))

    def _send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def send_raw(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def _next(self, deadline: float) -> dict:
        try:
            message = self.messages.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise ServerError(f"no answer from the server in time; stderr: {b''.join(self.stderr)[-2000:]!r}") from None
        if message is None:
            raise ServerError(f"the server closed its output; stderr: {b''.join(self.stderr)[-2000:]!r}")
        if "method" in message and "id" in message:  # a request of the server's: granted, nothing to give
            self._send({"id": message["id"], "result": None})
        if "method" in message:
            self.notifications.append(message)
        return message

    # -- messages ---------------------------------------------------------------------------------
    def notify(self, method: str, params) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params, timeout: float = TIMEOUT):
        self.next_id += 1
        ident = self.next_id
        self._send({"id": ident, "method": method, "params": params})
        message = self.response(ident, timeout)
        if "error" in message:
            raise ServerError(f"{method}: {message['error']}")
        return message.get("result")

    def response(self, ident, timeout: float = TIMEOUT) -> dict:
        """The server's response to the request `ident` (its result or its error), however sent."""
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if message.get("id") == ident and "method" not in message:
                return message

    def diagnostics(self, uri: str, until=lambda diagnostics: True, timeout: float = TIMEOUT) -> list[dict]:
        """The diagnostics the server publishes next for `uri` that satisfy `until`."""
        deadline = time.monotonic() + timeout
        seen = len(self.notifications)
        while True:
            for message in self.notifications[seen:]:
                seen += 1
                if message["method"] == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri \
                        and until(message["params"]["diagnostics"]):
                    return message["params"]["diagnostics"]
            self._next(deadline)

    def published(self, uri: str) -> list[list[dict]]:
        return [m["params"]["diagnostics"] for m in self.notifications
                if m["method"] == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri]

    def close(self) -> int:
        """Shutdown and exit, as a client does; the server's exit status (killed if it hangs)."""
        try:
            if self.process.poll() is None:
                self.request("shutdown", None, timeout=10)
                self.notify("exit", None)
            return self.process.wait(timeout=10)
        except (ServerError, OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(timeout=10)
            raise
        finally:
            for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
                try:
                    stream.close()
                except OSError:
                    pass


def apply_edits(text: str, edits: list[dict]) -> str:
    """`text` with LSP text edits applied (UTF-16 positions, as the client said nothing else)."""
    lines = text.splitlines(keepends=True) or [""]

    def offset(position: dict) -> int:
        before = "".join(lines[: position["line"]])
        line = lines[position["line"]] if position["line"] < len(lines) else ""
        units, column = 0, 0
        for char in line:
            if units >= position["character"]:
                break
            units += 2 if ord(char) > 0xFFFF else 1
            column += 1
        return len(before) + column

    spans = sorted(((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text
