"""What a project-wide run costs beyond checking its files alone: the collector's passes over the
modules a session keeps, and the work a warm run still does."""
from __future__ import annotations

import gc
from pathlib import Path

import pytest

from jaxlint.engine.checker import check_source, enabled_rules
from jaxlint.api import lint_file
from jaxlint.engine.project_check import ProjectSession
from jaxlint.frontends import runner
from jaxlint.model.settings import Settings
from jaxlint.project.layout import default_roots

from test_projects import PROJECTS, expected_findings

SRC_LAYOUT = PROJECTS / "src_layout"


@pytest.fixture(autouse=True)
def _nothing_frozen():
    from jaxlint.frontends import runner

    runner._drop_sessions()  # sessions other tests left (the flake8 plugin keeps its own)
    assert gc.get_freeze_count() == 0


def _session() -> tuple[ProjectSession, list[str]]:
    files = sorted(str(p) for p in (SRC_LAYOUT / "src").rglob("*.py"))
    return ProjectSession(Settings(), default_roots(str(SRC_LAYOUT), files), files), files


def _findings(session: ProjectSession, files: list[str]) -> set:
    found = set()
    for path in session.walk_order(files):
        source = Path(path).read_text(encoding="utf-8")
        for f in check_source(source, path, session.settings, enabled_rules(session.settings, path), project=session):
            found.add((Path(path).relative_to(SRC_LAYOUT).as_posix(), None, f.start.line, f.code))
    return found


def test_a_session_keeps_its_modules_from_the_collector_until_it_is_closed():
    session, files = _session()
    session.settle(files)
    assert gc.get_freeze_count() > 0  # the trees and analyses settling made are not walked again
    assert _findings(session, files) == expected_findings(SRC_LAYOUT)
    session.close()
    assert gc.get_freeze_count() == 0
    session.close()  # twice: nothing more to give back
    assert gc.get_freeze_count() == 0


def test_what_the_program_froze_stays_frozen():
    marker = [object()]
    gc.freeze()
    try:
        session, files = _session()
        session.settle(files)
        session.close()
        assert gc.get_freeze_count() > 0
        assert not any(o is marker for o in gc.get_objects())  # frozen objects are not listed
    finally:
        gc.unfreeze()
    assert any(o is marker for o in gc.get_objects())


def test_a_new_run_gives_back_what_the_last_run_froze(monkeypatch):
    from jaxlint.frontends import runner
    from jaxlint.frontends.discovery import discover

    monkeypatch.chdir(SRC_LAYOUT)
    settings = runner.resolve_settings(runner.RunOptions(paths=["."]))
    files, _ = discover(["."], exclude=settings.exclude, root=settings.root)
    runner.project_session(runner.project_plan(settings, ["."], files), settings, tuple(files))
    assert gc.get_freeze_count() > 0
    runner._drop_sessions()  # what `run` does first
    assert gc.get_freeze_count() == 0 and not runner._SESSIONS


def test_a_warm_run_over_an_import_cycle_analyses_nothing(tmp_path, monkeypatch):
    """Modules that import one another are settled from the index like any other: a second run
    takes every file's findings from the cache, the same as the first run's."""
    import shutil

    from jaxlint.frontends import runner
    from jaxlint.frontends.discovery import discover

    project = tmp_path / "cycle"
    shutil.copytree(PROJECTS / "cycle", project)
    monkeypatch.chdir(project)
    cold = runner.run(runner.RunOptions(paths=["."]))
    assert cold.findings
    settings = runner.resolve_settings(runner.RunOptions(paths=["."]))
    files, _ = discover(["."], exclude=settings.exclude, root=settings.root)
    runner._drop_sessions()
    session = runner.project_session(runner.project_plan(settings, ["."], files), settings, tuple(files),
                                     settled=False, keep_index=True)
    assert all(session.context_key(path) is not None for path in files)
    assert not [unit.module.name for unit in session.project._units.values() if unit.loaded]
    warm = runner.run(runner.RunOptions(paths=["."]))
    assert [(f.path, f.start, f.message, f.trace) for f in warm.findings] == \
           [(f.path, f.start, f.message, f.trace) for f in cold.findings]


def _cycle_project_run_once(tmp_path, monkeypatch):
    """The cycle project copied and checked as a whole (its index written), then one of its files
    with its settings and no session left: (the whole run, the file, its settings)."""
    import shutil

    from jaxlint.frontends import runner

    project = tmp_path / "cycle"
    shutil.copytree(PROJECTS / "cycle", project)
    monkeypatch.chdir(project)
    whole = runner.run(runner.RunOptions(paths=["."]))
    one = "cyc/model.py"
    settings = runner.resolve_settings(runner.RunOptions(paths=[one]))
    runner._drop_sessions()
    return whole, one, settings


def test_one_file_of_an_import_cycle_with_a_warm_index_is_analysed_alone(tmp_path, monkeypatch):
    """What the other modules of its cycle give it comes from the index: no module of the project
    is loaded (the check parses the file itself), and its findings are those of the whole run."""
    whole, one, settings = _cycle_project_run_once(tmp_path, monkeypatch)
    session = runner.project_session(runner.project_plan(settings, [one], [one]), settings, (one,))
    findings = lint_file(one, settings, project=session).findings
    assert findings and [(f.start, f.message, f.trace) for f in findings] == \
           [(f.start, f.message, f.trace) for f in whole.findings if f.path.endswith("model.py")]
    assert not [unit.module.name for unit in session.project._units.values() if unit.loaded]


def test_a_cycle_member_analysed_before_the_replay_gets_the_seeds_replayed(tmp_path, monkeypatch):
    """A module of the cycle whose analysis a question had already built (with no seeds yet) is
    given what the index says it receives before it is checked."""
    whole, one, settings = _cycle_project_run_once(tmp_path, monkeypatch)
    session = runner.project_session(runner.project_plan(settings, [one], [one]), settings, (one,), settled=False)
    module = session.layout.module_of(one)
    assert session.project._traced_of(module) is not None  # built before any seed is known
    session.settle([one])
    findings = lint_file(one, settings, project=session).findings
    assert findings and [(f.start, f.message, f.trace) for f in findings] == \
           [(f.start, f.message, f.trace) for f in whole.findings if f.path.endswith("model.py")]
