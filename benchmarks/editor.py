"""Latency of the editor loop: `jaxlint server` driven over stdio as an editor drives it.

    python benchmarks/editor.py [--repeat N] [--edits N]

Each round starts one server process in a copy of `examples/` (a project of several modules) and
measures, in wall time as the client sees it:

  initialize      from the process's start to the answer to `initialize`;
  open, cold      from `didOpen` of a file of about 700 lines, sent as soon as `initialize` is
                  answered (as an editor does), to its first diagnostics: what the server still
                  had to load after answering is in this figure;
  first diagnostics  from the process's start to those diagnostics;
  edit            from a `didChange` (one line of the function body changed) to the diagnostics of
                  that version, the server's debounce included (`--edits` of them per round);
  open, warm      `didOpen` of a copy of the file under another name, once the server is warm.

The same round times, in this process, the references the ratios are taken against:
`python -c pass` (an interpreter's start, for `initialize`) and `libcst.parse_module` of the file
(for `open` and `edit`). Rounds are interleaved; each figure is reported as its median and as the
ratio of medians. The tree measured is the one Python finds: run it with `PYTHONPATH=src` from a
checkout.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
#: the modules concatenated (and renamed apart) into the file opened, until it has this many lines
LINES = 700
TIMEOUT = 60.0


class Server:
    """A server process and the messages it sent, read on a thread of their own."""

    def __init__(self, cwd: Path) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen([sys.executable, "-m", "jaxlint", "server"], cwd=cwd,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ident = 0

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                if not line.strip():
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            self.messages.put((time.perf_counter(), json.loads(stream.read(length))))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.process.stdin.flush()

    def wait_for(self, accept) -> float:
        """The time the first message `accept` takes came in."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            item = self.messages.get(timeout=max(deadline - time.monotonic(), 0.01))
            if item is None:
                sys.exit("the server closed its output")
            at, message = item
            if "method" in message and "id" in message:  # a request of the server's
                self.send({"id": message["id"], "result": None})
            elif accept(message):
                return at

    def request(self, method: str, params) -> float:
        self.ident += 1
        ident = self.ident
        self.send({"id": ident, "method": method, "params": params})
        return self.wait_for(lambda m: m.get("id") == ident and "method" not in m)

    def diagnostics_of(self, uri: str, version: int) -> float:
        return self.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                             and m["params"]["uri"] == uri and m["params"].get("version") == version)

    def close(self) -> None:
        self.request("shutdown", None)
        self.send({"method": "exit"})
        self.process.wait(timeout=TIMEOUT)


def big_file() -> str:
    """About `LINES` lines of the examples' modules, each copy's names made its own."""
    parts, total, copy = [], 0, 0
    sources = [EXAMPLES / name for name in ("training.py", "tracing.py", "sampler.py", "pipeline.py")]
    while total < LINES:
        text = sources[len(parts) % len(sources)].read_text()
        if copy:
            text = text.replace("def ", f"def v{copy}_").replace("class ", f"class V{copy}")
        parts.append(text)
        total += text.count("\n") + 1
        copy += len(parts) % len(sources) == 0
    return "\n".join(parts)


def one_round(project: Path, text: str, edits: int) -> dict[str, list[float]]:
    path = project / "examples" / "editing.py"
    uri = path.as_uri()
    server = Server(project)
    figures: dict[str, list[float]] = {"initialize": [], "open, cold": [], "first diagnostics": [], "edit": [],
                                       "open, warm": []}
    answered = server.request("initialize", {"processId": os.getpid(), "rootUri": project.as_uri(),
                                             "capabilities": {}})
    figures["initialize"].append(answered - server.started)
    server.send({"method": "initialized", "params": {}})
    sent = time.perf_counter()
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}}})
    shown = server.diagnostics_of(uri, 1)
    figures["open, cold"].append(shown - sent)
    figures["first diagnostics"].append(shown - server.started)
    lines = text.splitlines(keepends=True)
    for version in range(2, edits + 2):
        # a line typed in the middle of the file: a statement of the function body it lands in
        at = len(lines) // 2
        edited = "".join(lines[:at] + [f"    edited_{version} = {version}\n"] + lines[at:])
        sent = time.perf_counter()
        server.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": edited}]}})
        figures["edit"].append(server.diagnostics_of(uri, version) - sent)
    other = (project / "examples" / "editing_copy.py").as_uri()
    sent = time.perf_counter()
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": other, "languageId": "python", "version": 1, "text": text}}})
    figures["open, warm"].append(server.diagnostics_of(other, 1) - sent)
    server.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--edits", type=int, default=5, help="edits per round (default 5)")
    args = parser.parse_args()

    import libcst

    text = big_file()
    times: dict[str, list[float]] = {"python -c pass": [], "libcst parse": []}
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch)
        shutil.copytree(EXAMPLES, project / "examples")
        (project / "examples" / "editing.py").write_text(text)
        one_round(project, text, 1)  # bytecode written
        for _ in range(args.repeat):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            times["python -c pass"].append(time.perf_counter() - start)
            start = time.perf_counter()
            libcst.parse_module(text)
            times["libcst parse"].append(time.perf_counter() - start)
            for name, values in one_round(project, text, args.edits).items():
                times.setdefault(name, []).extend(values)

    median = {name: statistics.median(values) for name, values in times.items()}
    reference = {"initialize": "python -c pass", "first diagnostics": "python -c pass"}
    print(f"Python {sys.version.split()[0]}, {args.repeat} rounds, {args.edits} edits each, "
          f"a file of {text.count(chr(10)) + 1} lines; wall seconds\n")
    print("| measurement | median s | min s | median / reference |")
    print("|---|---:|---:|---|")
    for name, values in times.items():
        against = reference.get(name, "libcst parse" if name not in ("python -c pass", "libcst parse") else None)
        ratio = f"{median[name] / median[against]:.1f} × {against}" if against else ""
        print(f"| {name} | {median[name]:.3f} | {min(values):.3f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
