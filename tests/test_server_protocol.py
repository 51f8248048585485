"""`jaxlint server` under a hostile or careless client: malformed frames, absurd lengths, JSON-RPC
errors, messages out of the protocol's order, signals and a client that goes away mid-check.

The time limits here are ceilings for a server that does not answer at all, never margins."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lsp_client import LspClient

pytest.importorskip("pygls")

#: how long an exit may take; the check under way in these tests takes far longer
EXIT_CEILING = 15
SRC = str(Path(__file__).resolve().parents[1] / "src")
BAD = "import jax\nimport jax.numpy as np\n\n\ndef f(t):\n    return jax.tree_map(np.abs, t)\n"


def frame(message: dict, header: bytes = b"Content-Length: %d\r\n\r\n", off_by: int = 0) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return header % (len(body) + off_by) + body


def hover(ident) -> dict:
    return {"id": ident, "method": "textDocument/hover",
            "params": {"textDocument": {"uri": "file:///nowhere.py"}, "position": {"line": 0, "character": 0}}}


def still_answers(client: LspClient, count: int = 20) -> None:
    """The server answers every one of `count` requests sent after whatever went before."""
    first = 1000
    client.send_raw(b"".join(frame(hover(ident)) for ident in range(first, first + count)))
    for ident in range(first, first + count):
        assert "result" in client.response(ident)


def end(client: LspClient) -> int:
    status = client.close()
    assert b"Traceback" not in b"".join(client.stderr)
    return status


@pytest.fixture
def client(tmp_path):
    started = LspClient(tmp_path)
    yield started
    if started.process.poll() is None:
        started.process.kill()
        started.process.wait()


# -- framing ------------------------------------------------------------------------------------------
@pytest.mark.system  # a server process of its own
@pytest.mark.parametrize("malformed", [
    frame(hover(1), b"content-length: %d\r\n\r\n"),
    frame(hover(1), b"Content-Length: %d\n\n"),
    frame(hover(1), b"CONTENT-LENGTH:%d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"),
    frame(hover(1), off_by=3),
    frame(hover(1), off_by=-3),
    b"some noise\r\n" + frame(hover(1)),
], ids=["lowercase", "lf-only", "upper-case-and-type", "length-3-too-long", "length-3-too-short", "noise-first"])
def test_a_malformed_frame_is_read_or_skipped_and_the_server_stays_in_step(client, malformed):
    client.send_raw(malformed)
    first = client.response(1)
    assert "result" in first or first["error"]["code"] == -32700
    still_answers(client)
    assert end(client) == 0


@pytest.mark.system  # a server process of its own
def test_a_length_too_long_alone_is_answered_when_nothing_more_comes(client):
    client.send_raw(frame(hover(1), off_by=5))  # the client then waits for the answer
    assert "result" in client.response(1)
    still_answers(client, 3)
    assert end(client) == 0


@pytest.mark.system  # a server process of its own
def test_an_absurd_length_is_refused_without_reading_it(client):
    client.send_raw(b"Content-Length: 99999999999\r\n\r\n" + json.dumps({"jsonrpc": "2.0"}).encode())
    still_answers(client)
    assert end(client) == 0
    assert b"refused a frame of 99999999999 bytes" in b"".join(client.stderr)


# -- JSON-RPC -----------------------------------------------------------------------------------------
@pytest.mark.system  # a server process of its own
def test_json_rpc_errors_are_the_protocols(tmp_path):
    client = LspClient(tmp_path, initialize=False)
    try:
        client.send_raw(frame(hover(1)))
        assert client.response(1)["error"]["code"] == -32002  # not initialized
        client.initialize()
        client.send_raw(b"Content-Length: 9\r\n\r\n{not json")
        parse_error = client.response(None)
        assert parse_error["error"]["code"] == -32700
        client.send_raw(frame({"id": 2, "method": "textDocument/hover", "params": {"textDocument": 5}}))
        assert client.response(2)["error"]["code"] == -32602  # invalid params
        client.send_raw(frame({"id": 3, "method": "jaxlint/nothing", "params": {}}))
        assert client.response(3)["error"]["code"] == -32601  # no such method
        client.send_raw(frame({"id": 4, "method": 7}))
        assert client.response(4)["error"]["code"] == -32600  # not a request
        client.send_raw(frame({"id": 5, "method": "initialize", "params": {"capabilities": {}}}))
        assert client.response(5)["error"]["code"] == -32600  # initialized already
        assert client.request("shutdown", None) is None
        client.send_raw(frame(hover(6)))
        assert client.response(6)["error"]["code"] == -32600  # shut down
        client.notify("exit", None)
        assert client.process.wait(timeout=EXIT_CEILING) == 0
        assert b"Traceback" not in b"".join(client.stderr)
    finally:
        client.close()


@pytest.mark.system  # a server process of its own
def test_exit_before_initialize_ends_the_server(tmp_path):
    client = LspClient(tmp_path, initialize=False)
    client.notify("exit", None)
    assert client.process.wait(timeout=EXIT_CEILING) == 1


# -- ending -------------------------------------------------------------------------------------------
def slow_buffer(functions: int = 4000) -> str:
    """A buffer whose check takes many seconds: jitted functions, each with findings."""
    one = ("@jax.jit\ndef f{0}(x, key):\n    if x > 0:\n        x = x + 1\n"
           "    a = jax.random.normal(key, ())\n    b = jax.random.normal(key, ())\n    return a + b + x\n\n\n")
    return "import jax\n\n\n" + "".join(one.format(i) for i in range(functions))


def checking(client: LspClient, path) -> None:
    """Opens a slow buffer; returns once the server is checking it (its hover waits on the check)."""
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                            "text": slow_buffer()}})
    client.next_id += 1
    client.send_raw(frame({"id": client.next_id, "method": "textDocument/hover",
                           "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}}))
    time.sleep(0.5)  # not a margin: the check lasts far longer whichever moment the signal comes


@pytest.mark.system  # a server process of its own
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_ends_the_server_at_once_mid_check(client, tmp_path, signum):
    checking(client, tmp_path / "slow.py")
    client.process.send_signal(signum)
    assert client.process.wait(timeout=EXIT_CEILING) == -signum  # stdin still open; 128 + N to a shell


@pytest.mark.system  # a server process of its own
def test_a_stop_signal_ends_an_idle_server_with_stdin_open(client):
    client.process.send_signal(signal.SIGTERM)
    assert client.process.wait(timeout=EXIT_CEILING) == -signal.SIGTERM


@pytest.mark.system  # a server process of its own
def test_the_server_ends_when_the_client_goes_away_mid_check(client, tmp_path):
    checking(client, tmp_path / "slow.py")
    client.process.stdin.close()
    assert client.process.wait(timeout=EXIT_CEILING) == 1


@pytest.mark.system  # a server process of its own
def test_the_server_ends_when_nobody_reads_its_output(tmp_path):
    process = subprocess.Popen([sys.executable, "-m", "jaxlint", "server"], cwd=tmp_path, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": SRC})
    process.stdout.close()  # the client is gone: what the server writes goes nowhere
    try:
        process.stdin.write(frame({"id": 1, "method": "initialize", "params": {"capabilities": {}}}))
        process.stdin.flush()
        assert process.wait(timeout=EXIT_CEILING) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# -- initialize -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("capabilities", [
    {},
    {"general": {"positionEncodings": ["utf-32", "utf-8"]}},
    {"general": {"positionEncodings": ["utf-7"]}, "notebookDocument": {"synchronization": {}}},
    {"textDocument": {"synchronization": {"willSave": True}, "codeAction": {"resolveSupport": {"properties": ["edit"]}}},
     "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}},
])
def test_the_early_answer_to_initialize_is_what_pygls_answers(capabilities, tmp_path):
    from jaxlint.frontends.lsp_framing import FrameWriter
    from jaxlint.frontends.lsp_handlers import REPLAYED_INITIALIZE, build_server
    from jaxlint.frontends.lsp_lifecycle import answerable, capabilities_for
    from jaxlint.frontends.server import _hand_on

    params = {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": capabilities}
    assert answerable(params)
    server = build_server()
    _hand_on(server, {"jsonrpc": "2.0", "id": REPLAYED_INITIALIZE, "method": "initialize", "params": params},
             FrameWriter(None, lambda: None))
    assert server.protocol.replayed_answer == capabilities_for(params)


# -- the reader alone -----------------------------------------------------------------------------------
def read_all(data: bytes, limit: int | None = None) -> list:
    from jaxlint.frontends.lsp_framing import FrameReader

    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as out:
        out.write(data)
    reader = FrameReader(read_end, **({"limit": limit} if limit else {}))
    messages = []
    try:
        while (message := reader.read()) is not None:
            messages.append(message)
    finally:
        os.close(read_end)
    return messages


def test_the_reader_skips_a_refused_body_and_noise_to_the_next_header():
    big = frame({"id": 1, "method": "m", "params": {"text": "x" * 5000}})
    messages = read_all(big + b"garbage without a line break" + frame({"id": 2, "method": "m"}), limit=1000)
    assert messages == [{"jsonrpc": "2.0", "id": 2, "method": "m"}]


def test_the_reader_reports_a_body_that_is_not_json_and_goes_on():
    from jaxlint.frontends.lsp_framing import BadFrame

    messages = read_all(b"Content-Length: 5\r\n\r\n{nope" + frame({"id": 2, "method": "m"}))
    assert isinstance(messages[0], BadFrame) and messages[1] == {"jsonrpc": "2.0", "id": 2, "method": "m"}


def test_a_document_that_mentions_content_length_is_not_a_header():
    text = "Content-Length: 12\r\n\r\n"
    messages = read_all(frame({"id": 1, "method": "m", "params": {"text": text}}) + frame({"id": 2, "method": "m"}))
    assert [m["id"] for m in messages] == [1, 2] and messages[0]["params"]["text"] == text
