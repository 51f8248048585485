"""`jaxlint server` driven over stdio by an LSP client (tests/lsp_client.py): diagnostics, code
actions (the fix, `# noqa`, every fix of a code), hover, configuration, notebooks, debouncing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxlint.frontends.editor import changed_span
from jaxlint.frontends.lsp_positions import LineIndex
from jaxlint.model.finding import Position
from lsp_client import LspClient, apply_edits

pytest.importorskip("pygls")

BAD = "import jax\nimport jax.numpy as np\n\n\ndef f(t):\n    return jax.tree_map(np.abs, t)\n"
MANY = ("import jax\nimport jax.numpy as np\n\n\ndef f(t):\n    a = jax.tree_map(np.abs, t)\n"
        "    b = jax.tree_map(np.sin, t)\n    return jax.tree_map(np.add, a, b)\n")
HELPER = "def helper(x):\n    if x > 0:\n        return x\n    return -x\n"
CALLER = "import jax\n\nfrom pkg.mod import helper\n\n\n@jax.jit\ndef step(x):\n    return helper(x)\n"
STAR_USER = ("from starpkg import *\n\n\ndef sample(seed):\n    key = jr.key(seed)\n"
             "    return jr.normal(key, (3,)) + jr.normal(key, (3,))\n")
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    (root / "pyproject.toml").write_text('[tool.jaxlint]\nexclude = ["generated/"]\n'
                                         'per-file-ignores = { "legacy_*.py" = ["JAX601"] }\n')
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text(HELPER)
    (root / "app.py").write_text(CALLER)
    (root / "starpkg").mkdir()
    (root / "starpkg" / "__init__.py").write_text("import jax\nimport jax.random as jr\n")
    (root / "broken_config").mkdir()
    (root / "broken_config" / "pyproject.toml").write_text("[tool.jaxlint]\nselekt = ['JAX1']\n")
    return root


@pytest.fixture(scope="module")
def server(workspace):
    client = LspClient(workspace)
    yield client
    assert client.close() == 0


class Document:
    def __init__(self, client: LspClient, path: Path, text: str) -> None:
        self.client, self.uri, self.text, self.version = client, path.as_uri(), text, 1
        client.notify("textDocument/didOpen", {"textDocument": {"uri": self.uri, "languageId": "python",
                                                                "version": 1, "text": text}})

    def change(self, text: str) -> None:
        self.version += 1
        self.text = text
        self.client.notify("textDocument/didChange", {"textDocument": {"uri": self.uri, "version": self.version},
                                                      "contentChanges": [{"text": text}]})

    def actions(self, at: dict, only: list[str] | None = None) -> list[dict]:
        context = {"diagnostics": []} | ({"only": only} if only else {})
        return self.client.request("textDocument/codeAction", {"textDocument": {"uri": self.uri}, "range": at,
                                                               "context": context})

    def apply(self, action: dict) -> str:
        return apply_edits(self.text, action["edit"]["changes"][self.uri])

    def close(self) -> None:
        self.client.notify("textDocument/didClose", {"textDocument": {"uri": self.uri}})


def codes(diagnostics: list[dict]) -> list[tuple[str, int]]:
    return sorted((d["code"], d["range"]["start"]["line"]) for d in diagnostics)


@pytest.mark.system  # the server as a process of its own
def test_open_fix_and_change_clear_the_diagnostic(server, workspace):
    document = Document(server, workspace / "model.py", BAD)
    found = {d["code"]: d for d in server.diagnostics(document.uri)}
    assert sorted(found) == ["JAX601", "JAX602"]
    assert found["JAX601"]["range"] == {"start": {"line": 1, "character": 7}, "end": {"line": 1, "character": 22}}
    assert found["JAX602"]["range"] == {"start": {"line": 5, "character": 11}, "end": {"line": 5, "character": 23}}
    assert found["JAX602"]["severity"] == 2 and found["JAX602"]["source"] == "jaxlint"
    assert found["JAX602"]["codeDescription"]["href"].endswith("JAX602-deprecated-api.md")
    assert "jax.tree.map" in found["JAX602"]["message"]

    actions = document.actions(found["JAX602"]["range"], only=["quickfix"])
    fix = next(a for a in actions if a["title"] == "Use jax.tree.map (JAX602)")
    assert fix["kind"] == "quickfix" and fix["isPreferred"]
    fixed = document.apply(fix)
    assert fixed == BAD.replace("jax.tree_map", "jax.tree.map")
    document.change(fixed)
    assert codes(server.diagnostics(document.uri, lambda d: "JAX602" not in {x["code"] for x in d})) == [("JAX601", 1)]
    document.close()
    assert server.diagnostics(document.uri) == []


@pytest.mark.system  # the server as a process of its own
def test_noqa_action_adds_or_merges_the_comment(server, workspace):
    document = Document(server, workspace / "suppressed.py", BAD.replace("t)\n", "t)  # noqa: E501\n"))
    found = {d["code"]: d for d in server.diagnostics(document.uri)}
    noqa = next(a for a in document.actions(found["JAX602"]["range"]) if a["title"].startswith("Suppress JAX602"))
    suppressed = document.apply(noqa)
    assert suppressed.splitlines()[5] == "    return jax.tree_map(np.abs, t)  # noqa: E501, JAX602"
    document.change(suppressed)
    assert codes(server.diagnostics(document.uri, lambda d: len(d) == 1)) == [("JAX601", 1)]
    document.close()


@pytest.mark.system  # the server as a process of its own
def test_fix_all_of_one_code_leaves_the_other_codes(server, workspace):
    document = Document(server, workspace / "many.py", MANY)
    found = server.diagnostics(document.uri)
    assert codes(found) == [("JAX601", 1), ("JAX602", 5), ("JAX602", 6), ("JAX602", 7)]
    at = next(d for d in found if d["code"] == "JAX602")["range"]
    fix_all = next(a for a in document.actions(at) if a["title"].startswith("Fix all JAX602"))
    fixed = document.apply(fix_all)
    assert fixed == MANY.replace("jax.tree_map", "jax.tree.map")
    every = next(a for a in document.actions(at, only=["source.fixAll"]) if a["kind"] == "source.fixAll.jaxlint")
    assert document.apply(every) == MANY.replace("jax.tree_map", "jax.tree.map").replace("np", "jnp")
    document.close()


@pytest.mark.system  # the server as a process of its own
def test_hover_shows_the_rule_documentation(server, workspace):
    document = Document(server, workspace / "hovered.py", BAD)
    found = {d["code"]: d for d in server.diagnostics(document.uri)}
    hover = server.request("textDocument/hover", {"textDocument": {"uri": document.uri},
                                                  "position": found["JAX601"]["range"]["start"]})
    text = hover["contents"]["value"]
    assert hover["contents"]["kind"] == "markdown"
    assert text.startswith("**JAX601** `jax.numpy` imported as `np`")
    assert "## Why is this bad" in text and "## Example" in text and "## Use instead" in text
    assert server.request("textDocument/hover", {"textDocument": {"uri": document.uri},
                                                 "position": {"line": 0, "character": 0}}) is None
    document.close()


@pytest.mark.system  # the server as a process of its own
def test_a_file_that_does_not_parse_is_jax000_and_the_server_goes_on(server, workspace):
    document = Document(server, workspace / "broken.py", "import jax\ndef f(:\n    pass\n")
    found = server.diagnostics(document.uri)
    assert [(d["code"], d["range"]["start"]["line"], d["severity"]) for d in found] == [("JAX000", 1, 1)]
    document.change(BAD)
    assert codes(server.diagnostics(document.uri, lambda d: d and d[0]["code"] != "JAX000")) == \
        [("JAX601", 1), ("JAX602", 5)]
    document.close()


@pytest.mark.system  # the server as a process of its own
def test_the_workspace_configuration_applies(server, workspace):
    legacy = Document(server, workspace / "legacy_model.py", BAD)
    assert codes(server.diagnostics(legacy.uri)) == [("JAX602", 5)]
    (workspace / "generated").mkdir(exist_ok=True)
    excluded = Document(server, workspace / "generated" / "model.py", BAD)
    assert server.diagnostics(excluded.uri) == []
    broken = Document(server, workspace / "broken_config" / "model.py", BAD)
    found = server.diagnostics(broken.uri)
    assert codes(found) == [("JAX000", 0), ("JAX601", 1), ("JAX602", 5)]
    assert "invalid jaxlint configuration" in found[0]["message"] and "selekt" in found[0]["message"]
    for document in (legacy, excluded, broken):
        document.close()


@pytest.mark.system  # the server as a process of its own
def test_a_function_traced_from_another_module_names_the_caller(server, workspace):
    document = Document(server, workspace / "pkg" / "mod.py", "# unsaved\n" + HELPER)
    (finding,) = server.diagnostics(document.uri)
    assert finding["code"] == "JAX201" and finding["range"]["start"]["line"] == 2
    (related,) = finding["relatedInformation"]
    assert related["location"]["uri"] == (workspace / "app.py").as_uri()
    assert related["location"]["range"]["start"]["line"] == 7
    document.close()


@pytest.mark.system  # the server as a process of its own
def test_names_a_star_import_of_the_workspace_binds_are_known(server, workspace):
    """`from starpkg import *` gives the buffer `jax` and `jr` as it gives the saved file."""
    document = Document(server, workspace / "star_user.py", STAR_USER)
    assert codes(server.diagnostics(document.uri)) == [("JAX101", 5)]
    document.close()


@pytest.mark.system  # the server as a process of its own
def test_changes_are_debounced_and_the_last_version_is_checked(server, workspace):
    document = Document(server, workspace / "typing.py", BAD)
    server.diagnostics(document.uri)
    before = len(server.published(document.uri))
    for count in range(1, 6):  # quicker than the debounce: one check, of the last text
        document.change(BAD.replace("jax.tree_map", "jax.tree.map") + "\n" * count)
    assert codes(server.diagnostics(document.uri, lambda d: len(d) == 1)) == [("JAX601", 1)]
    hover = server.request("textDocument/hover", {"textDocument": {"uri": document.uri},
                                                  "position": {"line": 1, "character": 8}})
    assert hover is not None
    published = [m["params"] for m in server.notifications if m["method"] == "textDocument/publishDiagnostics"
                 and m["params"]["uri"] == document.uri][before:]
    # fewer checks than changes (one, unless the machine stalled past the debounce), the last of the last version
    assert 1 <= len(published) < 5 and published[-1]["version"] == document.version == 6
    document.close()


@pytest.mark.system  # the server as a process of its own
def test_positions_count_utf16_units(server, workspace):
    document = Document(server, workspace / "emoji.py", 's = "\U0001F600"; import jax.numpy as np\n')
    (finding,) = server.diagnostics(document.uri)
    # `jax.numpy as np` spans code points 16 to 31: UTF-16 units 17 to 32 (the emoji takes two)
    assert finding["range"] == {"start": {"line": 0, "character": 17}, "end": {"line": 0, "character": 32}}
    document.close()


NOTEBOOK_CAPABILITIES = {"notebookDocument": {"synchronization": {}},
                         "textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}}}


@pytest.mark.system  # a server process of its own
def test_notebook_cells_and_resolved_fix_all(workspace):
    client = LspClient(workspace, NOTEBOOK_CAPABILITIES)
    try:
        assert client.initialized["capabilities"]["notebookDocumentSync"]
        notebook = (workspace / "explore.ipynb").as_uri()
        cells = {"a": "import jax\nimport jax.numpy as np\n", "b": "# Notes", "c": "%time y = 1\nx = np.ones(3)\n"}
        uris = {name: f"{notebook}#cell-{name}" for name in cells}
        client.notify("notebookDocument/didOpen", {
            "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1, "cells": [
                {"kind": 2, "document": uris["a"]}, {"kind": 1, "document": uris["b"]},
                {"kind": 2, "document": uris["c"]}]},
            "cellTextDocuments": [{"uri": uris[name], "languageId": "markdown" if name == "b" else "python",
                                   "version": 1, "text": text} for name, text in cells.items()]})
        (finding,) = client.diagnostics(uris["a"])
        assert finding["code"] == "JAX601" and finding["range"]["start"] == {"line": 1, "character": 7}
        actions = client.request("textDocument/codeAction", {"textDocument": {"uri": uris["a"]},
                                                             "range": finding["range"], "context": {"diagnostics": []}})
        fix = next(a for a in actions if a["kind"] == "quickfix" and a["title"].endswith("(JAX601)"))
        changes = fix["edit"]["changes"]
        assert apply_edits(cells["a"], changes[uris["a"]]) == "import jax\nimport jax.numpy as jnp\n"
        assert apply_edits(cells["c"], changes[uris["c"]]) == "%time y = 1\nx = jnp.ones(3)\n"
        noqa = next(a for a in actions if a["title"].startswith("Suppress JAX601"))
        assert apply_edits(cells["a"], noqa["edit"]["changes"][uris["a"]]) == \
            "import jax\nimport jax.numpy as np  # noqa: JAX601\n"
        every = next(a for a in actions if a["kind"] == "source.fixAll.jaxlint")
        assert "edit" not in every  # computed when chosen
        resolved = client.request("codeAction/resolve", every)
        assert apply_edits(cells["c"], resolved["edit"]["changes"][uris["c"]]) == "%time y = 1\nx = jnp.ones(3)\n"
        # a cell edited: the notebook is checked again, the finding gone from its cell
        client.notify("notebookDocument/didChange", {
            "notebookDocument": {"uri": notebook, "version": 2},
            "change": {"cells": {"textContent": [{"document": {"uri": uris["a"], "version": 2},
                                                  "changes": [{"text": "import jax\nimport jax.numpy as jnp\n"}]}]}}})
        assert client.diagnostics(uris["a"]) == []
        # a notebook without code cells: nothing to check, and the server goes on
        notes = (workspace / "notes.ipynb").as_uri()
        client.notify("notebookDocument/didOpen", {
            "notebookDocument": {"uri": notes, "notebookType": "jupyter-notebook", "version": 1,
                                 "cells": [{"kind": 1, "document": f"{notes}#cell-x"}]},
            "cellTextDocuments": [{"uri": f"{notes}#cell-x", "languageId": "markdown", "version": 1,
                                   "text": "import jax.numpy as np"}]})
        assert client.request("textDocument/hover", {"textDocument": {"uri": f"{notes}#cell-x"},
                                                     "position": {"line": 0, "character": 8}}) is None
    finally:
        assert client.close() == 0


@pytest.mark.system  # a server process of its own
def test_changes_on_disk_that_the_client_reports_are_taken_in_and_exit_without_shutdown(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxlint]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(HELPER)
    (tmp_path / "app.py").write_text(CALLER)
    client = LspClient(tmp_path, {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}})
    try:
        document = Document(client, tmp_path / "pkg" / "mod.py", HELPER)
        assert codes(client.diagnostics(document.uri)) == [("JAX201", 1)]
        client.request("textDocument/hover", {"textDocument": {"uri": document.uri},
                                              "position": {"line": 0, "character": 0}})
        registrations = [m for m in client.notifications if m["method"] == "client/registerCapability"]
        assert registrations[0]["params"]["registrations"][0]["method"] == "workspace/didChangeWatchedFiles"
        (tmp_path / "app.py").write_text(CALLER.replace("@jax.jit\n", ""))  # nothing traces the helper now
        client.notify("workspace/didChangeWatchedFiles",
                      {"changes": [{"uri": (tmp_path / "app.py").as_uri(), "type": 2}]})
        assert client.diagnostics(document.uri) == []
        # told to exit without a shutdown request: status 1, as the protocol says
        client.notify("exit", None)
        assert client.process.wait(timeout=20) == 1
    finally:
        client.close()


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": SRC})


@pytest.mark.system  # a process of its own each
@pytest.mark.parametrize("missing", ["pygls", "lsprotocol", "pygls.lsp.server"])
def test_without_the_extra_the_server_says_how_to_install_it(missing):
    done = run_python(f"import sys; sys.modules[{missing!r}] = None\n"
                      "from jaxlint.frontends.cli import main; main(['server'])")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    # the extra's own requirements, which the package index has (jaxlint's distribution is not there)
    assert line.startswith("jaxlint: error: `jaxlint server` needs pygls 2 and lsprotocol: pip install ")
    assert "'pygls<3,>=2.0'" in line and "'jax-sharp-bits[server]'" not in line


@pytest.mark.system  # imports seen from a process of its own
def test_check_and_version_do_not_import_the_server(tmp_path):
    (tmp_path / "m.py").write_text(BAD)
    done = run_python("import sys\nfrom click.testing import CliRunner\nfrom jaxlint.frontends.cli import main\n"
                      f"CliRunner().invoke(main, ['--version'])\nCliRunner().invoke(main, ['check', '--no-cache', {str(tmp_path / 'm.py')!r}])\n"
                      "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol'))))"
                      .replace("import sys", "import sys, json"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


@pytest.mark.parametrize("encoding, character", [("utf-16", 5), ("utf-8", 8), ("utf-32", 4)])
def test_columns_in_the_units_the_client_asked_for(encoding, character):
    index = LineIndex("first\x0cline\r\n\u00e9\U0001F600ab = 1\rlast", encoding)
    # a form feed is no line break for Python nor the protocol; CR LF and CR are
    assert index.to_client(Position(2, 5)) == (1, character)
    assert index.to_client(Position(3, 5)) == (2, 4)
    assert index.to_client(Position(9, 1)) == (2, 4)  # past the end: the end


def test_an_edit_replaces_only_what_changed():
    assert changed_span("a = np.x\nb = np.y\n", "a = jnp.x\nb = jnp.y\n") == (4, 13, "jnp.x\nb = j")
    assert changed_span("same", "same") == (4, 4, "")
