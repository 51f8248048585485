"""Every command the README and docs/ show that can run here (`jaxlint ...`, `python -m jaxlint`,
`flake8 ...` lines of their `bash`/`console` blocks) runs, in a scratch project holding the paths
it names, and ends as the docs say: no usage error, no internal error, and the error line a
`console` block shows after it."""
from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: findings for every rule family the examples mention (a file named in a command is written so)
SOURCE = ("import jax\nimport jax.numpy as np\n\n\ndef f(t):\n    return jax.tree_map(np.abs, t)\n\n\n"
          "key = jax.random.key(0)\na = jax.random.normal(key, (2,))\nb = jax.random.normal(key, (2,))\n")
#: what cannot run here: the language server talks to an editor, runtime mode needs JAX and time,
#: pip and git need the network
NOT_HERE = ("--runtime", "pip ", "git ")
_COMMAND = re.compile(r"^(?:\.venv/bin/)?(?:jaxlint|flake8|python3? -m jaxlint)(?:\s|$)")


@dataclass(frozen=True)
class Shown:
    page: str
    line: int
    command: str
    #: the `jaxlint: error: ...` line a console block shows after the command, if any
    error: str | None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.command}"


def shown_commands() -> list[Shown]:
    found = []
    for page in PAGES:
        language = None
        lines = page.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if line.startswith("```"):
                language = line[3:].strip() if language is None else None
                continue
            if language not in ("bash", "console", "sh", "shell"):
                continue
            text = line.strip()
            if language == "console":
                if not text.startswith("$ "):
                    continue
                text = text[2:]
            if not _COMMAND.match(text) or any(part in text for part in NOT_HERE):
                continue
            following = lines[number] if number < len(lines) else ""
            error = following if following.startswith("jaxlint: error:") else None
            found.append(Shown(page.relative_to(ROOT).as_posix(), number, text, error))
    return found


SHOWN = shown_commands()


def test_the_docs_show_commands_of_every_kind():
    assert len(SHOWN) > 40
    kinds = {shlex.split(s.command, comments=True)[1] for s in SHOWN if s.command.startswith("jaxlint")}
    assert {"check", "rule", "rules", "--version"} <= kinds
    assert any(s.command.startswith("flake8") for s in SHOWN)


def _scratch(tmp_path: Path, words: list[str]) -> None:
    """A project holding the examples and every path the command names (a file with findings, a
    directory with such a file), and a `buffer` for commands that read one from stdin."""
    if any(word.startswith("examples") for word in words):
        shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "buffer").write_text(SOURCE)
    for word in words:
        if word.startswith("-") or "/" not in word and not word.endswith((".py", ".ipynb")):
            continue
        path = tmp_path / word
        if path.exists() or word.startswith("/"):
            continue
        if word.endswith((".py", ".ipynb")) and not word.endswith(".ipynb"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(SOURCE)
        elif word.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            (path / "bad.py").write_text(SOURCE)


def _run(words: list[str], stdin: str | None, capsys) -> tuple[int, str, str]:
    if words[0] == "flake8":
        from flake8.main.cli import main as flake8

        try:
            status = flake8(["-j", "1", *words[1:]])
        except SystemExit as stop:  # `--version` exits
            status = stop.code or 0
        captured = capsys.readouterr()
        return status, captured.out, captured.err
    from jaxlint.frontends.cli import main

    arguments = words[3:] if words[0].startswith("python") else words[1:]
    result = CliRunner().invoke(main, arguments, input=stdin)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("shown", SHOWN, ids=str)
def test_a_command_the_docs_show_runs(shown: Shown, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    words = shlex.split(shown.command, comments=True)
    stdin = None
    for mark in ("|", ">", "<"):  # `| cat`, `> out.json`, `< buffer`: the shell's part
        if mark in words:
            at = words.index(mark)
            if mark == "<":
                stdin = SOURCE
            words = words[:at] + (words[at + 2:] if mark == "<" else [])
    words = ["jaxlint" if w == ".venv/bin/jaxlint" else w for w in words]
    _scratch(tmp_path, words)
    status, out, err = _run(words, stdin, capsys)
    if shown.error is not None and "pyproject.toml" in shown.error:
        return  # a broken configuration the page describes in its prose
    if shown.error is not None:
        assert status == 2 and err.splitlines()[0] == shown.error, err
        return
    assert status in (0, 1), f"{shown}\n{out}\n{err}"
    assert "internal error" not in err and "Usage:" not in err, err
    if words[:2] in (["jaxlint", "rule"], ["jaxlint", "rules"]) or "--version" in words or "--help" in words:
        assert status == 0 and out


def test_the_documented_configuration_keys_are_the_known_ones():
    from jaxlint.frontends.config import _KEYS

    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    (listed,) = re.findall(r"\(known keys: ([^)]*)\)", text)
    assert listed.split(", ") == list(_KEYS)
    headings = set(re.findall(r"^### `([a-z0-9-]+)`", text, re.M))
    assert set(_KEYS) - {"runtime"} <= headings
