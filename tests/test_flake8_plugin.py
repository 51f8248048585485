"""The flake8 plugin through real flake8: same findings and messages as the CLI, noqa by flake8."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxlint.frontends.flake8_plugin import JaxlintChecker
from jaxlint.frontends.runner import RunOptions, run

from conftest import FIXTURES, ROOT

flake8 = pytest.importorskip("flake8")

LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>JAX\d{3}) (?P<message>.*)$")


def run_flake8(*args, cwd):
    return subprocess.run([sys.executable, "-m", "flake8", "--select", "JAX", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def run_cli_json(*args, cwd):
    result = subprocess.run([sys.executable, "-m", "jaxlint", "check", "--no-cache", "--output-format", "json", *args],
                            cwd=cwd, capture_output=True, text=True, timeout=300)
    return json.loads(result.stdout)


def parse(stdout):
    found = set()
    for line in stdout.splitlines():
        match = LINE.match(line)
        assert match, f"unexpected flake8 line: {line}"
        found.add((match["path"], int(match["line"]), int(match["col"]), match["code"], match["message"]))
    return found


@pytest.mark.system  # two processes over every fixture and example; the test below is its quick form
def test_flake8_matches_cli_on_fixtures_and_examples(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "fixtures", ignore=shutil.ignore_patterns("*.ipynb", "notebooks"))
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    result = run_flake8("fixtures", "examples", cwd=tmp_path)
    from_flake8 = parse(result.stdout)
    checked = run_cli_json("fixtures", "examples", cwd=tmp_path)
    from_cli = {(d["path"], d["line"], d["column"], d["code"], d["message"])
                for d in checked if d["cell"] is None and d["code"] != "JAX000"}
    # flake8 runs no plugin on a file that does not parse: the plugin's JAX000 stands beside the
    # error flake8 found, in flake8's words, on the line jaxlint reports
    unparsed = {(path, line, code) for path, line, _, code, _ in from_flake8 if code == "JAX000"}
    assert unparsed == {(d["path"], d["line"], "JAX000") for d in checked if d["code"] == "JAX000" and d["cell"] is None}
    assert unparsed
    from_flake8 = {found for found in from_flake8 if found[3] != "JAX000"}
    assert from_flake8 == from_cli
    assert len(from_cli) > 10
    assert result.returncode == 1


def _one_fixture_per_family() -> list[Path]:
    first: dict[str, Path] = {}
    for path in sorted(FIXTURES.glob("JAX*.py")):
        first.setdefault(path.name[:4], path)
    first.pop("JAX0", None)  # flake8 runs no plugin on a file that does not parse
    return list(first.values())


def test_plugin_gives_the_findings_and_messages_of_a_run_on_a_fixture_of_each_family(tmp_path, monkeypatch):
    """The plugin's own conversion (1-based columns, code and message in one text), in process."""
    monkeypatch.chdir(tmp_path)
    fixtures = _one_fixture_per_family()
    for path in fixtures:
        shutil.copy(path, tmp_path / path.name)
    outcome = run(RunOptions(paths=[path.name for path in fixtures], use_cache=False))
    expected = {(f.path, f.start.line, f.start.column, f"{f.code} {f.message}") for f in outcome.findings}
    from_plugin = set()
    for path in fixtures:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        from_plugin |= {(path.name, line, column + 1, text)
                        for line, column, text, _ in JaxlintChecker(None, path.name, lines).run()}
    assert from_plugin == expected
    assert {text[:6] for *_, text in expected} >= {path.name[:6] for path in fixtures}


@pytest.mark.system
def test_flake8_applies_noqa_and_columns_are_1_based(tmp_path):
    (tmp_path / "a.py").write_text("import jax.numpy as np\nimport jax.numpy as np  # noqa: JAX601\n")
    found = parse(run_flake8("a.py", cwd=tmp_path).stdout)
    assert {(f[1], f[2], f[3]) for f in found} == {(1, 8, "JAX601")}


@pytest.mark.system
def test_flake8_run_survives_unparsable_file(tmp_path):
    (tmp_path / "broken.py").write_text("import jax\ndef f(:\n")
    (tmp_path / "a.py").write_text("import jax.numpy as np\n")
    result = run_flake8("--select", "JAX,E999", ".", cwd=tmp_path)
    assert "./a.py:1:8: JAX601" in result.stdout
    assert "broken.py" in result.stdout


def test_plugin_module_import_is_light():
    code = "import sys, jaxlint.frontends.flake8_plugin; print('libcst' in sys.modules, 'jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
