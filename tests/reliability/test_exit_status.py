"""Exit statuses say what happened: 0 no findings, 1 findings, 2 usage, configuration or internal
error (never 1 for a crash), 128 + N for a signal; one line on stderr, never a traceback."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
from click.testing import CliRunner

from jaxlint.frontends import runner
from jaxlint.frontends.cli import main
from jaxlint_process import command, environment, finding_paths, needs_proc, run, snapshot

pytestmark = pytest.mark.system

BAD = "import jax.numpy as np\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.py").write_text(BAD)
    return tmp_path


def check(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *args])


def stderr_lines(result) -> list[str]:
    return result.stderr.splitlines()


@pytest.mark.parametrize("line", ["!", "\\"], ids=["bang", "backslash"])
def test_gitignore_line_git_accepts_but_matches_nothing(project, line):
    (project / "ignored.py").write_text(BAD)
    (project / ".gitignore").write_text(f"{line}\nignored.py\n")
    result = check(".")
    assert result.exit_code == 1, result.output
    assert finding_paths(result.stdout) == {"good.py"}  # the line is skipped, the others still apply
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_exclude_pattern_that_cannot_compile_is_a_configuration_error(project):
    (project / "pyproject.toml").write_text('[tool.jaxlint]\nexclude = ["!"]\n')
    result = check(".")
    assert result.exit_code == 2
    assert stderr_lines(result) == [f"jaxlint: error: {project / 'pyproject.toml'} [tool.jaxlint]: exclude: "
                                    "'!' is not a valid gitignore-style pattern"]
    assert result.stdout == ""


@pytest.mark.parametrize("toml, shown", [('"x"', "'x'"), ("5", "5"), ('"jaxlint"', "'jaxlint'")])
def test_pyproject_whose_tool_is_not_a_table_is_a_configuration_error(project, toml, shown):
    (project / "pyproject.toml").write_text(f"tool = {toml}\n")
    (project / "sub").mkdir()
    (project / "sub" / "a.py").write_text(BAD)
    result = check("sub")
    assert result.exit_code == 2
    assert stderr_lines(result) == [
        f"jaxlint: error: {project / 'pyproject.toml'}: tool: expected a table ([tool]), got {shown}"]


def test_sarif_for_a_file_name_that_is_not_utf8(project):
    name = os.fsdecode(b"caf\xe9.py")  # held by Python as a lone surrogate
    try:
        (project / name).write_text(BAD)
    except (OSError, UnicodeEncodeError):
        pytest.skip("the file system refuses names that are not UTF-8")
    result = check("--output-format", "sarif", ".")
    assert result.exit_code == 1, result.output
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(result.stdout)["runs"][0]["results"]}
    assert uris == {"caf%E9.py", "good.py"}  # the file's own bytes, percent-encoded


def test_text_report_with_a_name_that_is_not_utf8_under_a_strict_locale(tmp_path):
    try:
        (tmp_path / os.fsdecode(b"caf\xe9.py")).write_text(BAD)
    except (OSError, UnicodeEncodeError):
        pytest.skip("the file system refuses names that are not UTF-8")
    env = {**environment(), "PYTHONIOENCODING": "utf-8:strict"}
    result = subprocess.run(command(["check", "--no-cache", "."]), cwd=tmp_path, env=env, capture_output=True,
                            timeout=60)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(b"caf\xe9.py:1:8: JAX601 ")  # the name's own bytes
    assert b"Traceback" not in result.stderr


def test_an_uncaught_exception_is_one_line_and_status_2_never_1(project, monkeypatch):
    def broken(options):
        raise RuntimeError("something jaxlint did not expect")

    monkeypatch.setattr(runner, "run", broken)
    result = check(".")
    assert result.exit_code == 2
    assert stderr_lines(result) == [
        "jaxlint: internal error: RuntimeError: something jaxlint did not expect (please report this)"]


def test_ctrl_c_is_its_own_status_not_findings(project, monkeypatch):
    def interrupted(options):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run", interrupted)
    result = check(".")
    assert result.exit_code == 130
    assert stderr_lines(result) == ["jaxlint: interrupted"]


def test_missing_path_is_an_error_and_the_summary_does_not_say_passed(project):
    result = check("missing.py")
    assert result.exit_code == 2
    assert stderr_lines(result) == ["jaxlint: missing.py: no such file or directory",
                                    "No files checked, and there were errors (see above)."]
    with_file = check("missing.py", "good.py")
    assert with_file.exit_code == 2 and finding_paths(with_file.stdout) == {"good.py"}
    assert "All checks passed" not in with_file.stderr and "errors (see above)" in with_file.stderr


@pytest.mark.parametrize("table, args", [
    ("select = []", ()),
    ('select = ["JAX1"]\nignore = ["JAX1"]', ()),
    ("", ("--select", "")),
    ("", ("--select", ",")),
    ("", ("--select", "JAX6", "--ignore", "JAX6")),
], ids=["empty-select", "ignore-covers-select", "empty-option", "comma-option", "option-ignores-all"])
def test_a_selection_of_no_rule_is_an_error_not_a_silent_pass(project, table, args):
    (project / "pyproject.toml").write_text(f"[tool.jaxlint]\n{table}\n")
    result = check(*args, ".")
    assert result.exit_code == 2, result.output
    assert len(stderr_lines(result)) == 1 and "jaxlint: error: " in result.stderr
    assert "nothing would be checked" in result.stderr or "would check nothing" in result.stderr
    assert result.stdout == ""


def test_empty_select_with_extend_select_is_a_selection(project):
    (project / "pyproject.toml").write_text('[tool.jaxlint]\nselect = []\nextend-select = ["JAX601"]\n')
    result = check(".")
    assert result.exit_code == 1 and finding_paths(result.stdout) == {"good.py"}


@pytest.mark.skipif(not needs_proc, reason="needs /proc")
def test_a_closed_output_pipe_stops_quietly(tmp_path):
    for index in range(3):
        (tmp_path / f"f{index}.py").write_text(BAD * 50)
    before = snapshot(tmp_path)
    process = subprocess.Popen(command(["check", "--no-cache", "."]), cwd=tmp_path, env=environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    process.stdout.close()  # the reader is gone before the first line (`jaxlint check | head -0`)
    try:
        stderr = process.stderr.read()
        returncode = process.wait(timeout=60)
    finally:
        process.kill()
    assert returncode == 141  # 128 + SIGPIPE, as a program killed by it
    assert stderr == b""  # no traceback, no "Exception ignored", no summary of a report nobody read
    assert snapshot(tmp_path) == before


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_report_that_cannot_be_written_is_an_error(tmp_path):
    (tmp_path / "a.py").write_text(BAD)
    with open("/dev/full", "w") as full:
        result = subprocess.run(command(["check", "--no-cache", "."]), cwd=tmp_path, env=environment(),
                                stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["jaxlint: error: cannot write the report: No space left on device"]


def test_configuration_error_in_a_subprocess_has_no_traceback(tmp_path):
    """The same guard holds for the real entry point, not only under click's test runner."""
    (tmp_path / "pyproject.toml").write_text("tool = 5\n")
    (tmp_path / "a.py").write_text(BAD)
    (tmp_path / ".gitignore").write_text("!\n\\\n")
    result = run(["check", "--no-cache", "."], tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"jaxlint: error: {tmp_path / 'pyproject.toml'}: tool: expected a table "
                                          "([tool]), got 5"]
