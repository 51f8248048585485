"""Nothing read from the cache is trusted: an entry of the wrong shape, a truncated one, one that is
not a regular file, a cache directory that is a file or cannot be written: never a crash, never
findings other than the file's own, and a bad entry is a miss that the run overwrites."""
from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from jaxlint.frontends import cache as cache_module
from jaxlint.frontends.cache import CACHE_DIR_NAME
from jaxlint.frontends.cli import main
from jaxlint_process import needs_proc, run

pytestmark = pytest.mark.system

BAD = "import jax.numpy as np\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def check(*args):
    return CliRunner().invoke(main, ["check", "--output-format", "json", *args, "bad.py"])


def codes(result) -> list[tuple[str, str]]:
    return [(d["path"], d["code"]) for d in json.loads(result.stdout)]


def the_entry(project):
    entries = list((project / CACHE_DIR_NAME).rglob("*.json"))
    assert len(entries) == 1
    return entries[0]


def cached_run(project):
    first = check()
    assert first.exit_code == 1 and codes(first) == [("bad.py", "JAX601")]
    return the_entry(project)


def a_finding(**changes) -> dict:
    finding = {"code": "JAX601", "name": "x", "severity": "warning", "message": "forged", "path": "bad.py",
               "line": 1, "column": 1, "end_line": 1, "end_column": 2, "fix": None, "cell": None}
    return {**finding, **changes}


def body(findings, extra=None) -> str:
    return json.dumps({"findings": findings, "extra": extra})


#: Entries of the wrong shape: the first few as a whole, the others sealed as jaxlint seals its
#: entries (the seal is made to match below) but with a body of the wrong shape.
WRONG_SHAPES = {
    "old-format-list": lambda key: [],
    "object-of-nothing": lambda key: {"a": 1},
    "null": lambda key: None,
    "string": lambda key: "findings",
    "another-key": lambda key: {"key": "0" * 64, "seal": "trusted", "body": body([])},
    "old-format-object": lambda key: {"key": key, "findings": []},
    "body-not-text": lambda key: {"key": key, "seal": "trusted", "body": {"findings": []}},
    "body-not-json": lambda key: {"key": key, "seal": "trusted", "body": "{findings"},
    "findings-not-a-list": lambda key: {"key": key, "seal": "trusted", "body": body({"0": a_finding()})},
    "finding-not-an-object": lambda key: {"key": key, "seal": "trusted", "body": body(["JAX601"])},
    "line-a-string": lambda key: {"key": key, "seal": "trusted", "body": body([a_finding(line="1")])},
    "line-a-boolean": lambda key: {"key": key, "seal": "trusted", "body": body([a_finding(line=True)])},
    "line-zero": lambda key: {"key": key, "seal": "trusted", "body": body([a_finding(line=0)])},
    "unknown-severity": lambda key: {"key": key, "seal": "trusted", "body": body([a_finding(severity="fatal")])},
    "code-not-a-code": lambda key: {"key": key, "seal": "trusted", "body": body([a_finding(code="E501")])},
    "missing-message": lambda key: {"key": key, "seal": "trusted",
                                    "body": body([{k: v for k, v in a_finding().items() if k != "message"}])},
    "negative-cell": lambda key: {"key": key, "seal": "trusted", "body": body([a_finding(cell=-1)])},
    "fix-without-edits": lambda key: {"key": key, "seal": "trusted",
                                      "body": body([a_finding(fix={"title": "t", "applicability": "safe"})])},
    "edit-content-not-text": lambda key: {"key": key, "seal": "trusted", "body": body([a_finding(fix={
        "title": "t", "applicability": "safe",
        "edits": [{"line": 1, "column": 1, "end_line": 1, "end_column": 2, "content": 5}]})])},
}


def stored_codes(entry) -> list[str]:
    stored = json.loads(entry.read_text())
    return [f["code"] for f in json.loads(stored["body"])["findings"]]


@pytest.mark.parametrize("shape", sorted(WRONG_SHAPES))
def test_an_entry_of_the_wrong_shape_is_a_miss_and_is_overwritten(project, shape, monkeypatch):
    entry = cached_run(project)
    key = entry.stem
    entry.write_text(json.dumps(WRONG_SHAPES[shape](key)))
    monkeypatch.setattr(cache_module, "seal", lambda *parts: "trusted")  # the body's shape is what is tried
    result = check()
    assert result.exit_code == 1, result.output
    assert codes(result) == [("bad.py", "JAX601")]
    assert "forged" not in result.stdout
    assert json.loads(entry.read_text())["key"] == key and stored_codes(entry) == ["JAX601"]


@pytest.mark.parametrize("change", ["line", "message", "code", "no-findings", "seal"])
def test_an_entry_changed_after_it_was_written_is_a_miss(project, change):
    """An entry that still has the right shape but is not what jaxlint wrote (a flipped bit, a
    hand edit): its seal no longer matches, so the findings are the file's own."""
    entry = cached_run(project)
    stored = json.loads(entry.read_text())
    findings = json.loads(stored["body"])["findings"]
    if change == "seal":
        stored["seal"] = "0" * len(stored["seal"])
    else:
        findings = {"line": [{**findings[0], "line": 2, "end_line": 2}],
                    "message": [{**findings[0], "message": "forged"}],
                    "code": [{**findings[0], "code": "JAX101"}], "no-findings": []}[change]
        stored["body"] = body(findings)
    entry.write_text(json.dumps(stored))
    result = check()
    assert result.exit_code == 1, result.output
    assert [(d["code"], d["line"]) for d in json.loads(result.stdout)] == [("JAX601", 1)]
    assert "forged" not in result.stdout


@pytest.mark.parametrize("damage", ["truncated", "not-json", "not-utf8", "empty", "deeply-nested"])
def test_a_damaged_entry_is_a_miss_and_is_overwritten(project, damage):
    entry = cached_run(project)
    text = entry.read_bytes()
    entry.write_bytes({"truncated": text[: len(text) // 2], "not-json": b"{key: nope", "not-utf8": b"\xff\xfe\x00",
                       "empty": b"", "deeply-nested": b"[" * 100000 + b"]" * 100000}[damage])
    result = check()
    assert result.exit_code == 1 and codes(result) == [("bad.py", "JAX601")]
    assert json.loads(entry.read_text())["key"] == entry.stem


def test_a_cache_directory_that_is_a_file(project):
    (project / CACHE_DIR_NAME).write_text("not a directory\n")
    for _ in range(2):
        result = check()
        assert result.exit_code == 1 and codes(result) == [("bad.py", "JAX601")]
    assert (project / CACHE_DIR_NAME).read_text() == "not a directory\n"


def test_an_entry_that_is_a_directory(project):
    entry = cached_run(project)
    entry.unlink()
    entry.mkdir()
    for _ in range(2):  # neither read nor written, the analysis runs each time
        result = check()
        assert result.exit_code == 1 and codes(result) == [("bad.py", "JAX601")]
    assert entry.is_dir()
    assert not [p for p in entry.parent.iterdir() if p.suffix == ".tmp"]  # no temporary file left behind


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_cache_directory(project):
    (project / CACHE_DIR_NAME).mkdir()
    (project / CACHE_DIR_NAME).chmod(0o500)
    try:
        result = check()
        assert result.exit_code == 1 and codes(result) == [("bad.py", "JAX601")]
        assert list((project / CACHE_DIR_NAME).iterdir()) == []
    finally:
        (project / CACHE_DIR_NAME).chmod(0o700)


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not needs_proc, reason="needs FIFOs and /proc")
def test_an_entry_that_is_a_fifo_or_a_device_does_not_block(project):
    entry = cached_run(project)
    entry.unlink()
    os.mkfifo(entry)
    result = run(["check", "--output-format", "json", "bad.py"], project, timeout=30)
    assert result.returncode == 1 and codes(result) == [("bad.py", "JAX601")]
    entry.unlink()  # the run may have replaced the FIFO with a real entry; make a device link now
    entry.symlink_to("/dev/zero")
    result = run(["check", "--output-format", "json", "bad.py"], project, timeout=30)
    assert result.returncode == 1 and codes(result) == [("bad.py", "JAX601")]
    assert result.left_running == []


def test_an_empty_gitignore_marker_is_repaired(project):
    """A full disk can leave the marker empty: the next run that writes the cache writes it whole,
    so that `git status` does not list the cache; a marker someone wrote, or a link, is left alone."""
    marker = project / CACHE_DIR_NAME / ".gitignore"
    cached_run(project)
    assert marker.read_text() == "# created by jaxlint\n*\n"
    marker.write_text("")
    (project / "other.py").write_text("import jax.numpy as np\nx = 1\n")  # a new result to write
    CliRunner().invoke(main, ["check", "other.py"])
    assert marker.read_text() == "# created by jaxlint\n*\n"
    assert not [p for p in marker.parent.iterdir() if p.suffix == ".tmp"]
    marker.write_text("*\n!keep\n")
    (project / "third.py").write_text("import jax.numpy as np\ny = 2\n")
    CliRunner().invoke(main, ["check", "third.py"])
    assert marker.read_text() == "*\n!keep\n"
