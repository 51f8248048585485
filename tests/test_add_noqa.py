"""`--add-noqa` (a `# noqa: CODES` on each line with findings, nothing else changed) and
`# jaxlint: noqa` (a whole file, or some codes in it)."""
from __future__ import annotations

import ast

from click.testing import CliRunner

from jaxlint.frontends.cli import main
from jaxlint.frontends.flake8_plugin import JaxlintChecker

SOURCE = '''import jax
import jax.numpy as np

key = jax.random.key(0)
a = jax.random.normal(key, (2,))
b = jax.random.normal(key, (2,))  # noqa: E501
doc = """text
""" + str(jax.random.normal(key, (2,)))
'''
CONTINUED = '''import jax

key = jax.random.key(0)
a = jax.random.normal(key, (2,))
c = jax.random.normal(key, (2,)) \\
    if a is not None else None
'''


def run(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args])


def test_added_comments_silence_every_finding_and_change_nothing_else(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SOURCE)
    assert run("a.py").exit_code == 1
    added = run("--add-noqa", "a.py")
    assert added.exit_code == 0 and "Added 3 noqa comments in 1 file." in added.output
    text = (tmp_path / "a.py").read_text()
    assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(SOURCE))
    assert text.splitlines()[1] == "import jax.numpy as np  # noqa: JAX601"
    assert text.splitlines()[5].endswith("# noqa: E501, JAX101")  # added to the comment there
    assert [line.split("  # noqa")[0] for line in text.splitlines()] == \
           [line.split("  # noqa")[0] for line in SOURCE.splitlines()]
    assert run("a.py").exit_code == 0
    again = run("--add-noqa", "a.py")
    assert "Added 0 noqa comments in 0 files." in again.output and (tmp_path / "a.py").read_text() == text


def test_a_line_that_continues_gets_no_comment_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.py").write_text(CONTINUED)
    result = run("--add-noqa", "c.py")
    assert "c.py:5: no noqa comment added" in result.output
    assert (tmp_path / "c.py").read_text() == CONTINUED
    assert run("--add-noqa", "--fix", "c.py").exit_code == 2


def test_jaxlint_noqa_on_its_own_line_covers_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "all.py").write_text("# jaxlint: noqa\n" + SOURCE)
    (tmp_path / "some.py").write_text("# JAXLINT: NOQA: jax6\n" + SOURCE)
    (tmp_path / "inline.py").write_text(SOURCE.replace("import jax\n", "import jax  # jaxlint: noqa\n", 1))
    assert run("all.py").exit_code == 0
    assert {line.split()[1] for line in run("--quiet", "some.py").output.splitlines()} == {"JAX101"}
    assert "JAX601" in run("--quiet", "inline.py").output  # only a line of its own counts
    lines = (tmp_path / "some.py").read_text().splitlines(keepends=True)
    from_flake8 = [text.split()[0] for _, _, text, _ in JaxlintChecker(None, "some.py", lines).run()]
    assert from_flake8 and set(from_flake8) == {"JAX101"}
