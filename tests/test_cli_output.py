"""The command line's report formats for people: `full` on a terminal, `concise` when piped, colour
as the environment asks."""
import json
import os
import re
import select
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from jaxlint.frontends.cli import main

BAD = "import jax\nimport jax.numpy as np\n\n\ndef f(t):\n    return jax.tree_map(np.abs, t)\n"
CONCISE = [
    "bad.py:2:8: JAX601 `jax.numpy` imported as `np` [*]",
    "bad.py:6:12: JAX602 `jax.tree_map` is deprecated in JAX 0.4.26 and removed in 0.6.0 [*]",
]
FULL = (
    f"{CONCISE[0].replace(': JAX601 ', ': JAX601 [warning] ')}\n"
    "  |\n"
    "1 | import jax\n"
    "2 | import jax.numpy as np\n"
    "  |        ^^^^^^^^^^^^^^^\n"
    "3 |\n"
    "  = note: readers and tools take `np` for NumPy, whose arrays are mutable and eager\n"
    "  = help: import it as `import jax.numpy as jnp`\n"
    "  = help: Import jax.numpy as jnp and rename its uses\n"
    "2 - import jax.numpy as np\n"
    "2 + import jax.numpy as jnp\n"
    "6 -     return jax.tree_map(np.abs, t)\n"
    "6 +     return jax.tree_map(jnp.abs, t)\n"
    "\n"
    f"{CONCISE[1].replace(': JAX602 ', ': JAX602 [warning] ')}\n"
    "  |\n"
    "5 | def f(t):\n"
    "6 |     return jax.tree_map(np.abs, t)\n"
    "  |            ^^^^^^^^^^^^\n"
    "  = help: use `jax.tree.map`, the same API under its new name\n"
    "  = help: Use jax.tree.map\n"
    "6 -     return jax.tree_map(np.abs, t)\n"
    "6 +     return jax.tree.map(np.abs, t)\n"
)


@pytest.fixture
def bad(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


class Outcome:
    def __init__(self, result):
        self.returncode, self.stdout, self.stderr = result.exit_code, result.stdout, result.stderr


def check(*args, env=None):
    """`jaxlint check ARGS` in this process (stdout is not a terminal)."""
    return Outcome(CliRunner().invoke(main, ["check", *args], env=env, catch_exceptions=False))


def test_piped_default_is_concise_and_text_is_its_alias(bad):
    default = check("--no-cache", "bad.py")
    assert default.returncode == 1
    assert default.stdout.splitlines() == CONCISE
    assert default.stderr.startswith("Found 2 findings (2 warnings) in 1 file")
    for name in ("concise", "text"):
        assert check("--no-cache", "--output-format", name, "bad.py").stdout == default.stdout


def test_full_snapshot_with_summary_on_stderr(bad):
    result = check("--no-cache", "--output-format", "full", "bad.py")
    assert result.returncode == 1
    assert result.stdout == FULL
    assert result.stderr.startswith("Found 2 findings (2 warnings) in 1 file")


def test_force_color_colours_a_pipe_and_no_color_wins(bad):
    forced = check("--no-cache", "--output-format", "full", "bad.py", env={"NO_COLOR": "", "FORCE_COLOR": "1"})
    assert forced.stdout.startswith("\x1b[1mbad.py:2:8\x1b[0m: \x1b[1;33mJAX601\x1b[0m \x1b[1;33m[warning]\x1b[0m")
    both = check("--no-cache", "--output-format", "full", "bad.py", env={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert both.stdout == FULL
    # concise output is never coloured
    concise = check("--no-cache", "bad.py", env={"NO_COLOR": "", "FORCE_COLOR": "1"})
    assert concise.stdout.splitlines() == CONCISE


def run_on_terminal(cwd, *args):
    """Run `jaxlint check ARGS` with stdout on a pseudo-terminal; (exit status, what it printed)."""
    import pty

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "CI")}
    env["TERM"] = "xterm"
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    main, child = pty.openpty()
    try:
        process = subprocess.Popen([sys.executable, "-m", "jaxlint", "check", "--no-cache", "--quiet", *args],
                                   cwd=cwd, stdout=child, stderr=subprocess.DEVNULL, env=env)
        os.close(child)
        child = None
        chunks = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not select.select([main], [], [], 1)[0]:
                continue
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal's other end closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        try:
            status = process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    finally:
        if child is not None:
            os.close(child)
        os.close(main)
    return status, b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.system
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_terminal_default_is_full_and_coloured_but_not_in_an_output_file(bad):
    status, text = run_on_terminal(bad, "bad.py")
    assert status == 1
    assert "\x1b[1;33m[warning]\x1b[0m" in text
    assert re.sub(r"\x1b\[[0-9;]*m", "", text) == FULL
    status, text = run_on_terminal(bad, "--output-file", "report.txt", "bad.py")
    assert (status, text) == (1, "")
    assert (bad / "report.txt").read_text().splitlines() == CONCISE


# -- --output-file ---------------------------------------------------------------------------------

def test_output_file_holds_the_report_and_the_summary_stays_on_stderr(bad):
    piped = check("--no-cache", "--output-format", "json", "bad.py")
    (bad / "out.json").write_text("stale")
    os.chmod(bad / "out.json", 0o640)
    result = check("--no-cache", "--output-format", "json", "-o", "out.json", "bad.py")
    assert result.returncode == 1 and result.stdout == ""
    assert (bad / "out.json").read_text() == piped.stdout
    assert oct((bad / "out.json").stat().st_mode & 0o777) == oct(0o640)
    concise = check("--no-cache", "--output-file", "out.txt", "bad.py")
    assert concise.returncode == 1 and concise.stdout == ""
    assert concise.stderr.startswith("Found 2 findings (2 warnings) in 1 file")
    assert (bad / "out.txt").read_text().splitlines() == CONCISE
    assert sorted(p.name for p in bad.iterdir()) == ["bad.py", "out.json", "out.txt"]  # no temporary left


@pytest.mark.parametrize("target", ["missing/out.txt", "bad.py/out.txt", "adir"])
def test_unwritable_output_file_is_one_line_and_exit_2(bad, target):
    (bad / "adir").mkdir()
    before = sorted(p.name for p in bad.rglob("*"))
    result = check("--no-cache", "--output-file", target, "bad.py")
    assert result.returncode == 2 and result.stdout == ""
    error_lines = [line for line in result.stderr.splitlines() if "output-file" in line.lower()]
    assert len(error_lines) == 1 and target in error_lines[0], result.stderr
    assert sorted(p.name for p in bad.rglob("*")) == before
    assert (bad / "bad.py").read_text() == BAD


def test_output_file_does_not_take_a_diff(bad):
    result = check("--diff", "--output-file", "out.txt", "bad.py")
    assert result.returncode == 2 and "--output-file" in result.stderr
    assert not (bad / "out.txt").exists()


def test_statistics_honour_json_and_exit_status(bad):
    result = check("--no-cache", "--statistics", "--output-format", "json", "bad.py")
    assert result.returncode == 1
    assert json.loads(result.stdout) == [{"code": "JAX601", "name": "jax-numpy-as-np", "count": 1},
                                         {"code": "JAX602", "name": "deprecated-api", "count": 1}]
    (bad / "bad.py").write_text("x = 1\n")
    clean = check("--no-cache", "--statistics", "--output-format", "json", "bad.py")
    assert clean.returncode == 0 and json.loads(clean.stdout) == []


def test_json_lines_and_gitlab_from_the_command_line(bad):
    as_json = json.loads(check("--no-cache", "--output-format", "json", "bad.py").stdout)
    lines = check("--no-cache", "--output-format", "json-lines", "bad.py")
    assert lines.returncode == 1 and lines.stderr == ""
    assert [json.loads(line) for line in lines.stdout.splitlines()] == as_json
    gitlab = check("--no-cache", "--output-format", "gitlab", "bad.py")
    assert gitlab.returncode == 1
    assert [(i["check_name"], i["location"]) for i in json.loads(gitlab.stdout)] == [
        ("JAX601", {"path": "bad.py", "lines": {"begin": 2}}), ("JAX602", {"path": "bad.py", "lines": {"begin": 6}})]


#: the whole messages, which a JUnit failure's text gives below the concise line
MESSAGES = [
    "`jax.numpy` imported as `np`: readers and tools take `np` for NumPy, whose arrays are mutable and eager; "
    "import it as `import jax.numpy as jnp`",
    "`jax.tree_map` is deprecated in JAX 0.4.26 and removed in 0.6.0; use `jax.tree.map`, the same API under its "
    "new name",
]


def junit_case(concise: str, whole: str, name: str, line: int) -> str:
    message = concise.split(": ", 1)[1]
    code = message.split()[0]
    return (f'    <testcase name="{code} {name} (line {line}, column {concise.split(":")[2]})" classname="bad" '
            f'file="bad.py" line="{line}">\n'
            f'      <failure message="{message}" type="{code} {name} (warning)">{concise}\n{whole}</failure>\n'
            "    </testcase>\n")


JUNIT = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<testsuites name="jaxlint" tests="3" failures="2" errors="0">\n'
    '  <testsuite name="bad.py" tests="2" failures="2" errors="0" skipped="0">\n'
    + junit_case(CONCISE[0], MESSAGES[0], "jax-numpy-as-np", 2)
    + junit_case(CONCISE[1], MESSAGES[1], "deprecated-api", 6) +
    "  </testsuite>\n"
    '  <testsuite name="clean.py" tests="1" failures="0" errors="0" skipped="0">\n'
    '    <testcase name="no findings" classname="clean" file="clean.py" />\n'
    "  </testsuite>\n"
    "</testsuites>\n"
)


def test_junit_from_the_command_line_lists_every_file_checked(bad):
    import xml.etree.ElementTree as ET

    (bad / "clean.py").write_text("import jax\n")
    result = check("--no-cache", "--output-format", "junit", "bad.py", "clean.py")
    assert result.returncode == 1 and result.stderr == ""
    assert result.stdout == JUNIT
    root = ET.fromstring(result.stdout)
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert set(suites) == {"bad.py", "clean.py"}
    assert [case.find("failure").text for case in suites["bad.py"].findall("testcase")] == [
        f"{line}\n{whole}" for line, whole in zip(CONCISE, MESSAGES)]
    (passed,) = suites["clean.py"].findall("testcase")
    assert passed.find("failure") is None
    assert check("--no-cache", "--output-format", "junit", "clean.py").returncode == 0


def test_sarif_from_the_command_line_describes_the_rules_and_their_fixes(bad):
    log = json.loads(check("--no-cache", "--output-format", "sarif", "bad.py").stdout)
    (run,) = log["runs"]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"JAX601", "JAX602"}
    assert rules["JAX601"]["help"]["markdown"].startswith("# JAX601 jax-numpy-as-np")
    assert rules["JAX601"]["helpUri"].startswith("https://")
    changes = [result["fixes"][0]["artifactChanges"][0] for result in run["results"]]
    assert [change["artifactLocation"]["uri"] for change in changes] == ["bad.py", "bad.py"]
    # the replacements, applied to the file, give what --fix writes
    lines = BAD.splitlines(keepends=True)
    edits = [(r["deletedRegion"], r["insertedContent"]["text"]) for change in changes for r in change["replacements"]]
    assert len(edits) == 3
    for region, text in sorted(edits, key=lambda e: (e[0]["startLine"], e[0]["startColumn"]), reverse=True):
        assert region["startLine"] == region["endLine"]
        line = lines[region["startLine"] - 1]
        lines[region["startLine"] - 1] = line[:region["startColumn"] - 1] + text + line[region["endColumn"] - 1:]
    assert check("--no-cache", "--fix", "bad.py").returncode == 0
    assert "".join(lines) == (bad / "bad.py").read_text()
