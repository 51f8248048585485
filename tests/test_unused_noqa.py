"""JAX001: `# noqa` codes that suppress nothing, and `JAX` codes that name no rule; off unless
selected by its full code, judged only for rules that ran, removed by a safe fix."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from jaxlint.engine import checker
from jaxlint.engine.checker import RuleFailure, check_source, enabled_rules, fix_until_stable
from jaxlint.frontends.cli import main
from jaxlint.frontends.flake8_plugin import JaxlintChecker
from jaxlint.model.settings import Settings
from jaxlint.syntax.noqa import noqa_directives

ON = Settings(extend_select=("JAX001",))

SOURCE = '''import jax
import jax.numpy as np  # noqa: JAX601

def init(key):
    k1, k2 = jax.random.split(key)
    w = jax.random.normal(k1, (3,))  # noqa: JAX101, E501
    v = jax.random.normal(key, (3,))  # noqa: JAX101
    u = jax.random.normal(k2, (3,))  # noqa: JAX3 -- kept for the review
    s = "# noqa: JAX101"
    t = jax.random.normal(k2, (3,))  # noqa
    return w, v, u, s, t  # noqa: JAX999, F401, X100
'''


def check(source: str, settings: Settings = ON, path: str = "m.py") -> list:
    return check_source(source, path, settings, enabled_rules(settings, path))


def stale(source: str, settings: Settings = ON, path: str = "m.py") -> dict[int, str]:
    return {f.start.line: f.message for f in check(source, settings, path) if f.code == "JAX001"}


def fixed(source: str, settings: Settings = ON) -> str:
    def recheck(text: str) -> list:
        return check(text, settings)

    text, _ = fix_until_stable(source, recheck(source), recheck)
    return text


def test_stale_codes_are_reported_and_codes_in_use_are_not():
    assert stale(SOURCE) == {
        6: "`noqa` code JAX101 suppresses nothing on this line",
        8: "`noqa` code JAX3 suppresses nothing on this line",
        11: "JAX999 is not a jaxlint code",
    }
    findings = [f for f in check(SOURCE) if f.code == "JAX001"]
    first = findings[0]
    assert (first.start.column, first.end.column) == (38, 58)  # the directive: `# noqa: JAX101, E501`
    assert first.name == "unused-noqa" and first.severity.value == "warning"
    # the comments in use still suppress: JAX601 on line 2, JAX101 on line 7, the bare one on line 10
    assert [f.code for f in check(SOURCE) if f.code != "JAX001"] == []


def test_the_fix_keeps_other_tools_codes_and_is_idempotent():
    once = fixed(SOURCE)
    assert once.splitlines()[5].endswith("(3,))  # noqa: E501")
    assert once.splitlines()[6].endswith("(3,))  # noqa: JAX101")  # in use: kept
    assert once.splitlines()[7].endswith("(3,))  # -- kept for the review")
    assert once.splitlines()[8] == '    s = "# noqa: JAX101"'
    assert once.splitlines()[10] == "    return w, v, u, s, t  # noqa: F401, X100"
    assert [line for a, line in zip(SOURCE.splitlines(), once.splitlines()) if a != line] == [
        once.splitlines()[i] for i in (5, 7, 10)]
    assert stale(once) == {}
    assert fixed(once) == once


def test_a_comment_left_without_codes_goes_with_the_blanks_before_it():
    source = "import jax\nx = jax.numpy.ones(3)\t  # noqa: JAX301\n"
    assert fixed(source) == "import jax\nx = jax.numpy.ones(3)\n"
    source = "import jax\nx = 1  # type: ignore  # noqa: JAX2, jax5\n"
    assert stale(source) == {2: "`noqa` codes JAX2, jax5 suppress nothing on this line"}
    assert fixed(source) == "import jax\nx = 1  # type: ignore\n"


def test_off_by_default_and_not_selected_by_a_prefix():
    for settings in (Settings(), Settings(select=("JAX",)), Settings(select=("JAX0", "JAX1")),
                     Settings(extend_select=("JAX00",))):
        assert "JAX001" not in enabled_rules(settings, "m.py")
        assert stale(SOURCE, settings) == {}
    assert "JAX001" in enabled_rules(Settings(select=("JAX001", "JAX")), "m.py")
    # ignored like any rule: by its code, or per file
    assert "JAX001" not in enabled_rules(Settings(extend_select=("JAX001",), ignore=("JAX001",)), "m.py")
    per_file = Settings(extend_select=("JAX001",), per_file_ignores=(("m.py", ("JAX001",)),))
    assert "JAX001" not in enabled_rules(per_file, "m.py") and "JAX001" in enabled_rules(per_file, "n.py")


def test_a_code_of_a_rule_that_did_not_run_is_not_judged():
    source = "import jax\nx = jax.numpy.ones(3)  # noqa: JAX101\ny = 1  # noqa: JAX601\nz = 2  # noqa: JAX6, JAX1\n"
    assert stale(source) == {2: "`noqa` code JAX101 suppresses nothing on this line",
                             3: "`noqa` code JAX601 suppresses nothing on this line",
                             4: "`noqa` codes JAX6, JAX1 suppress nothing on this line"}
    only_jax6 = Settings(select=("JAX6", "JAX001"))
    assert stale(source, only_jax6) == {3: "`noqa` code JAX601 suppresses nothing on this line",
                                        4: "`noqa` code JAX6 suppresses nothing on this line"}
    # a prefix is judged only when every rule it covers ran
    assert stale(source, Settings(extend_select=("JAX001",), ignore=("JAX104",)))[4] == \
        "`noqa` code JAX6 suppresses nothing on this line"
    ignored_here = Settings(extend_select=("JAX001",), per_file_ignores=(("m.py", ("JAX101",)),))
    assert 2 not in stale(source, ignored_here) and 2 in stale(source, ignored_here, "other.py")


def test_codes_that_cover_this_rule_keep_the_comment():
    source = "import jax\nx = 1  # noqa: JAX101, JAX001\ny = 2  # noqa: JAX0\nz = 3  # noqa: JAX\n"
    assert stale(source) == {}


def test_a_bare_noqa_and_text_in_strings_are_never_reported():
    source = ('import jax\nx = 1  # noqa\ny = """\n# noqa: JAX101\n"""\nz = "# noqa: JAX101"  # noqa: JAX2\n'
              'w = 1  # noqa: JAX2\n')
    assert stale(source) == {7: "`noqa` code JAX2 suppresses nothing on this line"}
    # on line 6 the text in the string is what suppresses, as for flake8 (the first `# noqa` of
    # the line): the comment after it is not judged
    assert [d.line for d in noqa_directives(source)] == [7]


def test_file_level_codes():
    source = "# jaxlint: noqa: JAX601, JAX101\nimport jax\nimport jax.numpy as np\n"
    assert stale(source) == {1: "`noqa` code JAX101 suppresses nothing in this file"}
    assert fixed(source) == "# jaxlint: noqa: JAX601\nimport jax\nimport jax.numpy as np\n"
    unused = "import jax\n  # jaxlint: noqa: JAX101\nx = jax.numpy.ones(3)\n# jaxlint: noqa: JAX9"
    assert stale(unused) == {2: "`noqa` code JAX101 suppresses nothing in this file", 4: "JAX9 is not a jaxlint code"}
    assert fixed(unused) == "import jax\nx = jax.numpy.ones(3)\n"
    assert stale("import jax\n# jaxlint: noqa\n") == {}


def test_a_file_that_never_mentions_jax_still_has_its_comments_judged():
    assert stale("x = 1  # noqa: JAX101\n") == {1: "`noqa` code JAX101 suppresses nothing on this line"}
    assert stale("x = 1  # noqa: JAX101\n", Settings()) == {}


def test_nothing_is_judged_when_a_rule_failed(monkeypatch):
    def failing(file, enabled, *text):
        raise RuleFailure([], ["JAX101 failed: RuntimeError: boom"])

    monkeypatch.setattr(checker, "_walk", failing)
    with pytest.raises(RuleFailure) as info:
        check("import jax\nx = 1  # noqa: JAX101\n")
    assert info.value.findings == []


def test_the_flake8_plugin_never_reports_it(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.jaxlint]\nextend-select = ["JAX001"]\n')
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    plugin = JaxlintChecker(None, str(path), SOURCE.splitlines(keepends=True))
    codes = [message.split()[0] for _, _, message, _ in plugin.run()]
    assert "JAX001" not in codes and codes  # flake8 applies `# noqa` itself: the findings all come


def run(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args])


def test_command_line_fix_and_add_noqa(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(SOURCE)
    assert run("m.py").exit_code == 0
    result = run("--extend-select", "JAX001", "--output-format", "json", "m.py")
    assert result.exit_code == 1
    assert [(d["code"], d["line"]) for d in json.loads(result.stdout)] == [("JAX001", 6), ("JAX001", 8), ("JAX001", 11)]
    # --add-noqa silences findings, but a stale comment is not silenced by another one
    added = run("--extend-select", "JAX001", "--add-noqa", "m.py")
    assert added.exit_code == 0 and (tmp_path / "m.py").read_text() == SOURCE
    assert run("--extend-select", "JAX001", "--fix", "m.py").exit_code == 0
    assert (tmp_path / "m.py").read_text() == fixed(SOURCE)
    assert run("--select", "JAX0", "m.py").exit_code == 2  # a prefix alone selects no rule
    listed = CliRunner().invoke(main, ["rules"]).stdout.splitlines()
    assert listed[1].startswith("JAX001  unused-noqa") and "warning  [*]" in listed[1]


def test_notebook_cells(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
             for source in (["import jax\n", "import jax.numpy as np  # noqa: JAX601\n"],
                            ["%time x = 1\n", "y = np.ones(3)  # noqa: JAX601, E501\n"])]
    notebook = {"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    result = run("--extend-select", "JAX001", "--output-format", "json", "nb.ipynb")
    assert [(d["code"], d["cell"], d["line"]) for d in json.loads(result.stdout)] == [("JAX001", 1, 2)]
    assert run("--extend-select", "JAX001", "--fix", "nb.ipynb").exit_code == 0
    sources = [cell["source"] for cell in json.loads((tmp_path / "nb.ipynb").read_text())["cells"]]
    assert sources == [cells[0]["source"], ["%time x = 1\n", "y = np.ones(3)  # noqa: E501\n"]]
