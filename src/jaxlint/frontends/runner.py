"""One run over many files: configuration, discovery, the cache, parallel workers, fixes written.

A run whose files all come from the cache imports no part of the analysis (libcst, the engine, the
rules): the cache is consulted here, with the files' bytes read by `reading`, before any file is
handed to a worker, and the analysis is imported only where a file must be analysed.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Callable

from ..catalogue.rule_docs import catalogue_codes
from ..model.finding import Finding
from ..model.result import FileResult
from ..model.settings import Settings
from ..reading import read_regular, size_limit
from .config import ConfigError, load_settings, with_overrides

#: Below this many files, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 16


@dataclass
class RunOptions:
    paths: list[str]
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    fix: bool = False
    diff: bool = False
    jobs: int = 1
    use_cache: bool = True
    progress: bool = False
    #: `--config PATH`: this configuration file instead of the one found from the first path
    config: str | None = None
    #: `--isolated`: no configuration file at all
    isolated: bool = False
    extend_exclude: list[str] = field(default_factory=list)
    #: `--add-noqa`: write `# noqa: CODES` on every line with findings instead of reporting them
    add_noqa: bool = False
    #: `--unsafe-fixes`: `--fix` and `--diff` apply unsafe fixes too
    unsafe_fixes: bool = False


@dataclass
class RunOutcome:
    results: list[FileResult] = field(default_factory=list)
    #: one-line messages for stderr (paths that do not exist, unreadable trees, refused fixes)
    problems: list[str] = field(default_factory=list)
    fatal: bool = False
    config_error: bool = False
    #: with --diff: one patch per fixed file, bytes in the file's own encoding
    diffs: list[bytes] = field(default_factory=list)
    fixed: int = 0
    #: with --fix or --diff: the findings fixed, counted by code, for each file fixed
    fixed_codes: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    #: the project the files were checked in, its settings and files (see `project`)
    checked_in: "tuple[ProjectPlan, Settings, tuple[str, ...]] | None" = None
    #: with --fix of a buffer read from stdin: the buffer to print, fixed or as it came
    fixed_output: bytes | None = None
    #: the project session the run already holds (a buffer from stdin is checked in one)
    session: object | None = None

    @property
    def findings(self) -> list[Finding]:
        found = [f for result in self.results for f in result.findings]
        return sorted(found, key=lambda f: f.sort_key)

    @property
    def project(self):
        """The project the files were checked in (`engine.project_check.ProjectSession`), if any:
        made when asked (runtime mode asks), so that a run answered by the cache loads no analysis."""
        if self.session is not None:
            return self.session
        if self.checked_in is None:
            return None
        plan, settings, files = self.checked_in
        return project_session(plan, settings, files, settled=False)


def lint_file(path: str, settings: Settings, **options) -> FileResult:
    """`api.lint_file`, imported when a file is first analysed."""
    from ..api import lint_file as lint

    return lint(path, settings, **options)


def read_bytes(path: str) -> bytes | Finding:
    """`api.read_bytes`: the bytes of a file, or the JAX000 finding that says why it has none."""
    from ..api import read_bytes as read

    return read(path)


def resolve_settings(options: RunOptions, config_start: str | None = None) -> Settings:
    """The settings of a run. `config_start`: where the search for the configuration file starts
    (a buffer's file name, which need not exist), instead of the first path."""
    from .config import installed_jax_version, load_settings_file

    # the catalogue's codes are the rules' and JAX000 (tests/test_catalogue.py holds the registry to it)
    known = catalogue_codes()
    if options.isolated:
        settings = Settings(target_jax_version=installed_jax_version())
    elif options.config is not None:
        settings = load_settings_file(options.config, known)
    elif config_start is not None:
        settings = load_settings(config_start, known)
    else:
        settings = load_settings(options.paths[0] if os.path.exists(options.paths[0]) else ".", known)
    return with_overrides(settings, known, select=options.select, ignore=options.ignore,
                          extend_select=options.extend_select, extend_exclude=options.extend_exclude,
                          unsafe_fixes=options.unsafe_fixes)


def run(options: RunOptions) -> RunOutcome:
    from .discovery import discover

    outcome = RunOutcome()
    try:
        settings = resolve_settings(options)
    except ConfigError as exc:
        outcome.problems.append(f"error: {exc}")
        outcome.config_error = outcome.fatal = True
        return outcome
    files, problems = discover(options.paths, exclude=settings.exclude, root=settings.root)
    for problem in problems:
        outcome.problems.append(f"{problem.path}: {problem.message}")
        outcome.fatal = outcome.fatal or problem.fatal
    fixing = options.fix or options.diff
    _drop_sessions()  # files may have changed since an earlier run in this process
    plan = project_plan(settings, options.paths, files)
    cache = None
    if options.use_cache and not fixing:
        from .cache import FindingCache

        cache = FindingCache(settings.root, settings.fingerprint())
    check = functools.partial(_check_one, settings=settings, fixing=fixing, cache=cache, plan=plan,
                              reported=tuple(files), progress=options.progress)
    progress = _Progress(len(files)) if options.progress and len(files) >= PARALLEL_THRESHOLD else None
    jobs = options.jobs if len(files) >= PARALLEL_THRESHOLD else 1
    if plan is not None:
        outcome.results = (_check_project_in_state if cache is not None else _check_project)(
            files, plan, settings, cache, check, progress, jobs)
        outcome.checked_in = (plan, settings, tuple(files))
    elif cache is not None:
        outcome.results = _cache_first(files, lambda path: _stored(path, cache),
                                       lambda paths: _check_all(paths, check, jobs, progress), progress)
    else:
        outcome.results = _check_all(files, check, jobs, progress)
    if progress:
        progress.done()
    if fixing:
        _write_or_show_fixes(outcome, show=options.diff)
    elif options.add_noqa:
        _add_noqa_comments(outcome)
    for result in outcome.results:
        if result.not_analysed:  # valid Python: a note, which changes no exit status
            outcome.problems.append(f"{result.path}: not analysed: {result.not_analysed}")
        if result.internal_error:
            outcome.problems.append(f"{result.path}: internal error: {result.internal_error}")
            outcome.fatal = True
    return outcome


def _cache_first(files: list[str], stored: Callable[[str], FileResult | None],
                 check: Callable[[list[str]], list[FileResult]], progress: _Progress | None) -> list[FileResult]:
    """Results in the order of `files`: what the cache holds for each (`stored`), read in this
    process, and `check` of the others (only they import the analysis)."""
    results: list[FileResult | None] = [None] * len(files)
    missing = []
    for index, path in enumerate(files):
        results[index] = stored(path)
        if results[index] is None:
            missing.append(index)
        elif progress:
            progress.step()
    if missing:
        for index, result in zip(missing, check([files[i] for i in missing])):
            results[index] = result
    return [r for r in results if r is not None]


def _stored(path: str, cache, context: str = "") -> FileResult | None:
    """The findings the cache holds for the file's text as it is now (and `context`), or None;
    never reads more than `reading` does (a file that cannot be read is analysed, to say why)."""
    try:
        data = read_regular(path, size_limit(path))
    except OSError:
        return None
    found = cache.get(cache.key(path, data, context))
    return FileResult(path, [f.with_path(path) for f in found]) if found is not None else None


def _check_all(files: list[str], check, jobs: int, progress: _Progress | None) -> list[FileResult]:
    """Results in the order of `files`: in worker processes (pool.py), so that a file that crashes
    the checker loses only itself, or in this process where a worker cannot be forked cheaply."""
    from .pool import check_in_workers, start_method
    from .stopping import raise_if_stopped

    jobs = max(1, min(jobs, len(files)))
    results: list[FileResult | None] = [None] * len(files)

    def collect(index: int, result: FileResult) -> None:
        results[index] = result
        if progress:
            progress.step()

    method = start_method(jobs)
    if method is None:
        for index, path in enumerate(files):
            raise_if_stopped()
            collect(index, check(path))
        finish = getattr(check, "finish", None)
        if finish is not None:
            finish()
    else:
        check_in_workers(files, check, jobs, method, collect)
    return [result for result in results if result is not None]


def _check_project_in_state(files: list[str], plan: "ProjectPlan", settings: Settings, cache, check,
                            progress: "_Progress | None", jobs: int) -> list[FileResult]:
    """The files of a project with the cache: while every module is as it was when their contexts
    were recorded (`cache.ProjectState`), their findings come from the cache under those contexts;
    the others are checked by `_check_project`, and their contexts recorded."""
    from .cache import ProjectState, project_index_salt

    modules = {os.path.abspath(m) for m in plan.modules}  # found under the roots, which are resolved
    if not all(os.path.abspath(path) in modules or os.path.realpath(path) in modules for path in files):
        # a file given outside the project's walk takes part without being one of its modules
        return _check_project(files, plan, settings, cache, check, progress, jobs)
    state = ProjectState(settings.root, plan.roots, project_index_salt(settings), plan.modules)

    def stored(path: str) -> FileResult | None:
        context = state.context(path)
        return _stored(path, cache, context) if context is not None else None

    def check_others(paths: list[str]) -> list[FileResult]:
        # the files given by the state are not settled again: a worker settles only these
        results = _check_project(paths, plan, settings, cache, functools.partial(check, reported=tuple(paths)),
                                 progress, jobs)
        for result in results:
            if result.cache_context is not None:
                state.record(result.path, result.cache_context)
        state.save()
        return results

    return _cache_first(files, stored, check_others, progress)


def _check_project(files: list[str], plan: "ProjectPlan", settings: Settings, cache, check,
                   progress: "_Progress | None", jobs: int) -> list[FileResult]:
    """The files of a project: those whose findings the cache holds for their text and context (what
    the project index says the modules they import and their importers give them) come from it; the
    others are analysed together, importers first, in one worker that keeps their analysis."""
    session = project_session(plan, settings, tuple(files), settled=False, keep_index=cache is not None)
    results: list[FileResult | None] = [None] * len(files)
    missing = []
    for index, path in enumerate(files):
        cached = _cached(path, cache, session) if cache is not None else None
        if cached is not None:
            results[index] = cached
            if progress:
                progress.step()
        else:
            missing.append(path)
    if missing:
        position = {path: index for index, path in enumerate(files)}
        ordered = session.walk_order(missing)
        if jobs == 1:
            # one worker settles them all at once and checks them importers first, so that a
            # module's analysis is still whole while its importers are checked
            check = functools.partial(check, reported=tuple(ordered))
        # several: each worker settles the files it is given as they come (modules that several
        # workers need are analysed by each; modules with nothing in common are checked in parallel)
        for path, result in zip(ordered, _check_all(ordered, _ProjectCheck(check, plan, settings), jobs, progress)):
            results[position[path]] = result
    else:
        session.save()  # with files to check, the workers that check them keep what they learnt
    return [r for r in results if r is not None]


class _ProjectCheck:
    """Checks one file of a project; in the end, keeps what the process learnt in the index."""

    def __init__(self, check, plan: "ProjectPlan", settings: Settings) -> None:
        self.check, self.plan, self.settings = check, plan, settings

    def __call__(self, path: str) -> FileResult:
        return self.check(path)

    def finish(self) -> None:
        session = _SESSIONS.get((self.plan, self.settings.fingerprint()))
        if session is not None:
            session.save()


def _cached(path: str, cache, session) -> FileResult | None:
    data = read_bytes(path)
    if isinstance(data, Finding):
        return None
    context = session.context_key(path)
    if context is None:
        return None
    found = cache.get_entry(cache.key(path, data, context))
    # the findings also depend on what the file's analysis asked other modules: still the same?
    if found is None or not isinstance(found[1], list) or not session.still_true(found[1]):
        return None
    return FileResult(path, [f.with_path(path) for f in found[0]], cache_context=context)


def _check_one(path: str, settings: Settings, fixing: bool, cache, plan: "ProjectPlan | None" = None,
               reported: tuple[str, ...] = (), progress: bool = False) -> FileResult:
    """`progress`: show the project analysis on the terminal's stderr."""
    data = read_bytes(path)
    try:
        if isinstance(data, Finding):
            return lint_file(path, settings)
        if plan is not None:
            session = project_session(plan, settings, reported or (path,), keep_index=cache is not None,
                                      progress=progress)
            result = lint_file(path, settings, fix=fixing, data=data, project=session)
            context = session.context_key(path) if cache is not None else None
            if context is not None and result.internal_error is None and result.not_analysed is None:
                cache.put(cache.key(path, data, context), result.findings, session.asked(path))
                result.cache_context = context
            return result
        if cache is not None:  # the run found no findings for it in the cache (`_cache_first`)
            key = cache.key(path, data)
            result = lint_file(path, settings, data=data)
            if result.internal_error is None and result.not_analysed is None:
                cache.put(key, result.findings)
            return result
        return lint_file(path, settings, fix=fixing, data=data)
    except Exception as exc:  # a bug in a rule must not stop the other files
        return FileResult(path, internal_error=f"{type(exc).__name__}: {exc} (please report this)")


def check_data(path: str, data: bytes, settings: Settings, fixing: bool, project=None) -> FileResult:
    """The result for the bytes `data` checked as the file `path` (a buffer that need not be on
    disk); a bug in a rule is this file's internal error, not an exception."""
    try:
        return lint_file(path, settings, fix=fixing, data=data, project=project)
    except Exception as exc:
        return FileResult(path, internal_error=f"{type(exc).__name__}: {exc} (please report this)")


# -- projects -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProjectPlan:
    """The project a run's files belong to: its source roots and its modules."""

    roots: tuple[str, ...]
    modules: tuple[str, ...]


def project_plan(settings: Settings, paths: list[str], files: list[str],
                 modules_under=None) -> ProjectPlan | None:
    """The project of this run, or None when its files cannot import one another (one file alone,
    or nothing under a source root). `modules_under(roots, settings)`: the modules under the roots
    (default: walked now; the flake8 plugin keeps them for all the files it is given)."""
    from ..project.layout import default_roots

    config_dir = os.path.dirname(settings.config_path) if settings.config_path else None
    roots = tuple(default_roots(config_dir, paths, settings.src))
    if not roots:
        return None
    modules = (modules_under or project_modules)(roots, settings)
    if not modules or (len(modules) == 1 and len(files) == 1 and _same_file(modules[0], files[0])):
        return None
    return ProjectPlan(roots, modules)


def _same_file(first: str, second: str) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:  # a buffer's name with no file behind it
        return False


def project_modules(roots: tuple[str, ...], settings: Settings) -> tuple[str, ...]:
    """The Python files and notebooks under a project's source roots (`exclude` and `.gitignore`
    apply, as for the files checked)."""
    from .discovery import discover

    modules, _ = discover(list(roots), exclude=settings.exclude, root=settings.root)
    return tuple(m for m in modules if m.endswith((".py", ".ipynb")))


_SESSIONS: dict[tuple[ProjectPlan, str], object] = {}


def forget_project_sessions() -> None:
    """The files on disk changed: a project is read again when next asked for."""
    _SESSIONS.clear()


def project_session(plan: ProjectPlan | None, settings: Settings, reported: tuple[str, ...], settled: bool = True,
                    keep_index: bool = False, progress: bool = False):
    """The project session of this process for `plan` (made on first use), settled for the files
    `reported` (named as given) when first asked: a worker checks the project's files one after
    another with one analysis, the flake8 plugin one file after another. The project index is
    read if there is one, and written back only with `keep_index` (a run that uses the cache)."""
    if plan is None:
        return None
    key = (plan, settings.fingerprint())
    session = _SESSIONS.get(key)
    if session is None:
        from ..engine.project_check import ProjectSession

        from ..project.index import ProjectIndex
        from .cache import cache_marker, project_index_path, project_index_salt

        _drop_sessions()
        index = ProjectIndex(project_index_path(settings.root, plan.roots), project_index_salt(settings),
                             writable=keep_index, marker=cache_marker(settings.root))
        session = _SESSIONS[key] = ProjectSession(settings, plan.roots, plan.modules, index)
    if settled:
        if progress:
            from .progress import ModulesProgress

            session.project.progress = ModulesProgress()
        try:
            session.settle(reported)
        finally:
            session.project.progress = None
    return session


def _drop_sessions() -> None:
    for session in _SESSIONS.values():
        session.close()  # type: ignore[attr-defined]
    _SESSIONS.clear()


def _add_noqa_comments(outcome: RunOutcome) -> None:
    """`--add-noqa`: each file's lines with findings get `# noqa: CODES`, written like a fix."""
    from .add_noqa import annotate
    from .fix_writer import FixWriter, NotWritten

    writer = FixWriter()
    for result in outcome.results:
        if not result.findings or result.internal_error or result.not_analysed or result.original_text is None:
            continue
        if result.path.endswith(".ipynb"):
            outcome.problems.append(f"{result.path}: --add-noqa leaves notebooks as they are")
            continue
        annotated = annotate(result.original_text, result.findings)
        if annotated is None:
            outcome.problems.append(f"{result.path}: no noqa comments added: they would change the code")
            continue
        for line in annotated.refused:
            outcome.problems.append(f"{result.path}:{line}: no noqa comment added: the line continues "
                                    "in a string or after a backslash")
        if annotated.added == 0:
            continue
        data = read_bytes(result.path)
        if isinstance(data, Finding):
            outcome.problems.append(f"{result.path}: {data.message}")
            continue
        result.fixed_text, result.original_bytes, result.fixed_count = annotated.text, data, annotated.added
        done = writer.write(result)
        if isinstance(done, NotWritten):
            outcome.problems.append(f"{result.path}: {done.message}")
            outcome.fatal = outcome.fatal or done.error
        else:
            outcome.fixed += done


def _write_or_show_fixes(outcome: RunOutcome, show: bool) -> None:
    """Write the fixed files (`show`: collect their patches instead). A result's findings become
    those of its fixed text only once that text is on disk."""
    from .fix_writer import FixWriter, NotWritten, PatchMaker

    writer, patches = FixWriter(), PatchMaker()
    for result in outcome.results:
        if result.fix_refused:
            outcome.problems.append(f"{result.path}: {result.fix_refused}")
        if result.fixed_text is None:
            continue
        done = patches.patch(result) if show else writer.write(result)
        if isinstance(done, NotWritten):
            outcome.problems.append(f"{result.path}: {done.message}")
            outcome.fatal = outcome.fatal or done.error
        elif show:
            if done:
                outcome.diffs.append(done)
                outcome.fixed += result.fixed_count
                outcome.fixed_codes.append((result.path, _fixed_codes(result)))
        else:
            outcome.fixed += done
            outcome.fixed_codes.append((result.path, _fixed_codes(result)))
            result.findings = result.fixed_findings or []


def _fixed_codes(result: FileResult) -> dict[str, int]:
    """The findings a fixed text no longer has, by code (a fix can also end a finding of another
    rule, or bring one: what is counted is what went away)."""
    from collections import Counter

    before = Counter(f.code for f in result.findings)
    after = Counter(f.code for f in result.fixed_findings or [])
    return dict(before - after)


class _Progress:
    """`checked n/N files` on a terminal's stderr (progress.py)."""

    def __init__(self, total: int) -> None:
        from .progress import ProgressLine

        self.total = total
        self.count = 0
        self.line = ProgressLine("checked", "files")

    def step(self) -> None:
        self.count += 1
        self.line.show(self.count, self.total)

    def done(self) -> None:
        self.line.clear()
