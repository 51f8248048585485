"""The command line as SPEC describes it, driven through click's runner and, where it matters, a real subprocess."""
import json
import os
import re
import shutil
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxlint.frontends.cli import main
from jaxlint.engine.registry import all_rules

from conftest import ROOT

BAD = "import jax\nimport jax.numpy as np\n\n\ndef f(t):\n    return jax.tree_map(np.abs, t)\n"
CLEAN = "import jax\nimport jax.numpy as jnp\n\n\ndef f(t):\n    return jax.tree.map(jnp.abs, t)\n"
SPEC_KEYS = {"code", "name", "severity", "message", "path", "line", "column", "end_line", "end_column", "fix", "cell"}


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BAD)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    return tmp_path


def invoke(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


def test_text_output_lines_summary_and_exit_1(project):
    result = invoke("pkg")
    assert result.exit_code == 1
    lines = [l for l in result.stdout.splitlines() if l]
    assert lines[0].startswith("pkg/bad.py:2:8: JAX601 ")
    assert lines[1].startswith("pkg/bad.py:6:12: JAX602 `jax.tree_map`")
    assert len(lines) == 2
    assert "2 findings" in result.stderr


def test_clean_tree_exits_0(project):
    result = invoke("pkg/clean.py")
    assert result.exit_code == 0
    assert result.stdout == ""


def test_exit_zero_and_quiet(project):
    result = invoke("pkg", "--exit-zero", "--quiet")
    assert result.exit_code == 0
    assert "JAX601" in result.stdout
    assert result.stderr == ""


def test_json_output_has_every_spec_key(project):
    result = invoke("pkg", "--output-format", "json")
    data = json.loads(result.stdout)
    assert [d["code"] for d in data] == ["JAX601", "JAX602"]
    for item in data:
        assert SPEC_KEYS <= set(item)
        assert item["path"] == "pkg/bad.py" and item["cell"] is None
    assert data[0]["line"] == 2 and data[0]["column"] == 8 and data[0]["end_column"] == 23
    assert data[0]["fix"]["applicability"] == "safe"


@pytest.mark.parametrize("option, value, codes", [
    ("--select", "JAX601", ["JAX601"]),
    ("--select", "JAX6", ["JAX601", "JAX602"]),
    ("--ignore", "JAX602", ["JAX601"]),
    ("--ignore", "JAX60", []),
])
def test_select_and_ignore_by_code_or_prefix(project, option, value, codes):
    result = invoke("pkg", option, value, "--output-format", "json")
    assert [d["code"] for d in json.loads(result.stdout)] == codes


def test_extend_select_adds_to_configured_selection(project):
    (project / "pyproject.toml").write_text('[tool.jaxlint]\nselect = ["JAX601"]\n')
    only = invoke("pkg", "--output-format", "json")
    assert [d["code"] for d in json.loads(only.stdout)] == ["JAX601"]
    extended = invoke("pkg", "--extend-select", "JAX602", "--output-format", "json")
    assert [d["code"] for d in json.loads(extended.stdout)] == ["JAX601", "JAX602"]


def test_unknown_code_on_command_line_exits_2(project):
    result = invoke("pkg", "--select", "JAX999")
    assert result.exit_code == 2
    assert "JAX999" in result.stderr


def test_statistics(project):
    result = invoke("pkg", "--statistics")
    assert result.exit_code == 1
    rows = [l.split() for l in result.stdout.splitlines() if l.strip()]
    assert [r[:3] for r in rows] == [["1", "JAX601", "jax-numpy-as-np"], ["1", "JAX602", "deprecated-api"]]


def test_noqa_suppresses_in_cli(project):
    (project / "pkg" / "bad.py").write_text(BAD.replace("as np\n", "as np  # noqa: JAX601\n"))
    result = invoke("pkg", "--output-format", "json")
    assert [d["code"] for d in json.loads(result.stdout)] == ["JAX602"]


def test_diff_shows_fixes_and_writes_nothing(project):
    result = invoke("pkg", "--diff")
    assert result.exit_code == 1
    assert "-import jax.numpy as np" in result.stdout
    assert "+import jax.numpy as jnp" in result.stdout
    assert "+    return jax.tree.map(jnp.abs, t)" in result.stdout
    assert (project / "pkg" / "bad.py").read_text() == BAD


def test_fix_writes_then_second_fix_changes_nothing(project):
    first = invoke("pkg", "--fix")
    assert first.exit_code == 0, first.stdout
    fixed = (project / "pkg" / "bad.py").read_text()
    assert fixed == CLEAN
    second = invoke("pkg", "--fix")
    assert second.exit_code == 0
    assert (project / "pkg" / "bad.py").read_text() == fixed


def test_github_format(project):
    result = invoke("pkg", "--output-format", "github")
    first = result.stdout.splitlines()[0]
    assert first.startswith("::warning file=pkg/bad.py,line=2,col=8,")
    assert "title=JAX601" in first


def test_sarif_format(project):
    result = invoke("pkg", "--output-format", "sarif")
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["JAX601", "JAX602"]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == {"JAX601", "JAX602"}


def test_cache_reuses_results_and_notices_changes(project, monkeypatch):
    from jaxlint.frontends import cache

    first = CliRunner().invoke(main, ["check", "pkg", "--output-format", "json"])
    assert (project / ".jaxlint_cache").is_dir()
    # one result entry per file (the project index is kept beside them, under projects/)
    entries = [e for e in (project / ".jaxlint_cache").rglob("*.json") if "projects" not in e.parts]
    assert len(entries) == 2
    assert list((project / ".jaxlint_cache").rglob("projects/*.json"))
    # Poison the cached entry for bad.py, sealed as if jaxlint wrote it: a hit returns what is stored.
    for entry in entries:
        data = json.loads(entry.read_text())
        body = json.loads(data["body"])
        if body["findings"]:
            body["findings"][0]["message"] = "from the cache"
            entry.write_text(json.dumps({**data, "seal": "as written", "body": json.dumps(body)}))
    with monkeypatch.context() as patched:
        patched.setattr(cache, "seal", lambda *parts: "as written")
        cached = CliRunner().invoke(main, ["check", "pkg", "--output-format", "json"])
    assert "from the cache" in cached.stdout
    fresh = CliRunner().invoke(main, ["check", "pkg", "--output-format", "json", "--no-cache"])
    assert "from the cache" not in fresh.stdout and json.loads(fresh.stdout) == json.loads(first.stdout)
    (project / "pkg" / "bad.py").write_text(BAD + "\n")
    changed = CliRunner().invoke(main, ["check", "pkg", "--output-format", "json"])
    assert "from the cache" not in changed.stdout


def test_cache_is_keyed_on_configuration(project):
    CliRunner().invoke(main, ["check", "pkg"])
    (project / "pyproject.toml").write_text('[tool.jaxlint]\nignore = ["JAX601"]\n')
    result = CliRunner().invoke(main, ["check", "pkg", "--output-format", "json"])
    assert [d["code"] for d in json.loads(result.stdout)] == ["JAX602"]


def test_parallel_jobs_give_the_same_findings(project):
    for i in range(40):
        (project / "pkg" / f"mod{i}.py").write_text(BAD if i % 2 else CLEAN)
    serial = invoke("pkg", "--jobs", "1", "--output-format", "json")
    parallel = invoke("pkg", "--jobs", "2", "--output-format", "json")
    assert json.loads(serial.stdout) == json.loads(parallel.stdout)
    assert len(json.loads(serial.stdout)) == 2 * 21


def test_default_path_is_current_directory(project):
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json"])
    assert {d["path"] for d in json.loads(result.stdout)} == {"pkg/bad.py"}


@pytest.mark.system
def test_subprocess_on_bundled_examples(run_cli, tmp_path):
    # The README's first command. No counts are fixed here (they move as rules are tuned): the
    # output's shape is, and the summary must agree with the lines above it.
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    result = run_cli("check", "examples/")
    assert result.returncode == 1
    line_format = re.compile(r"^(?P<path>examples/[\w.]+):(?:cell \d+, line )?\d+:\d+: (?P<code>JAX\d{3}) \S.*$")
    matches = [line_format.match(line) for line in result.stdout.splitlines()]
    assert matches and all(matches), [l for l, m in zip(result.stdout.splitlines(), matches) if not m]
    severities = Counter(all_rules()[m["code"]].doc.severity.value for m in matches)
    paths = {m["path"] for m in matches}
    checked = len([p for p in (tmp_path / "examples").iterdir() if p.suffix in {".py", ".ipynb"}])
    fixable = sum(line.endswith(" [*]") for line in result.stdout.splitlines())
    summary = re.fullmatch(r"Found (\d+) findings \((.*)\) in (\d+) of (\d+) files(?:; (\d+) fixable with --fix)?\.\n",
                           result.stderr)
    assert summary, result.stderr
    assert int(summary[1]) == len(matches)
    assert {word.removesuffix("s"): int(n) for n, word in re.findall(r"(\d+) (\w+)", summary[2])} == severities
    assert (int(summary[3]), int(summary[4])) == (len(paths), checked)
    assert int(summary[5] or 0) == fixable
    assert "examples/clean.py" not in paths
    assert "examples/regression.ipynb" in paths


def test_runtime_flag_cannot_be_combined_with_fix(project):
    result = invoke("pkg", "--runtime", "--fix")
    assert result.exit_code == 2
    assert "--runtime" in result.stderr
    assert (project / "pkg" / "bad.py").read_text() == BAD


def test_a_reused_key_names_its_first_use_as_a_related_location(tmp_path, monkeypatch):
    """JSON and SARIF carry the first use of the key; the text line names it in the message, so no
    `via` line repeats it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "draws.py").write_text(
        "import jax\n\nkey = jax.random.key(0)\na = jax.random.normal(key, (3,))\nb = jax.random.uniform(key, (3,))\n")
    data = json.loads(CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json", "draws.py"]).stdout)
    assert [(d["code"], d["line"]) for d in data] == [("JAX101", 5)]
    assert data[0]["trace"] == [{"path": "draws.py", "line": 4, "message": "`key` is first consumed here"}]
    sarif = json.loads(CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "sarif", "draws.py"]).stdout)
    related = sarif["runs"][0]["results"][0]["relatedLocations"]
    assert [r["physicalLocation"]["region"]["startLine"] for r in related] == [4]
    text = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", "draws.py"]).stdout
    assert text.count("\n") == 1 and "via" not in text and "consumed at line 4" in text
