"""The command line's smaller options and messages: a run that checks nothing, unsafe fixes and
the list of fixes, `jaxlint rule` with prefixes, `--all` and JSON, grouped help, the progress line,
and JAX000 through flake8 under `--select JAX`."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from jaxlint.frontends.cli import main

ALIAS = "import jax\nimport jax.numpy as np\n\n\ndef f(t):\n    return jax.tree_map(np.abs, t)\n"
#: JAX401 whose fix is unsafe: `x` aliases `b`, so rebinding `x` no longer updates what `b` holds
ALIASED_UPDATE = ("import jax.numpy as jnp\n\n\ndef f():\n    b = jnp.zeros(3)\n    x = b\n    x[0] = 1.0\n"
                  "    return x\n")


def invoke(*args, **kwargs):
    return CliRunner().invoke(main, list(args), **kwargs)


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- a run that checks nothing ---------------------------------------------------------------------

def test_a_run_that_checks_no_file_warns_and_exits_zero(here):
    (here / "empty").mkdir()
    result = invoke("check", "--no-cache", "empty")
    assert result.exit_code == 0
    assert "jaxlint: warning: no Python files or notebooks found under empty" in result.stderr
    assert "No files checked." in result.stderr and "All checks passed" not in result.stderr
    (here / "gen").mkdir()
    (here / "gen" / "a.py").write_text(ALIAS)
    excluded = invoke("check", "--no-cache", "--quiet", "--extend-exclude", "gen/", "gen")
    assert excluded.exit_code == 0 and "no Python files or notebooks found under gen" in excluded.stderr


def test_a_missing_path_stays_an_error_not_a_warning(here):
    result = invoke("check", "--no-cache", "nowhere")
    assert result.exit_code == 2 and "warning: no Python files" not in result.stderr


# -- --unsafe-fixes, --show-fixes ------------------------------------------------------------------

def test_unsafe_fixes_are_applied_only_when_asked(here):
    (here / "u.py").write_text(ALIASED_UPDATE)
    plain = invoke("check", "--no-cache", "--fix", "u.py")
    assert plain.exit_code == 1 and (here / "u.py").read_text() == ALIASED_UPDATE
    assert "1 fixable with --fix --unsafe-fixes." in plain.stderr
    diff = invoke("check", "--no-cache", "--diff", "--unsafe-fixes", "u.py")
    assert "+    x = x.at[0].set(1.0)" in diff.stdout and (here / "u.py").read_text() == ALIASED_UPDATE
    fixed = invoke("check", "--no-cache", "--fix", "--unsafe-fixes", "u.py")
    assert fixed.exit_code == 0 and "    x = x.at[0].set(1.0)\n" in (here / "u.py").read_text()


def test_unsafe_fixes_without_fix_or_diff_is_a_usage_error(here):
    (here / "u.py").write_text(ALIASED_UPDATE)
    result = invoke("check", "--no-cache", "--unsafe-fixes", "u.py")
    assert result.exit_code == 2 and "--unsafe-fixes applies with --fix or --diff" in result.stderr


def test_show_fixes_lists_what_was_or_would_be_fixed(here):
    (here / "a.py").write_text(ALIAS)
    would = invoke("check", "--no-cache", "--show-fixes", "a.py")
    assert "--fix would fix 2 findings:\n  a.py:\n    1 × JAX601\n    1 × JAX602\n" in would.stderr
    shown = invoke("check", "--no-cache", "--diff", "--show-fixes", "a.py")
    assert "The patch fixes 2 findings:" in shown.stderr and (here / "a.py").read_text() == ALIAS
    fixed = invoke("check", "--no-cache", "--fix", "--show-fixes", "a.py")
    assert "Fixed 2 findings:\n  a.py:\n    1 × JAX601\n    1 × JAX602\n" in fixed.stderr
    again = invoke("check", "--no-cache", "--fix", "--show-fixes", "a.py")
    assert "No findings fixed." in again.stderr


# -- jaxlint rule ----------------------------------------------------------------------------------

def test_rule_takes_codes_prefixes_and_names():
    one = invoke("rule", "jax101")
    assert one.exit_code == 0 and one.stdout.startswith("# JAX101 prng-key-reuse")
    family = invoke("rule", "JAX1")
    titles = [line for line in family.stdout.splitlines() if line.startswith("# JAX")]
    assert titles and all(t.startswith("# JAX1") for t in titles) and len(titles) == len(set(titles))
    mixed = invoke("rule", "prng-key-reuse", "JAX601", "JAX101")
    assert [t.split()[1] for t in mixed.stdout.splitlines() if t.startswith("# JAX")] == ["JAX101", "JAX601"]


def test_rule_all_and_json():
    from jaxlint.catalogue.rule_docs import load_catalogue

    everything = json.loads(invoke("rule", "--all", "--output-format", "json").stdout)
    assert [item["code"] for item in everything] == sorted(load_catalogue())
    (item,) = json.loads(invoke("rule", "JAX601", "--output-format", "json").stdout)
    assert item["name"] == "jax-numpy-as-np" and item["fixable"] is True and item["why"]
    listed = json.loads(invoke("rules", "--output-format", "json").stdout)
    assert len(listed) == len(everything) and set(listed[0]) == {"code", "name", "severity", "fixable", "summary"}


def test_rule_errors_are_one_line():
    unknown = invoke("rule", "JAX9")
    assert unknown.exit_code == 2 and unknown.stderr.strip() == (
        "jaxlint: error: unknown rule 'JAX9' (no code or name is it or starts with it); `jaxlint rules` lists them")
    assert invoke("rule").exit_code == 2
    assert invoke("rule", "--all", "JAX1").exit_code == 2


# -- help ------------------------------------------------------------------------------------------

def test_the_command_list_is_not_cut_mid_sentence():
    lines = invoke("--help").stdout.splitlines()
    commands = lines[lines.index("Commands:") + 1:]
    assert {line.split()[0] for line in commands if line.strip()} == {"check", "rule", "rules", "server"}
    assert not any(line.rstrip().endswith("...") for line in commands)


def test_check_help_groups_its_options():
    text = invoke("check", "--help").stdout
    titles = ["Rule selection:", "Files:", "Report:", "Fixes:", "Configuration:", "Runtime mode:", "Speed:"]
    positions = [text.index(f"\n{title}\n") for title in titles]
    assert positions == sorted(positions)
    fixes = text[text.index("\nFixes:\n"):text.index("\nConfiguration:\n")]
    assert all(option in fixes for option in ("--fix", "--diff", "--unsafe-fixes", "--show-fixes", "--add-noqa"))
    from jaxlint.frontends.cli import check

    options = {name for param in check.params if param.param_type_name == "option" for name in param.opts}
    listed = {option for option in options if f"  {option}" in text or f", {option}" in text}
    assert listed == options  # none lost by the grouping


# -- progress --------------------------------------------------------------------------------------

def test_the_progress_line_covers_the_project_analysis(here, capfd):
    from jaxlint.frontends.runner import RunOptions, run

    (here / "pkg").mkdir()
    (here / "pkg" / "__init__.py").write_text("")
    for index in range(4):
        imported = f"from pkg.m{index + 1} import helper\n" if index < 3 else ""
        (here / "pkg" / f"m{index}.py").write_text(f"import jax\n{imported}\n\ndef helper(x):\n    return jax.jit(x)\n")
    (here / "pyproject.toml").write_text("[tool.jaxlint]\n")
    run(RunOptions(paths=["pkg"], use_cache=False, progress=True))
    err = capfd.readouterr().err
    assert "jaxlint: analysing the project:" in err
    assert err.endswith("\r\x1b[K")  # erased once done
    run(RunOptions(paths=["pkg"], use_cache=False, progress=False))
    assert capfd.readouterr().err == ""


def test_progress_line_is_rewritten_in_place_and_erased():
    import io
    import sys

    from jaxlint.frontends.progress import ProgressLine

    stream, saved = io.StringIO(), sys.stderr
    sys.stderr = stream
    try:
        line = ProgressLine("checked", "files")
        for count in range(1, 101):
            line.show(count, 100)
        line.clear()
    finally:
        sys.stderr = saved
    shown = stream.getvalue().split("\r\x1b[K")
    assert shown[1] == "jaxlint: checked 1/100 files" and shown[-2] == "jaxlint: checked 100/100 files"
    assert shown[-1] == "" and len(shown) < 100  # not one rewrite per file


# -- flake8 ----------------------------------------------------------------------------------------

def test_flake8_select_jax_reports_a_file_that_does_not_parse(here, capsys):
    from flake8.main.cli import main as flake8

    (here / "broken.py").write_text("import jax\ndef f(:\n")
    (here / "fine.py").write_text("import jax\n")
    status = flake8(["--select", "JAX", "-j", "1", "broken.py", "fine.py"])
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    assert out == ["broken.py:2:8: JAX000 the file could not be checked: SyntaxError: invalid syntax"]
    # where flake8 shows its own E999, JAX000 would only repeat it
    flake8(["--select", "E999,JAX", "-j", "1", "broken.py"])
    assert [line.split()[1] for line in capsys.readouterr().out.splitlines()] == ["E999"]
