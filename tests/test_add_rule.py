"""scripts/add_rule.py: a new rule is its module, its catalogue entry and its fixture. Run into a
copy of the repository, the script's three files are all the registry, the catalogue, the command
line and the catalogue's own tests need to take the rule in: a list of rules kept by hand anywhere
they read would make these tests fail."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxlint.catalogue.rule_docs import read_entry

from conftest import ROOT
from test_catalogue import unfinished

CODE, NAME = "JAX799", "example-new-rule"


def _load_script():
    spec = importlib.util.spec_from_file_location("add_rule", ROOT / "scripts" / "add_rule.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


add_rule = _load_script()


def copy_tree(destination: Path, parts=("src", "rules", "tests", "docs", "scripts", "pyproject.toml")) -> Path:
    skip = shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc")
    for part in parts:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, destination / part, ignore=skip)
        else:
            shutil.copy2(source, destination / part)
    return destination


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_python(root: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """Python in `root`, importing the jaxlint of the copy (not this checkout's)."""
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "NO_COLOR": "1"}
    env.pop("CI", None)
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A copy of the repository with the new rule added, for the tests that run it in a process of
    its own (system tests)."""
    root = copy_tree(tmp_path_factory.mktemp("repository"))
    assert add_rule.main([CODE, NAME, "--severity", "info", "--root", str(root)]) == 0
    return root


@pytest.fixture
def small_tree(tmp_path) -> Path:
    """What the script reads and writes: the catalogue, the rules package and the fixtures."""
    return copy_tree(tmp_path, parts=("rules", "src/jaxlint/rules", "tests/fixtures"))


@pytest.fixture
def added(small_tree) -> Path:
    assert add_rule.main([CODE, NAME, "--severity", "info", "--root", str(small_tree)]) == 0
    return small_tree


def test_the_three_files_are_written(added):
    module = added / "src" / "jaxlint" / "rules" / "example_new_rule.py"
    entry = added / "rules" / f"{CODE}-{NAME}.toml"
    fixture = added / "tests" / "fixtures" / f"{CODE}_example_new_rule.py"
    compile(module.read_text(encoding="utf-8"), str(module), "exec")
    assert f'code = "{CODE}"' in module.read_text(encoding="utf-8")
    doc = read_entry(entry)
    assert (doc.code, doc.name, doc.severity.value, doc.runtime.check) == (CODE, NAME, "info", "static")
    # the loader takes the skeleton's text; the catalogue's test names what is left to write
    assert unfinished(doc) == ["summary", "why", "bad", "good", "fix", "references"]
    assert f"# expect: {CODE}" in fixture.read_text(encoding="utf-8")


LOADERS = f"""
import json
import jaxlint
from jaxlint.catalogue.rule_docs import catalogue_codes, load_catalogue, rule_entries
from jaxlint.engine.checker import enabled_rules
from jaxlint.engine.files import check_file
from jaxlint.engine.registry import all_rules, known_codes
from jaxlint.model.settings import Settings

rule = all_rules()["{CODE}"]
print(json.dumps({{
    "package": jaxlint.__file__,
    "class": rule.__name__,
    "doc": [rule.doc.name, rule.doc.severity.value, str(rule.doc.path)],
    "catalogue": "{CODE}" in load_catalogue() and "{CODE}" in rule_entries(),
    "codes": "{CODE}" in catalogue_codes() and "{CODE}" in known_codes(),
    "enabled": "{CODE}" in enabled_rules(Settings(), "model.py"),
    "fixture": [f.code for f in check_file("tests/fixtures/{CODE}_example_new_rule.py", Settings()).findings],
}}))
"""


@pytest.fixture
def loaders_reading(monkeypatch):
    """This process's registry and catalogue, pointed at another tree's rules package and catalogue
    until the test ends (their memos cleared before and after)."""
    from jaxlint import rules as rules_package
    from jaxlint.catalogue import rule_docs
    from jaxlint.engine import registry

    registry.all_rules()  # the real rule modules are imported before the path changes, never from the copy
    known = set(sys.modules)

    def point_at(root: Path) -> None:
        monkeypatch.setattr(rules_package, "__path__", [str(root / "src" / "jaxlint" / "rules")])
        monkeypatch.setattr(rule_docs, "catalogue_dir", lambda: root / "rules")
        rule_docs.load_catalogue.cache_clear()
        registry.all_rules.cache_clear()

    yield point_at
    monkeypatch.undo()
    for name in set(sys.modules) - known:
        if name.startswith("jaxlint.rules."):
            del sys.modules[name]
    rule_docs.load_catalogue.cache_clear()
    registry.all_rules.cache_clear()
    registry.all_rules()  # each rule class gets its own entry back as `doc`


def test_the_loaders_take_the_rule_in_with_no_other_edit(added, loaders_reading):
    """The quick form of the test below, in this process."""
    from jaxlint.catalogue.rule_docs import catalogue_codes, load_catalogue, rule_entries
    from jaxlint.engine.checker import check_source, enabled_rules
    from jaxlint.engine.registry import all_rules, known_codes
    from jaxlint.model.settings import Settings

    loaders_reading(added)
    rule = all_rules()[CODE]
    assert rule.__name__ == "ExampleNewRule" and rule.doc is load_catalogue()[CODE]
    assert (rule.doc.name, rule.doc.path) == (NAME, added / "rules" / f"{CODE}-{NAME}.toml")
    assert CODE in rule_entries() and CODE in catalogue_codes() and CODE in known_codes()
    enabled = enabled_rules(Settings(), "model.py")
    assert CODE in enabled
    fixture = (added / "tests" / "fixtures" / f"{CODE}_example_new_rule.py").read_text(encoding="utf-8")
    assert check_source(fixture, "model.py", Settings(), enabled) == []  # it runs, and reports nothing yet


@pytest.mark.system  # the copy's jaxlint, imported by a process of its own
def test_the_registry_and_the_catalogue_find_the_rule_with_no_other_edit(tree):
    result = run_python(tree, "-c", LOADERS)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert Path(found["package"]).is_relative_to(tree)
    assert found["class"] == "ExampleNewRule"
    assert found["doc"] == [NAME, "info", str(tree / "rules" / f"{CODE}-{NAME}.toml")]
    assert found["catalogue"] and found["codes"] and found["enabled"]
    assert found["fixture"] == []  # it runs, and reports nothing until it is written


@pytest.mark.system
def test_the_command_line_lists_and_documents_the_rule(tree):
    listed = run_python(tree, "-m", "jaxlint", "rules")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[:3] for line in listed.stdout.splitlines() if line.startswith(CODE)] == [[CODE, NAME, "info"]]
    page = run_python(tree, "-m", "jaxlint", "rule", CODE)
    assert page.returncode == 0 and page.stdout.startswith(f"# {CODE} {NAME}")


@pytest.mark.system  # pytest on the copy
def test_the_catalogues_own_tests_take_the_rule_in(tree):
    """What is left is to write the rule and its texts: the catalogue's tests that a list kept by
    hand would break pass once the docs are generated, and only the placeholder test fails."""
    generated = run_python(tree, "-c", "import sys; from pathlib import Path; sys.path.insert(0, 'scripts'); "
                                       "import generate_docs; generate_docs.write_rule_pages(Path.cwd())")
    assert generated.returncode == 0, generated.stderr
    assert (tree / "docs" / "rules" / f"{CODE}-{NAME}.md").is_file()
    placeholder = f"tests/test_catalogue.py::test_no_entry_keeps_the_placeholder_text_of_a_new_rule[{CODE}]"
    result = run_python(tree, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_catalogue.py",
                        "tests/test_fixtures.py::test_every_rule_has_fixture_positives_and_negatives",
                        "--deselect", placeholder)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    placeholder_run = run_python(tree, "-m", "pytest", "-q", "-p", "no:cacheprovider", placeholder)
    assert placeholder_run.returncode == 1, placeholder_run.stdout[-2000:]


@pytest.mark.parametrize("code, name, message", [
    ("JAX101", "fresh-name", "JAX101 is taken"),
    ("JAX798", "prng-key-reuse", "the name prng-key-reuse is taken"),
    ("JAX7", "fresh-name", "is not a rule code"),
    ("JAX798", "Fresh_Name", "is not a rule name"),
])
def test_a_code_or_name_in_use_or_malformed_is_refused(small_tree, capsys, code, name, message):
    before = files_under(small_tree)
    assert add_rule.main([code, name, "--root", str(small_tree)]) == 1
    assert message in capsys.readouterr().err
    assert files_under(small_tree) == before


def test_a_code_declared_by_a_rule_without_an_entry_is_refused(small_tree, capsys):
    draft = small_tree / "src" / "jaxlint" / "rules" / "draft.py"
    draft.write_text('class Draft(Rule):\n    code = "JAX798"\n', encoding="utf-8")
    before = files_under(small_tree)
    assert add_rule.main(["JAX798", "fresh-name", "--root", str(small_tree)]) == 1
    error = capsys.readouterr().err
    assert "JAX798 is taken" in error and "draft.py" in error
    assert files_under(small_tree) == before


def test_an_existing_file_is_not_overwritten(small_tree, capsys):
    fixture = small_tree / "tests" / "fixtures" / "JAX798_fresh_name.py"
    fixture.write_text("# written by hand\n", encoding="utf-8")
    before = files_under(small_tree)
    assert add_rule.main(["JAX798", "fresh-name", "--root", str(small_tree)]) == 1
    assert "would overwrite" in capsys.readouterr().err
    assert files_under(small_tree) == before


def test_a_bad_severity_is_refused(small_tree, capsys):
    assert add_rule.main(["JAX798", "fresh-name", "--severity", "fatal", "--root", str(small_tree)]) == 1
    assert "severity must be one of" in capsys.readouterr().err
