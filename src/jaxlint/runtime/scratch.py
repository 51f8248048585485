"""Scratch directories of runtime mode, and the copy of the checked tree the worker imports from.

Each module checked at runtime gets one scratch directory, named `jaxlint-runtime-<pid>-*` in the
temporary directory. It holds a copy of the module's source tree (so code that writes next to its
own `__file__`, or changes into its directory and writes there, writes into the copy) and, for
each worker run, the plan, the events, the captured output and the working directory.

Who removes it: the launcher when the module is done; the worker's keeper when jaxlint died
meanwhile (it is killed by a signal, however cancelled); and, should both have died, the next
runtime run, which removes the scratch directories whose owner is gone. The owner holds a lock on
a file inside for as long as it lives (where `fcntl` exists; the pid in the name elsewhere).
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections import deque
from dataclasses import dataclass, field

from .processes import alive

PREFIX = "jaxlint-runtime-"
_OWNED = re.compile(re.escape(PREFIX) + r"(\d+)-")
_LOCK = "owner.lock"

#: The copy of the tree is bounded: what is left out is imported from the tree itself.
MAX_COPY_BYTES = 32 * 1024 * 1024
MAX_COPY_FILES = 5000
#: A file larger than this is not copied unless it is code (Python source, an extension module).
MAX_DATA_FILE_BYTES = 4 * 1024 * 1024
#: Directory entries looked at, copied or not: a tree under a home directory must not be walked to its end.
MAX_ENTRIES = 20000
_CODE_SUFFIXES = (".py", ".pyi", ".so", ".pyd")
#: Directories never copied: version control and tool state, caches, dependencies.
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})


class Scratch:
    """A scratch directory this process owns until `remove()`."""

    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
        self._lock = _hold_lock(self.path)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def _hold_lock(directory: str) -> int | None:
    try:
        import fcntl
    except ImportError:
        return None
    descriptor = os.open(os.path.join(directory, _LOCK), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return descriptor


def _owner_gone(path: str, pid: int) -> bool:
    try:
        import fcntl
    except ImportError:
        return not alive(pid)
    try:
        descriptor = os.open(os.path.join(path, _LOCK), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        # Being created (the lock comes right after the directory) or being removed: a directory
        # this old without a lock was left half-made.
        return not alive(pid)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: its owner is running
    finally:
        os.close(descriptor)
    return True


def remove_stale(directory: str | None = None) -> int:
    """Remove this user's scratch directories whose owner is gone; how many were removed."""
    directory = directory or tempfile.gettempdir()
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    uid = os.getuid() if hasattr(os, "getuid") else None
    for entry in entries:
        match = _OWNED.match(entry.name)
        if not match or int(match.group(1)) == os.getpid():
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or (uid is not None and info.st_uid != uid):
            continue
        if _owner_gone(entry.path, int(match.group(1))):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += 1
    return removed


# -- the copy of the tree -------------------------------------------------------------------------
@dataclass
class TreeCopy:
    """`source` (a real directory of the user's tree) copied to `target`, within the budget."""

    source: str
    target: str
    files: int = 0
    bytes: int = 0
    complete: bool = True  # False when the budget left something out
    copied: set[str] = field(default_factory=set, repr=False)  # real paths in the tree
    _entries: int = field(default=0, repr=False)

    def ensure(self, paths: list[str]) -> None:
        """Copy these files too (whatever the budget) unless they are copied already."""
        for path in paths:
            if self.inside(path) and path not in self.copied:
                _copy_file(self, path, forced=True)

    def inside(self, path: str) -> bool:
        return path == self.source or path.startswith(self.source.rstrip(os.sep) + os.sep)

    def to_copy(self, path: str) -> str:
        """Where `path` (a real path in the tree) is in the copy; other paths stay as they are."""
        if not self.inside(path):
            return path
        if path == self.source:
            return self.target
        return os.path.join(self.target, os.path.relpath(path, self.source))

    def to_original(self, text: str) -> str:
        """`text` (evidence from the worker) with paths into the copy turned back into the tree's."""
        return text.replace(self.target.rstrip(os.sep) + os.sep, self.source.rstrip(os.sep) + os.sep)


def copy_tree(source: str, target: str, first: list[str], walk_from: list[str]) -> TreeCopy:
    """Copy the regular files of `source` to `target`: the files `first` (the module and what its
    import needs: copied whatever their size), then the directories `walk_from` and at last
    `source` itself, breadth first (files near the module before deeper ones), until the budget
    is spent. Hidden directories, caches, dependencies and virtual environments are left out;
    special files (FIFOs, devices) are never opened for reading.
    """
    tree = TreeCopy(os.path.realpath(source), target)
    os.makedirs(target, exist_ok=True)
    tree.ensure(first)
    walked: set[str] = set()
    for start in [*walk_from, tree.source]:
        start = os.path.realpath(start)
        if tree.inside(start) and tree.complete:
            _walk(tree, start, walked)
    return tree


def _walk(tree: TreeCopy, start: str, walked: set[str]) -> None:
    queue = deque([(start, tree.to_copy(start))])
    while queue:
        directory, copy = queue.popleft()
        real = os.path.realpath(directory)
        if real in walked:
            continue
        walked.add(real)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            tree._entries += 1
            if tree._entries > MAX_ENTRIES:
                tree.complete = False
                return
            try:
                is_dir = entry.is_dir()  # through symlinks: a linked package is copied as a directory
            except OSError:
                continue
            if is_dir:
                if not _skipped(entry):
                    queue.append((entry.path, os.path.join(copy, entry.name)))
                continue
            path = os.path.join(real, entry.name)
            if path in tree.copied:
                continue
            if not _copy_file(tree, path, os.path.join(copy, entry.name)):
                return


def _skipped(entry: os.DirEntry) -> bool:
    if entry.name.startswith(".") or entry.name in _SKIPPED_DIRS:
        return True
    return os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))  # a virtual environment


def _copy_file(tree: TreeCopy, path: str, destination: str | None = None, forced: bool = False) -> bool:
    """Copy one file if it is regular and fits; False once the budget is spent."""
    if not forced and (tree.files >= MAX_COPY_FILES or tree.bytes >= MAX_COPY_BYTES):
        tree.complete = False
        return False
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is then seen not to be regular).
        source = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return True
    try:
        info = os.fstat(source)
        if not stat.S_ISREG(info.st_mode):
            return True
        size = info.st_size
        if not forced:
            if size > MAX_DATA_FILE_BYTES and not path.endswith(_CODE_SUFFIXES):
                tree.complete = False
                return True
            if tree.bytes + size > MAX_COPY_BYTES:
                tree.complete = False
                return True
        destination = destination or tree.to_copy(path)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        os.set_blocking(source, True)
        with os.fdopen(source, "rb", closefd=False) as reader, open(destination, "wb") as writer:
            shutil.copyfileobj(reader, writer, 1024 * 1024)
        os.chmod(destination, stat.S_IMODE(info.st_mode) | stat.S_IRUSR)
    except OSError:
        return True
    finally:
        os.close(source)
    tree.copied.add(path)
    tree.files += 1
    tree.bytes += size
    return True
