"""One run over many files: configuration, discovery, the cache, parallel workers, fixes written."""
from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field

from ..model.settings import Settings
from .config import ConfigError, load_settings, with_overrides
from ..api import FileResult, lint_file, read_bytes
from .fix_writer import FixWriter, NotWritten, PatchMaker
from ..model.finding import Finding

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

    @property
    def findings(self) -> list[Finding]:
        found = [f for result in self.results for f in result.findings]
        return sorted(found, key=lambda f: f.sort_key)


def resolve_settings(options: RunOptions) -> Settings:
    from ..api import known_codes

    known = known_codes()
    settings = load_settings(options.paths[0] if os.path.exists(options.paths[0]) else ".", known)
    return with_overrides(settings, known, select=options.select, ignore=options.ignore,
                          extend_select=options.extend_select)


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
    cache = None
    if options.use_cache and not fixing:
        from .cache import FindingCache

        cache = FindingCache(settings.root, settings.fingerprint())
    check = functools.partial(_check_one, settings=settings, fixing=fixing, cache=cache)
    progress = _Progress(len(files)) if options.progress and len(files) >= PARALLEL_THRESHOLD else None
    outcome.results = _check_all(files, check, options.jobs if len(files) >= PARALLEL_THRESHOLD else 1, progress)
    if progress:
        progress.done()
    if fixing:
        _write_or_show_fixes(outcome, show=options.diff)
    for result in outcome.results:
        if result.not_analysed:  # valid Python: a note, which changes no exit status
            outcome.problems.append(f"{result.path}: not analysed: {result.not_analysed}")
        if result.internal_error:
            outcome.problems.append(f"{result.path}: internal error: {result.internal_error}")
            outcome.fatal = True
    return outcome


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
    else:
        check_in_workers(files, check, jobs, method, collect)
    return [result for result in results if result is not None]


def _check_one(path: str, settings: Settings, fixing: bool, cache) -> FileResult:
    data = read_bytes(path)
    try:
        if isinstance(data, Finding):
            return lint_file(path, settings)
        if cache is not None:
            key = cache.key(path, data)
            cached = cache.get(key)
            if cached is not None:
                return FileResult(path, [f.with_path(path) for f in cached])
            result = lint_file(path, settings, data=data)
            if result.internal_error is None and result.not_analysed is None:
                cache.put(key, result.findings)
            return result
        return lint_file(path, settings, fix=fixing, data=data)
    except Exception as exc:  # a bug in a rule must not stop the other files
        return FileResult(path, internal_error=f"{type(exc).__name__}: {exc} (please report this)")


def _write_or_show_fixes(outcome: RunOutcome, show: bool) -> None:
    """Write the fixed files (`show`: collect their patches instead). A result's findings become
    those of its fixed text only once that text is on disk."""
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
        else:
            outcome.fixed += done
            result.findings = result.fixed_findings or []


class _Progress:
    """`[n/N]` on a terminal's stderr, rewritten in place; never used for pipes or CI logs."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0

    def step(self) -> None:
        self.count += 1
        if self.count % 10 == 0 or self.count == self.total:
            sys.stderr.write(f"\rjaxlint: checked {self.count}/{self.total} files")
            sys.stderr.flush()

    def done(self) -> None:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
