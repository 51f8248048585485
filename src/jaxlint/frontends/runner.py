"""One run over many files: configuration, discovery, the cache, parallel workers, fixes written."""
from __future__ import annotations

import difflib
import os
import sys
import tempfile
from dataclasses import dataclass, field

from ..model.settings import Settings
from .config import ConfigError, load_settings, with_overrides
from ..api import FileResult, encode_like, lint_file, read_bytes
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
    diffs: list[str] = field(default_factory=list)
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
    tasks = [(path, settings, fixing, cache) for path in files]
    jobs = min(options.jobs, len(files))
    progress = _Progress(len(files)) if options.progress and len(files) >= PARALLEL_THRESHOLD else None
    if jobs > 1 and len(files) >= PARALLEL_THRESHOLD:
        import multiprocessing

        # Forking a process that has started JAX's threads can deadlock (jaxlint itself never
        # imports jax, but a host program embedding it may have).
        method = "forkserver" if "jax" in sys.modules else None
        with multiprocessing.get_context(method).Pool(jobs) as pool:
            for result in pool.imap(_check_one, tasks, chunksize=max(1, len(tasks) // (jobs * 8))):
                outcome.results.append(result)
                if progress:
                    progress.step()
    else:
        for task in tasks:
            outcome.results.append(_check_one(task))
            if progress:
                progress.step()
    if progress:
        progress.done()
    for result in outcome.results:
        if result.fix_refused:
            outcome.problems.append(f"{result.path}: {result.fix_refused}")
        if result.fixed_text is None:
            continue
        if options.diff:
            outcome.diffs.append(_diff(result.path, result.original_text or "", result.fixed_text))
            outcome.fixed += result.fixed_count
        elif options.fix:
            error = _write(result)
            if error:
                outcome.problems.append(f"{result.path}: fixes not written: {error}")
                outcome.fatal = True
            else:
                outcome.fixed += result.fixed_count
    for result in outcome.results:
        if result.not_analysed:  # valid Python: a note, which changes no exit status
            outcome.problems.append(f"{result.path}: not analysed: {result.not_analysed}")
        if result.internal_error:
            outcome.problems.append(f"{result.path}: internal error: {result.internal_error}")
            outcome.fatal = True
    return outcome


def _check_one(task) -> FileResult:
    path, settings, fixing, cache = task
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


def _write(result: FileResult) -> str | None:
    """Write the fixed text atomically, in the file's own encoding; the error message if that failed."""
    original = read_bytes(result.path)
    if isinstance(original, Finding):
        return original.message
    try:
        payload = encode_like(original, result.fixed_text or "", result.path)
        directory = os.path.dirname(os.path.abspath(result.path))
        handle, temp = tempfile.mkstemp(dir=directory, prefix=".jaxlint-", suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
        try:
            os.chmod(temp, os.stat(result.path).st_mode & 0o7777)
        except OSError:
            pass
        os.replace(temp, result.path)
    except (OSError, UnicodeEncodeError, LookupError, SyntaxError) as exc:
        return str(exc)
    return None


def _diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"a/{path}", tofile=f"b/{path}"))


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
