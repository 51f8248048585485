"""`jaxlint check --stdin-filename PATH -`: the buffer on stdin checked as the file PATH, with
PATH's configuration, exclusions, per-file ignores and project; nothing written to disk."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from jaxlint.frontends.cli import main

BAD = "import jax\nimport jax.numpy as np\n\n\ndef f(t):\n    return jax.tree_map(np.abs, t)\n"
FIXED = "import jax\nimport jax.numpy as jnp\n\n\ndef f(t):\n    return jax.tree.map(jnp.abs, t)\n"
HELPER = "def helper(x):\n    if x > 0:\n        return x\n    return -x\n"
CALLER = "import jax\n\nfrom pkg.mod import helper\n\n\n@jax.jit\ndef step(x):\n    return helper(x)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.jaxlint]\nexclude = ["generated/"]\nper-file-ignores = { "legacy_*.py" = ["JAX601"] }\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(HELPER)
    (tmp_path / "app.py").write_text(CALLER)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check_stdin(text: str | bytes, *args: str):
    data = text.encode() if isinstance(text, str) else text
    return CliRunner().invoke(main, ["check", "--output-format", "json", *args], input=data,
                              catch_exceptions=False)


def findings(result) -> list[tuple[str, str, int]]:
    return [(f["path"], f["code"], f["line"]) for f in json.loads(result.stdout)]


def test_findings_are_named_after_the_given_path_and_nothing_is_written(project):
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    result = check_stdin(BAD, "--stdin-filename", "pkg/new.py", "-")
    assert result.exit_code == 1
    assert findings(result) == [("pkg/new.py", "JAX601", 2), ("pkg/new.py", "JAX602", 6)]
    assert not (project / "pkg" / "new.py").exists()
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file() and ".jaxlint" not in p.parts} == before


def test_the_dash_is_optional_and_a_clean_buffer_exits_0(project):
    assert findings(check_stdin(BAD, "--stdin-filename", "x.py")) == [("x.py", "JAX601", 2), ("x.py", "JAX602", 6)]
    clean = check_stdin(FIXED, "--stdin-filename", "x.py")
    assert clean.exit_code == 0 and json.loads(clean.stdout) == []


def test_per_file_ignores_follow_the_given_name(project):
    result = check_stdin(BAD, "--stdin-filename", "legacy_model.py", "-")
    assert findings(result) == [("legacy_model.py", "JAX602", 6)]


def test_an_excluded_name_is_not_checked(project):
    result = check_stdin(BAD, "--stdin-filename", "generated/model.py", "-", "--force-exclude")
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_fix_prints_the_fixed_buffer_and_the_findings_left_on_stderr(project):
    source = BAD + "\n\n@jax.jit\ndef g(x):\n    if x > 0:\n        return x\n    return -x\n"
    result = CliRunner().invoke(main, ["check", "--fix", "--output-format", "concise", "--stdin-filename",
                                       "pkg/new.py", "-"], input=source.encode(), catch_exceptions=False)
    assert result.stdout == FIXED + "\n\n@jax.jit\ndef g(x):\n    if x > 0:\n        return x\n    return -x\n"
    assert "pkg/new.py:11:8: JAX201" in result.stderr
    assert result.exit_code == 1
    assert not (project / "pkg" / "new.py").exists()


def test_fix_of_an_excluded_name_prints_the_buffer_unchanged(project):
    result = check_stdin(BAD, "--fix", "--stdin-filename", "generated/model.py", "-")
    assert result.stdout == BAD and result.exit_code == 0


def test_fix_keeps_the_encoding_of_the_buffer(project):
    source = "# -*- coding: latin-1 -*-\nimport jax.numpy as np\nx = np.ones(3)  # caf\xe9\n"
    result = CliRunner().invoke(main, ["check", "--fix", "--stdin-filename", "m.py", "-"],
                                input=source.encode("latin-1"), catch_exceptions=False)
    assert result.stdout_bytes == source.replace("np", "jnp").encode("latin-1")


def test_diff_shows_the_patch_under_the_given_name(project):
    result = CliRunner().invoke(main, ["check", "--diff", "--stdin-filename", "pkg/new.py", "-"],
                                input=BAD.encode(), catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stdout.startswith("--- a/pkg/new.py\n+++ b/pkg/new.py\n")
    assert "+import jax.numpy as jnp\n" in result.stdout


def test_the_buffer_is_a_module_of_the_project_of_its_path(project):
    # unsaved text of pkg/mod.py (moved down two lines): app.py's jitted step traces its helper
    result = check_stdin("# edited\n\n" + HELPER, "--stdin-filename", "pkg/mod.py", "-")
    reported = json.loads(result.stdout)
    assert [(f["path"], f["code"], f["line"]) for f in reported] == [("pkg/mod.py", "JAX201", 4)]
    assert reported[0]["trace"][0]["path"].endswith("app.py")
    # the same text as another project's file is not traced
    assert json.loads(check_stdin(HELPER, "--stdin-filename", "elsewhere/mod.py", "-").stdout) == []


def test_a_notebook_is_read_by_its_extension(project):
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": ["import jax.numpy as np\n"]}],
                "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    result = check_stdin(json.dumps(notebook), "--stdin-filename", "explore.ipynb", "-")
    assert [(f["code"], f["cell"], f["line"]) for f in json.loads(result.stdout)] == [("JAX601", 0, 1)]


def test_a_buffer_that_does_not_parse_is_jax000(project):
    result = check_stdin("def f(:\n", "--stdin-filename", "broken.py", "-")
    assert findings(result) == [("broken.py", "JAX000", 1)] and result.exit_code == 1


@pytest.mark.parametrize("args, message", [
    (["--stdin-filename", "a.py", "other.py"], "give `-` as the only path"),
    (["--stdin-filename", "a.py", "--add-noqa", "-"], "do not apply to the source read from stdin"),
])
def test_usage_errors_exit_2(project, args, message):
    result = CliRunner().invoke(main, ["check", *args], input=BAD.encode(), catch_exceptions=False)
    assert result.exit_code == 2 and message in result.stderr
