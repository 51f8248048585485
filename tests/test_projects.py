"""Projects of several modules: a bug one module makes through another's function is found at the
line JAX fails on, with the chain of calls that explains it, whichever front end checks the file
and whichever files it is given.

The fixture projects under tests/projects/ carry `# expect: JAXnnn` comments (in notebook cells
too); each has a `jax_checks.py` that `test_jax_agrees_with_each_project` runs under JAX.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxlint.frontends.flake8_plugin import JaxlintChecker
from jaxlint.frontends.runner import RunOptions, run

from conftest import expectations, runtime_codes

PROJECTS = Path(__file__).parent / "projects"
NAMES = sorted(p.name for p in PROJECTS.iterdir() if (p / "pyproject.toml").is_file())
#: where the tracing of a finding made through another module comes from: (project, file, line) ->
#: the file of the outermost step of its chain
TRACED_FROM = {
    ("src_layout", "src/shapes/losses.py", 6): "src/shapes/train.py",
    ("src_layout", "src/shapes/model.py", 10): "src/shapes/train.py",
    ("src_layout", "src/shapes/model.py", 15): "src/shapes/train.py",
    ("flat_scripts", "scripts/helpers.py", 6): "scripts/run_sampler.py",
    ("flat_scripts", "scripts/helpers.py", 20): "scripts/run_sampler.py",
    ("notebook", "helpers.py", 6): "analysis.ipynb",
    ("cycle", "cyc/model.py", 7): "cyc/model.py",
    ("star_imports", "pkg/util.py", 5): "train.py",
}
#: rules whose findings JAX turns into an exception (JAX's key-reuse checker raises too)
RAISING = runtime_codes("raises", "key-reuse-checker")


def expected_findings(project: Path) -> set[tuple[str, int | None, int, str]]:
    """(file, notebook cell or None, line, code) from the `# expect:` comments of a project."""
    found = set()
    for path in sorted(project.rglob("*")):
        relative = path.relative_to(project).as_posix()
        if path.suffix == ".py":
            found |= {(relative, None, line, code) for line, code in expectations(path.read_text(encoding="utf-8"))}
        elif path.suffix == ".ipynb":
            cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
            for index, cell in enumerate(cells):
                found |= {(relative, index, line, code) for line, code in expectations("".join(cell["source"]))}
    return found


def check(paths: list[str], cwd: Path, monkeypatch) -> list:
    monkeypatch.chdir(cwd)
    outcome = run(RunOptions(paths=paths, use_cache=False))
    assert not outcome.fatal, outcome.problems
    return outcome.findings


#: project name -> the findings of `jaxlint check .` in it, run once for the tests that read them
_WHOLE: dict[str, list] = {}


def check_whole(name: str, monkeypatch) -> list:
    """`check(["."])` in one of the projects, shared by the tests here: every `run` starts afresh
    (it drops the project sessions earlier runs left), so one run gives what each would get."""
    if name not in _WHOLE:
        _WHOLE[name] = check(["."], PROJECTS / name, monkeypatch)
    return _WHOLE[name]


def as_set(findings) -> set[tuple[str, int | None, int, str]]:
    return {(Path(f.path).as_posix(), f.cell, f.start.line, f.code) for f in findings}


@pytest.mark.parametrize("name", NAMES)
def test_each_bug_is_reported_where_jax_fails_and_its_twin_is_not(name, monkeypatch):
    project = PROJECTS / name
    findings = check_whole(name, monkeypatch)
    assert as_set(findings) == expected_findings(project)
    for finding in findings:
        origin = TRACED_FROM.get((name, Path(finding.path).as_posix(), finding.start.line))
        if origin is None:  # no caller elsewhere: only lines of its own file (a key's first use)
            assert all(step.path == finding.path for step in finding.trace), finding
            continue
        assert finding.trace and finding.trace[0].path == origin, finding.trace
        assert "traced because" in finding.message
        last = finding.trace[-1]
        assert last.line >= 1 and last.message


@pytest.mark.parametrize("name", NAMES)
def test_one_changed_file_gets_the_findings_of_the_whole_project(name, monkeypatch):
    """What pre-commit (`jaxlint check FILE`), flake8 and an editor see: one file at a time."""
    project = PROJECTS / name
    whole = check_whole(name, monkeypatch)
    files = sorted({p.relative_to(project).as_posix() for p in project.rglob("*.py")}
                   | {p.relative_to(project).as_posix() for p in project.rglob("*.ipynb")})
    for relative in files:
        alone = check([relative], project, monkeypatch)
        mine = [f for f in whole if Path(f.path).as_posix() == relative]
        assert [(f.start, f.code, f.message, f.trace) for f in alone] == \
               [(f.start, f.code, f.message, f.trace) for f in mine], relative
        if relative.endswith(".py"):
            lines = (project / relative).read_text(encoding="utf-8").splitlines(keepends=True)
            from_flake8 = [(line, column + 1, text) for line, column, text, _ in
                           JaxlintChecker(None, relative, lines).run()]
            # flake8 orders a file's reports itself; the plugin hands them over as the rules made them
            assert sorted(from_flake8) == sorted((f.start.line, f.start.column, f"{f.code} {f.message}")
                                                 for f in mine), relative


@pytest.mark.system
def test_the_command_line_on_one_file_names_the_chain(tmp_path):
    """The pre-commit hook's entry, as a process: one file, the finding and its chain."""
    project = PROJECTS / "src_layout"
    result = subprocess.run([sys.executable, "-m", "jaxlint", "check", "--output-format", "json", "--no-cache",
                             "src/shapes/losses.py"], cwd=project, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")})
    assert result.returncode == 1, result.stderr
    (finding,) = json.loads(result.stdout)
    assert (finding["line"], finding["code"]) == (6, "JAX201")
    assert finding["trace"] == [{"path": "src/shapes/train.py", "line": 11,
                                 "message": "`train_step` calls it under `jax.jit`"}]
    assert "traced because `train_step` (src/shapes/train.py:11) calls it under `jax.jit`" in finding["message"]


def test_editing_a_helper_updates_the_module_that_imports_it(tmp_path, monkeypatch):
    """The result cache: a module's cached findings are not reused once a module it depends on
    changes."""
    project = tmp_path / "src_layout"
    shutil.copytree(PROJECTS / "src_layout", project)
    monkeypatch.chdir(project)
    first = run(RunOptions(paths=["src/shapes/train.py"]))
    assert (21, "JAX201") in {(f.start.line, f.code) for f in first.findings}
    again = run(RunOptions(paths=["src/shapes/train.py"]))
    assert [f.to_json() for f in again.findings] == [f.to_json() for f in first.findings]
    checks = project / "src/shapes/checks.py"
    checks.write_text(checks.read_text(encoding="utf-8").replace(
        "return jnp.isfinite(x).all()", "return x.ndim > 0"), encoding="utf-8")
    edited = run(RunOptions(paths=["src/shapes/train.py"]))
    assert (21, "JAX201") not in {(f.start.line, f.code) for f in edited.findings}
    assert (48, "JAX101") in {(f.start.line, f.code) for f in edited.findings}


def test_a_settings_default_changed_in_its_module_changes_the_loop_that_reads_it(tmp_path, monkeypatch):
    """A loop bound that is another module's dataclass default: the message names that module's
    line, and a run after the default is lowered below the threshold, on a warm index and cache,
    no longer reports it."""
    project = tmp_path / "src_layout"
    shutil.copytree(PROJECTS / "src_layout", project)
    monkeypatch.chdir(project)
    first = run(RunOptions(paths=["src/shapes/rollout.py"]))
    (finding,) = first.findings
    assert (finding.start.line, finding.code) == (12, "JAX205")
    assert "150 is the default of `RunSettings.rollout_steps` at src/shapes/settings.py:7" in finding.message
    settings = project / "src/shapes/settings.py"
    settings.write_text(settings.read_text(encoding="utf-8").replace("rollout_steps: int = 150",
                                                                     "rollout_steps: int = 15"), encoding="utf-8")
    assert run(RunOptions(paths=["src/shapes/rollout.py"])).findings == []


def test_a_warm_index_spares_the_modules_that_did_not_change(tmp_path, monkeypatch):
    """After a run over the project, a run over one changed file analyses that file alone: what
    its importers give it and what the modules it calls return come from the project index."""
    from jaxlint.api import lint_file
    from jaxlint.frontends import runner

    project = tmp_path / "src_layout"
    shutil.copytree(PROJECTS / "src_layout", project)
    monkeypatch.chdir(project)
    whole = run(RunOptions(paths=["."]))
    changed = "src/shapes/losses.py"
    with open(changed, "a", encoding="utf-8") as handle:
        handle.write("# edited\n")
    settings = runner.resolve_settings(RunOptions(paths=[changed]))
    runner._SESSIONS.clear()
    session = runner.project_session(runner.project_plan(settings, [changed], [changed]), settings, (changed,))
    findings = lint_file(changed, settings, project=session).findings
    assert [(f.start, f.message, f.trace) for f in findings] == \
           [(f.start, f.message, f.trace) for f in whole.findings if f.path.endswith("losses.py")]
    loaded = sorted(unit.module.name for unit in session.project._units.values() if unit.loaded)
    assert loaded == ["shapes.losses"]

    # a change in an importer is seen: its seeds are found again
    train = project / "src/shapes/train.py"
    train.write_text(train.read_text(encoding="utf-8").replace(
        "clipped_loss(batch", "smooth_loss(batch"), encoding="utf-8")
    assert run(RunOptions(paths=[changed])).findings == []


def test_a_file_outside_any_project_is_checked_alone(tmp_path, monkeypatch):
    (tmp_path / "alone.py").write_text(
        "import jax\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n", encoding="utf-8")
    findings = check(["alone.py"], tmp_path, monkeypatch)
    assert [(f.start.line, f.code, f.trace) for f in findings] == [(5, "JAX201", ())]


@pytest.mark.jax
@pytest.mark.parametrize("name", NAMES)
def test_jax_agrees_with_each_project(name, monkeypatch):
    """Every check raises the exception it names, at a line jaxlint reports with a rule of that
    family (the innermost such frame), and every reported error is raised by some check."""
    project = PROJECTS / name
    findings = as_set(check_whole(name, monkeypatch))
    reported = {(path, line) for path, cell, line, code in findings if code in RAISING and cell is None}
    runner = Path(__file__).parent / "project_checks_runner.py"
    result = subprocess.run([sys.executable, str(runner), str(project)], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert result.returncode == 0, result.stderr
    raised_at = set()
    for check_result in json.loads(result.stdout):
        expected = check_result["expected"]
        if expected is None:
            assert check_result["raised"] is None, check_result
            continue
        assert check_result["raised"] and expected in check_result["raised"], check_result
        frames = [tuple(frame) for frame in check_result["frames"]]
        hit = [frame for frame in frames if frame in reported]
        assert hit, f"{check_result['function']} raised at {frames}, none of them reported"
        raised_at.add(hit[-1])
    assert reported <= raised_at, f"reported but never raised: {sorted(reported - raised_at)}"


@pytest.mark.runtime
def test_runtime_mode_traces_a_function_its_caller_in_another_module_traces():
    """`clipped_loss` is plain Python alone; `train_step` in another module traces it under
    `jax.jit`: runtime mode must trace it too, and so confirms the finding."""
    project = PROJECTS / "src_layout"
    result = subprocess.run([sys.executable, "-m", "jaxlint", "check", "--runtime", "--no-cache", "--output-format",
                             "json", "src/shapes/losses.py"], cwd=project, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src"),
                                 "JAX_PLATFORMS": "cpu"})
    assert result.returncode == 1, result.stderr
    (finding,) = json.loads(result.stdout)
    assert finding["runtime"]["verdict"] == "confirmed", finding["runtime"]
    assert "TracerBoolConversionError" in finding["runtime"]["evidence"]


def test_several_workers_give_the_findings_of_one(tmp_path, monkeypatch):
    """With several jobs each worker settles the files it is given; the findings do not change,
    and the index the workers write in turn keeps what each learnt."""
    project = tmp_path / "src_layout"
    shutil.copytree(PROJECTS / "src_layout", project)
    for index in range(20):  # enough files for the worker pool
        (project / "src" / "shapes" / f"extra{index}.py").write_text(
            "import jax\n\nfrom .losses import clipped_loss\n\n\n@jax.jit\n"
            f"def step{index}(p, y):\n    return clipped_loss(p, y, 0.5)\n", encoding="utf-8")
    monkeypatch.chdir(project)
    serial = run(RunOptions(paths=["."], jobs=1, use_cache=False)).findings
    parallel = run(RunOptions(paths=["."], jobs=2)).findings
    assert [(f.path, f.start, f.message) for f in parallel] == [(f.path, f.start, f.message) for f in serial]
    cached = run(RunOptions(paths=["."], jobs=2)).findings
    assert [f.to_json() for f in cached] == [f.to_json() for f in parallel]
