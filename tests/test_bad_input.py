"""Bad input: one clear line each, every other file still checked, nothing written."""
import json
import os

import pytest
from click.testing import CliRunner

from jaxlint.frontends.cli import main

BAD = "import jax.numpy as np\n"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.py").write_text(BAD)
    return tmp_path


def check(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json", *args])


def by_path(result):
    data = json.loads(result.stdout)
    return {(d["path"], d["code"]): d for d in data}


def assert_other_file_checked(result):
    assert ("good.py", "JAX601") in by_path(result)


def test_syntax_error_is_jax000_with_position(tree):
    (tree / "broken.py").write_text("import jax\n\ndef f(x:\n    return x\n")
    result = check(".")
    finding = by_path(result)[("broken.py", "JAX000")]
    assert finding["line"] == 3 and finding["column"] == 6
    assert "never closed" in finding["message"]
    assert_other_file_checked(result)


def test_syntax_error_in_a_file_without_jax_is_still_reported(tree):
    (tree / "plain.py").write_text("def f(:\n")
    assert ("plain.py", "JAX000") in by_path(check("."))


def test_not_utf8(tree):
    (tree / "latin.py").write_bytes(b"import jax\nname = '\xe9t\xe9'\n")
    finding = by_path(check("."))[("latin.py", "JAX000")]
    assert "not valid utf-8" in finding["message"] and finding["line"] == 2


def test_declared_encoding_is_honoured(tree):
    (tree / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport jax.numpy as np\nname = '\xe9'\n")
    result = check(".")
    assert ("latin.py", "JAX601") in by_path(result)
    fixed = CliRunner().invoke(main, ["check", "--no-cache", "--fix", "latin.py"])
    assert fixed.exit_code == 0
    assert (tree / "latin.py").read_bytes() == b"# -*- coding: latin-1 -*-\nimport jax.numpy as jnp\nname = '\xe9'\n"


def test_empty_file_has_no_findings(tree):
    (tree / "empty.py").write_text("")
    result = check(".")
    assert not [k for k in by_path(result) if k[0] == "empty.py"]
    assert_other_file_checked(result)


def test_binary_file_named_py(tree):
    (tree / "blob.py").write_bytes(bytes(range(256)) * 4)
    result = check(".")
    assert "binary" in by_path(result)[("blob.py", "JAX000")]["message"]
    assert_other_file_checked(result)


def test_malformed_notebook(tree):
    (tree / "nb.ipynb").write_text('{"cells": [ this is not json')
    result = check(".")
    assert "notebook" in by_path(result)[("nb.ipynb", "JAX000")]["message"]
    assert_other_file_checked(result)


def test_missing_path_exits_2_and_checks_the_rest(tree):
    result = check("does-not-exist.py", "good.py")
    assert result.exit_code == 2
    assert "does-not-exist.py" in result.stderr
    assert_other_file_checked(result)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file(tree):
    secret = tree / "secret.py"
    secret.write_text(BAD)
    secret.chmod(0)
    result = check(".")
    assert "cannot read" in by_path(result)[("secret.py", "JAX000")]["message"]
    assert_other_file_checked(result)


def test_unreadable_file_reported_even_as_root(tree):
    # A dangling symlink cannot be read by anyone.
    (tree / "dangling.py").symlink_to(tree / "nowhere.py")
    result = check(".")
    assert "cannot read" in by_path(result)[("dangling.py", "JAX000")]["message"]
    assert_other_file_checked(result)


def test_symlink_loop_in_tree(tree):
    (tree / "pkg").mkdir()
    (tree / "pkg" / "mod.py").write_text(BAD)
    (tree / "pkg" / "loop").symlink_to(tree / "pkg")
    result = check(".")
    assert "loop" in result.stderr
    found = by_path(result)
    assert ("pkg/mod.py", "JAX601") in found
    assert_other_file_checked(result)


def test_fix_never_writes_a_file_that_does_not_parse(tree, monkeypatch):
    import jaxlint.engine.checker as engine

    original = engine.apply_fixes

    def breaking(text, findings, unsafe=False):
        new, count = original(text, findings, unsafe)
        return new + "\ndef (:\n", count

    monkeypatch.setattr(engine, "apply_fixes", breaking)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--fix", "good.py"])
    assert (tree / "good.py").read_text() == BAD
    assert "would not parse" in result.stderr


def test_a_failing_rule_keeps_the_other_findings(tree, monkeypatch):
    from jaxlint.rules.deprecated_api import DeprecatedApi

    def explode(self, node):
        raise RuntimeError("boom")

    monkeypatch.setattr(DeprecatedApi, "visit_Attribute", explode)
    (tree / "good.py").write_text("import jax\nimport jax.numpy as np\nx = jax.tree_map(abs, [1])\n")
    result = check("good.py")
    assert result.exit_code == 2
    assert "JAX602 failed: RuntimeError: boom" in result.stderr
    assert [d["code"] for d in json.loads(result.stdout)] == ["JAX601"]
