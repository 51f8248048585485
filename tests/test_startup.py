"""A run whose files all come from the cache decides from it alone: it imports none of the analysis
(libcst, the engine, the rules), so that it costs little more than the interpreter's start-up
(benchmarks/startup.py measures it). A project's files come from the cache while every module is
the file it was (`cache.ProjectState`); a change anywhere in the project is still seen."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import jaxlint
from jaxlint.frontends.cache import ProjectState
from jaxlint.frontends.runner import RunOptions, run

#: where the jaxlint this test imports comes from (a checkout's src/, or site-packages when it is
#: installed): the process must run the same files, or the cache (keyed on them) is not its own
SRC = Path(jaxlint.__file__).resolve().parents[1]
PROJECT = Path(__file__).parent / "projects" / "src_layout"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: modules that only the analysis needs
ANALYSIS = ("libcst", "jaxlint.engine", "jaxlint.api", "jaxlint.rules", "jaxlint.rulebase", "jaxlint.semantic",
            "jaxlint.dataflow", "jaxlint.jaxmodel", "jaxlint.project.analysis")
#: the command line, then the analysis modules it loaded, on stderr's last line
HARNESS = """
import runpy, sys
sys.argv = ["jaxlint", *sys.argv[1:]]
try:
    runpy.run_module("jaxlint", run_name="__main__", alter_sys=True)
finally:
    print("\\nloaded:", " ".join(sorted(m for m in sys.modules if m.startswith(ANALYSIS))), file=sys.stderr)
"""

BAD = "import jax\n\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n"


def jaxlint(*args: str, cwd: Path) -> tuple[int, str, list[str]]:
    """Exit status, stdout and the analysis modules loaded of one `jaxlint` process."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1"}
    env.pop("CI", None)
    code = f"ANALYSIS = {ANALYSIS!r}\n{HARNESS}"
    result = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                            env=env, timeout=120)
    last = result.stderr.rstrip("\n").rpartition("\n")[2]
    assert last.startswith("loaded:"), result.stderr
    return result.returncode, result.stdout, last.split()[1:]


@pytest.mark.system  # imports seen from a process of its own
def test_a_cached_run_of_a_file_alone_loads_no_analysis(tmp_path, monkeypatch):
    (tmp_path / "alone.py").write_text(BAD, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    first = run(RunOptions(paths=["alone.py"])).findings
    assert [f.code for f in first] == ["JAX201"]
    status, cached, loaded = jaxlint("check", "--output-format", "json", "alone.py", cwd=tmp_path)
    assert (status, loaded) == (1, [])
    assert json.loads(cached) == [f.to_json() for f in first]


def test_a_notebook_from_the_cache_keeps_the_cells_of_its_fixes(tmp_path, monkeypatch):
    shutil.copy(EXAMPLES / "regression.ipynb", tmp_path / "regression.ipynb")
    monkeypatch.chdir(tmp_path)
    first = run(RunOptions(paths=["regression.ipynb"])).findings
    assert any(edit.cell is not None for f in first if f.fix for edit in f.fix.edits)
    cached = run(RunOptions(paths=["regression.ipynb"])).findings
    assert [f.to_json() for f in cached] == [f.to_json() for f in first]


@pytest.mark.system  # imports seen from a process of its own
def test_the_harness_sees_the_analysis_loaded(tmp_path):
    status, _, loaded = jaxlint("rules", cwd=tmp_path)
    assert status == 0 and "jaxlint.engine.registry" in loaded and "libcst" in loaded


@pytest.mark.system  # imports seen from a process of its own
def test_a_cached_run_in_a_project_loads_no_analysis(tmp_path, monkeypatch):
    project = tmp_path / "src_layout"
    shutil.copytree(PROJECT, project)
    monkeypatch.chdir(project)
    whole = run(RunOptions(paths=["."]))
    assert not whole.fatal, whole.problems
    status, cached, loaded = jaxlint("check", "--output-format", "json", ".", cwd=project)
    assert (status, loaded) == (1, [])
    assert json.loads(cached) == [f.to_json() for f in whole.findings]
    # one file of the project, as the pre-commit hook gives it: its chain comes from the cache too
    status, one, loaded = jaxlint("check", "--output-format", "json", "src/shapes/losses.py", cwd=project)
    assert (status, loaded) == (1, [])
    assert json.loads(one) == [f.to_json() for f in whole.findings if f.path == "src/shapes/losses.py"]
    assert json.loads(one)[0]["trace"][0]["path"] == "src/shapes/train.py"


def test_a_module_added_to_the_project_changes_the_findings_of_a_cached_file(tmp_path, monkeypatch):
    """losses.py alone traces nothing; train.py, back in the project, calls it under `jax.jit`."""
    project = tmp_path / "src_layout"
    shutil.copytree(PROJECT, project)
    monkeypatch.chdir(project)
    train = project / "src/shapes/train.py"
    aside = tmp_path / "train.py"
    train.rename(aside)
    assert run(RunOptions(paths=["src/shapes/losses.py"])).findings == []
    assert run(RunOptions(paths=["src/shapes/losses.py"])).findings == []
    aside.rename(train)  # the same file, its times kept: only the list of modules changed
    assert [(f.start.line, f.code) for f in run(RunOptions(paths=["src/shapes/losses.py"])).findings] == [(6, "JAX201")]


def test_the_state_of_a_project_changes_with_any_module_even_with_its_size_and_time_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    modules = (str(tmp_path / "a.py"), str(tmp_path / "b.py"))
    for path in modules:
        Path(path).write_text("x = 1\n", encoding="utf-8")
    state = ProjectState(tmp_path, (str(tmp_path),), "salt", modules)
    state.record(modules[0], "context")
    state.save()
    assert ProjectState(tmp_path, (str(tmp_path),), "salt", modules).context(modules[0]) == "context"
    assert ProjectState(tmp_path, (str(tmp_path),), "other settings", modules).context(modules[0]) is None
    before = os.stat(modules[1])
    time.sleep(0.05)  # past the file system clock's tick: the change time moves
    Path(modules[1]).write_text("x = 2\n", encoding="utf-8")
    os.utime(modules[1], ns=(before.st_atime_ns, before.st_mtime_ns))
    assert ProjectState(tmp_path, (str(tmp_path),), "salt", modules).context(modules[0]) is None
    assert ProjectState(tmp_path, (str(tmp_path),), "salt", modules[:1]).context(modules[0]) is None


def agrees_with_importlib(name: str) -> str | None:
    from importlib import metadata

    from jaxlint.frontends.distributions import NotInstalled, distribution_version

    try:
        expected = metadata.version(name)
    except metadata.PackageNotFoundError:
        expected = None
    try:
        found = distribution_version(name)
    except NotInstalled:
        found = None
    assert found == expected, name
    return found


def test_the_version_of_a_distribution_is_the_one_importlib_metadata_gives(tmp_path, monkeypatch):
    for name in ("jax", "libcst", "click", "Click", "pytest", "no-such-distribution"):
        agrees_with_importlib(name)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path / "first"), str(tmp_path / "second")])
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    assert agrees_with_importlib("jax") is None
    for directory, version in (("second", "2.0.0"), ("first", "1.2.3")):  # the first on the path wins
        info = tmp_path / directory / f"Jax-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: jax\nVersion: {version}\n\nVersion: 9\n",
                                       encoding="utf-8")
    assert agrees_with_importlib("jax") == "1.2.3"
    # what the plain search leaves to importlib.metadata: two candidates in one directory, an egg-info
    (tmp_path / "first" / "jax-1.0.0.dist-info").mkdir()
    agrees_with_importlib("jax")
    shutil.rmtree(tmp_path / "first")
    (tmp_path / "first").mkdir()
    (tmp_path / "first" / "jax.egg-info").mkdir()
    (tmp_path / "first" / "jax.egg-info" / "PKG-INFO").write_text("Name: jax\nVersion: 0.3.0\n", encoding="utf-8")
    assert agrees_with_importlib("jax") == "0.3.0"
