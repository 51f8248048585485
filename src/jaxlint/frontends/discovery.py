"""Finding the files to lint: walking directories, honouring exclusions and ``.gitignore`` files.

Rules, in short:

* A file named on the command line is always linted, whatever its extension and even when a
  ``.gitignore`` ignores it; only the configured ``exclude`` patterns can drop it.
* Directories are walked recursively and yield ``*.py``, ``*.pyi`` and ``*.ipynb`` files.
* Directories with well-known tool/environment names (:data:`DEFAULT_EXCLUDED_DIRS`) are never
  entered while walking (naming one explicitly still walks it).
* ``exclude`` holds gitignore-style patterns relative to ``root`` (the directory of the
  configuration file); paths outside ``root`` are not matched against them.
* ``.gitignore`` files apply to the directory holding them and everything below; the ones in
  parent directories of a walked directory apply too, up to the enclosing git repository root
  (the nearest directory with a ``.git`` entry), plus that repository's ``.git/info/exclude``.
  Outside any repository, parents are consulted up to ``root`` only. A directory containing its
  own ``.git`` starts afresh: the outer repository's ignore files do not reach into it.
  A directory named explicitly but ignored by a parent's ``.gitignore`` is walked anyway, using
  only the ignore files inside it.
* Git is never run; hidden files and directories are walked like any other.
* Only regular files are read, within a size limit (``reading.size_limit``): a walked FIFO, socket or
  device (also one reached through a symlink) and a walked file over the limit are skipped with a
  non-fatal note; such a file named on the command line is a fatal problem. Neither is opened.
* An ignore line that git accepts but ``pathspec`` cannot compile (``!`` or ``\\`` alone) matches
  nothing, as in git.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from ..reading import read_regular, size_limit, unreadable_reason

if TYPE_CHECKING:
    import pathspec

LINTABLE_SUFFIXES = (".py", ".pyi", ".ipynb")

DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".jaxlint_cache",
        # Jupyter's autosaved copies of the notebooks beside them: the same findings twice
        ".ipynb_checkpoints",
        ".ipython",
        "build",
        "dist",
        "site-packages",
        ".eggs",
    }
)

MSG_MISSING = "no such file or directory"
MSG_LOOP = "symlink loop, not followed"
MSG_DUPLICATE = "symlink to a directory already walked, not followed"
#: the largest ignore file read
MAX_IGNORE_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class DiscoveryProblem:
    path: str
    message: str
    fatal: bool


def is_default_excluded_dir(name: str) -> bool:
    return name in DEFAULT_EXCLUDED_DIRS or name.endswith(".egg-info")


def is_lintable_name(name: str) -> bool:
    return name.endswith(LINTABLE_SUFFIXES)


# --------------------------------------------------------------------------- ignore rules


@dataclass(frozen=True)
class _Rule:
    """One gitignore line: its compiled pattern, whether it matches directories only."""

    pattern: object
    include: bool  # True: ignores; False: a ``!`` negation re-including what matched earlier
    dir_only: bool


@dataclass(frozen=True)
class _Level:
    """The rules of one ignore file, anchored at ``base`` (an absolute directory path)."""

    base: str
    rules: tuple[_Rule, ...]


def compile_patterns(lines: Iterable[str]) -> pathspec.GitIgnoreSpec:
    """The gitignore-style patterns of `lines`; a line pathspec cannot compile matches nothing,
    as git treats it (``!`` or ``\\`` alone, a pattern ending in an unescaped backslash)."""
    import pathspec  # only where there are patterns: a run over a tree without any starts sooner

    lines = list(lines)
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError):  # pathspec's pattern errors derive from ValueError
        return pathspec.GitIgnoreSpec.from_lines([line for line in lines if is_valid_pattern(line)])


def is_valid_pattern(line: str) -> bool:
    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except (ValueError, TypeError):
        return False
    return True


def _compile(lines: Iterable[str]) -> tuple[_Rule, ...]:
    lines = list(lines)
    if all(not line or line.startswith("#") for line in lines):
        return ()  # blank lines and comments (a fresh repository's .git/info/exclude)
    rules = []
    for pattern in compile_patterns(lines).patterns:
        if pattern.include is None:  # blank line or comment
            continue
        text = (getattr(pattern, "pattern", "") or "").rstrip()
        rules.append(_Rule(pattern, bool(pattern.include), text.endswith("/")))
    return tuple(rules)


def _level_verdict(level: _Level, path: str, is_dir: bool) -> bool | None:
    """True: ignored by this level; False: explicitly re-included; None: no rule matched."""
    if path == level.base:
        return None
    prefix = _prefix(level.base)
    if not path.startswith(prefix):
        return None
    rel = path[len(prefix):]
    if os.sep != "/":
        rel = rel.replace(os.sep, "/")
    for rule in reversed(level.rules):
        # Directories are tested as "name/" only against directory-only patterns, so that
        # "foo/**" ignores what is inside foo (negations can re-include) but not foo itself.
        candidate = rel + "/" if is_dir and rule.dir_only else rel
        if rule.pattern.match_file(candidate) is not None:
            return rule.include
    return None


def _ignored(levels: tuple[_Level, ...], path: str, is_dir: bool) -> bool:
    for level in reversed(levels):  # the deepest ignore file takes precedence
        verdict = _level_verdict(level, path, is_dir)
        if verdict is not None:
            return verdict
    return False


class _IgnoreFiles:
    """Reads each ignore file at most once per discovery run."""

    def __init__(self) -> None:
        self._cache: dict[str, _Level | None] = {}

    def level(self, file_path: str, base: str) -> _Level | None:
        if file_path in self._cache:
            return self._cache[file_path]
        level = None
        try:
            # a FIFO or a device named .gitignore must not block the walk or fill the memory
            text = read_regular(file_path, MAX_IGNORE_FILE_BYTES).decode("utf-8", errors="replace")
        except OSError:
            rules = ()
        else:
            rules = _compile(text.splitlines())
        if rules:
            level = _Level(base, rules)
        self._cache[file_path] = level
        return level

    def for_directory(self, directory: str) -> _Level | None:
        return self.level(os.path.join(directory, ".gitignore"), directory)

    def repo_exclude(self, repo: str) -> _Level | None:
        return self.level(os.path.join(repo, ".git", "info", "exclude"), repo)


def _prefix(directory: str) -> str:
    return directory if directory.endswith(os.sep) else directory + os.sep


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(_prefix(base))


def _upward_levels(start: str, root: str, files: _IgnoreFiles) -> tuple[_Level, ...]:
    """Ignore rules from the directories above ``start`` that reach down into it."""
    chain = []  # start's ancestors, nearest first
    top = None
    current = start
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            top = current
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        chain.append(parent)
        current = parent
    levels: list[_Level] = []
    if top is not None:
        if top == start:
            return ()  # start is a repository root itself; its own files are read on entry
        repo_exclude = files.repo_exclude(top)
        if repo_exclude is not None:
            levels.append(repo_exclude)
        directories = chain
    elif _under(start, root) and start != root:
        directories = [d for d in chain if _under(d, root)]
    else:
        directories = []
    for directory in reversed(directories):
        level = files.for_directory(directory)
        if level is not None:
            levels.append(level)
    return tuple(levels)


# --------------------------------------------------------------------------- discovery


class _Discovery:
    def __init__(self, exclude: Sequence[str], root: str, respect_gitignore: bool) -> None:
        self.cwd = os.getcwd()
        self.root = os.path.normpath(os.path.join(self.cwd, root))
        self.cwd_prefix = _prefix(self.cwd)
        self.root_prefix = _prefix(self.root)
        self.exclude = compile_patterns(exclude) if exclude else None
        # directories can only be pruned wholesale when no pattern re-includes something inside
        self.prune_excluded_dirs = not any(line.strip().startswith("!") for line in exclude)
        self.respect_gitignore = respect_gitignore
        self.ignore_files = _IgnoreFiles()
        self.files: set[str] = set()
        self.problems: list[DiscoveryProblem] = []
        self.visited: set[tuple[int, int]] = set()
        # symlinked directories, walked after every real directory so that files keep their
        # real-directory paths: (path, ignore levels of the parent, identities of the ancestors)
        self.deferred: list[tuple[str, tuple[_Level, ...], frozenset[tuple[int, int]]]] = []

    # -- helpers

    def display(self, path: str) -> str:
        if path == self.cwd:
            return "."
        if _under(path, self.cwd):
            return path[len(self.cwd_prefix):]
        return path

    def problem(self, path: str, message: str, fatal: bool = False) -> None:
        self.problems.append(DiscoveryProblem(self.display(path), message, fatal))

    def add_file(self, path: str, info: os.stat_result | None, explicit: bool) -> None:
        """List a file unless it is not a regular file or is too big (`info`: its status through
        symlinks; None when there is none, e.g. a broken symlink, which the reader reports)."""
        reason = None if info is None else unreadable_reason(info, size_limit(path))
        if reason is None:
            self.files.add(self.display(path))
        elif explicit:
            self.problem(path, f"{reason}, not checked", fatal=True)
        else:
            self.problem(path, f"{reason}, skipped")

    def excluded(self, path: str, is_dir: bool) -> bool:
        if self.exclude is None or path == self.root or not _under(path, self.root):
            return False
        if is_dir and not self.prune_excluded_dirs:
            return False
        rel = path[len(self.root_prefix):].replace(os.sep, "/")
        return self.exclude.match_file(rel + "/" if is_dir else rel)

    # -- entry points

    def add_explicit(self, given: str) -> None:
        path = os.path.normpath(os.path.join(self.cwd, given))
        if os.path.isdir(path):
            if self.excluded(path, is_dir=True):
                return
            levels: tuple[_Level, ...] = ()
            if self.respect_gitignore:
                levels = _upward_levels(path, self.root, self.ignore_files)
                if levels and _ignored(levels, path, is_dir=True):
                    levels = ()  # named explicitly: only the ignore files inside it apply
            try:
                identity = _identity(os.stat(path))
            except OSError as error:
                self.problem(path, _describe(error))
                return
            self.walk(path, levels, frozenset(), identity)
        elif os.path.lexists(path):
            if not self.excluded(path, is_dir=False):
                self.add_file(path, _status(path), explicit=True)
        else:
            self.problems.append(DiscoveryProblem(given, MSG_MISSING, True))

    def finish(self) -> None:
        while self.deferred:
            path, levels, ancestors = self.deferred.pop(0)
            try:
                identity = _identity(os.stat(path))
            except OSError as error:
                self.problem(path, _describe(error))
                continue
            if identity in ancestors:
                self.problem(path, MSG_LOOP)
            elif identity in self.visited:
                self.problem(path, MSG_DUPLICATE)
            else:
                self.walk(path, levels, ancestors, identity)

    # -- the walk

    def walk(
        self,
        top: str,
        levels: tuple[_Level, ...],
        ancestors: frozenset[tuple[int, int]],
        identity: tuple[int, int],
    ) -> None:
        stack = [(top, levels, ancestors, identity)]
        while stack:
            directory, levels, ancestors, identity = stack.pop()
            if identity in self.visited:
                continue  # reached again, e.g. named twice on the command line
            self.visited.add(identity)
            ancestors = ancestors | {identity}
            try:
                with os.scandir(directory) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError as error:
                self.problem(directory, _describe(error) + ", not walked")
                continue
            if self.respect_gitignore:
                if any(entry.name == ".git" for entry in entries):
                    # a repository root: outer ignore files stop here
                    levels = ()
                    if os.path.isdir(os.path.join(directory, ".git")):
                        repo_exclude = self.ignore_files.repo_exclude(directory)
                        if repo_exclude is not None:
                            levels = (repo_exclude,)
                if any(entry.name == ".gitignore" for entry in entries):
                    own = self.ignore_files.for_directory(directory)
                    if own is not None:
                        levels = levels + (own,)
            subdirectories = []
            for entry in entries:
                path = os.path.join(directory, entry.name)
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    if is_default_excluded_dir(entry.name):
                        continue
                    if self.respect_gitignore and _ignored(levels, path, is_dir=True):
                        continue
                    if self.excluded(path, is_dir=True):
                        continue
                    try:
                        is_link = entry.is_symlink()
                    except OSError:
                        is_link = False
                    if is_link:
                        self.deferred.append((path, levels, ancestors))
                        continue
                    try:
                        child = _identity(entry.stat())
                    except OSError as error:
                        self.problem(path, _describe(error) + ", not walked")
                        continue
                    subdirectories.append((path, levels, ancestors, child))
                    continue
                if not is_lintable_name(entry.name):
                    continue
                if self.respect_gitignore and _ignored(levels, path, is_dir=False):
                    continue
                if self.excluded(path, is_dir=False):
                    continue
                self.add_file(path, _entry_status(entry), explicit=False)
            stack.extend(reversed(subdirectories))


def _entry_status(entry: os.DirEntry) -> os.stat_result | None:
    try:
        return entry.stat()
    except OSError:
        return None


def _status(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _identity(stat: os.stat_result) -> tuple[int, int]:
    return (stat.st_dev, stat.st_ino)


def _describe(error: OSError) -> str:
    if isinstance(error, PermissionError):
        return "permission denied"
    return (error.strerror or str(error)).lower()


def discover(
    paths: Sequence[str],
    exclude: Sequence[str] = (),
    root: str | None = None,
    respect_gitignore: bool = True,
) -> tuple[list[str], list[DiscoveryProblem]]:
    """Return ``(files, problems)``.

    ``files`` is the sorted, de-duplicated list of files to lint, each relative to the current
    directory when it lies under it and absolute otherwise. Paths keep the names they were
    reached by: a file inside a symlinked directory is listed under the link, except that
    symlinked directories are followed only after every real directory has been walked, and a
    directory is walked once, so a tree reachable both directly and through a link is listed
    under its direct path.

    ``problems`` lists what could not be walked:

    * a path given in ``paths`` that does not exist: fatal, ``"no such file or directory"``;
      the other paths are still processed;
    * a directory symlink resolving to one of its own ancestors: ``"symlink loop, not
      followed"``; one resolving to a directory walked elsewhere: ``"symlink to a directory
      already walked, not followed"``; both non-fatal and reported once per link;
    * a directory that cannot be listed (permissions, for instance): non-fatal;
    * a walked file that is not a regular file (a FIFO, a socket, a device, also through a
      symlink) or is larger than its size limit: ``"..., skipped"``, non-fatal; the same for a
      path given in ``paths``: ``"..., not checked"``, fatal.

    A broken or self-referencing symlink with a lintable name is returned as a file, like any
    other: the reader reports that it cannot be read. An explicitly given broken symlink is
    treated the same way, not as a missing path.
    """
    finder = _Discovery(exclude, root if root is not None else ".", respect_gitignore)
    for given in paths:
        finder.add_explicit(given)
    finder.finish()
    return sorted(finder.files), finder.problems


def is_excluded(path: str, exclude: Sequence[str], root: str) -> bool:
    """Whether the configured exclusions leave out `path` (which need not exist: the name given
    to a buffer read from stdin or open in an editor), as they would leave it out of a run."""
    if not exclude:
        return False
    finder = _Discovery(exclude, root, respect_gitignore=False)
    return finder.excluded(os.path.normpath(os.path.join(finder.cwd, path)), is_dir=False)


__all__ = ["DEFAULT_EXCLUDED_DIRS", "DiscoveryProblem", "LINTABLE_SUFFIXES", "discover", "is_excluded"]
