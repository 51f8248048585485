"""Process bookkeeping for runtime mode: dying with the parent, and killing a whole process tree.

User code may start processes of its own, and some of them leave the process group (`setsid`,
a daemon's double fork). A killed process group does not reach those, so the worker's keeper
(see keeper.py) makes itself a *child subreaper* on Linux: every orphan below it is reparented to
it instead of to init, and the tree under it can be walked in `/proc` and killed to the last
process. Elsewhere, the process group is what can be killed.

Nothing here imports JAX or the user's code.
"""
from __future__ import annotations

import os
import signal
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_PROC = "/proc"


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(signum: int) -> bool:
    """Have the kernel send `signum` to this process when its parent dies (Linux only).

    The caller must still compare `os.getppid()` with the parent it expects: the parent may have
    died before this call.
    """
    return _prctl(_PR_SET_PDEATHSIG, int(signum))


def become_subreaper() -> bool:
    """Orphans below this process are reparented to it rather than to init (Linux only)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive all the same
    return True


def _parents() -> dict[int, int] | None:
    """pid -> parent pid of every live (not zombie) process, or None without a readable /proc."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return None
    parents = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # gone meanwhile
        # `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so split after the last `)`
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) < 2 or fields[0] in (b"Z", b"X"):
            continue  # a zombie cannot be killed (it is dead) and has no children left
        parents[int(name)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int] | None:
    """Every live process below `root`, parents before children; None where /proc is missing."""
    parents = _parents()
    if parents is None:
        return None
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    frontier = [root]
    while frontier:
        below = [child for pid in frontier for child in children.get(pid, ())]
        found.extend(below)
        frontier = below
    return found


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def kill_tree(root: int, *, include_root: bool = True, rounds: int = 50) -> None:
    """SIGKILL every process below `root` (and `root` itself unless told not to).

    Each process is stopped before anything is killed: a stopped process cannot fork, and while
    `root` (a subreaper, or simply still alive) holds the tree, children of a killed process would
    otherwise be reparented out of sight. Walks repeat until one finds nothing new (at most
    `rounds`: a fork bomb loses what it forked after the last walk). Without /proc,
    the process group of `root` is killed instead.
    """
    stopped: set[int] = set()
    if include_root:
        _signal(root, signal.SIGSTOP)
        stopped.add(root)
    for _ in range(rounds):
        found = descendants(root)
        if found is None:
            break
        new = [pid for pid in found if pid not in stopped]
        if not new:
            break
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        stopped.update(new)
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    if include_root:
        kill_group(root)


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid` (the worker's session, where /proc is missing)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError, AttributeError):
        pass


def set_subreaper(on: bool) -> bool:
    """Make this process a child subreaper, or no longer one (Linux only)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1 if on else 0)


def _stat(pid: int) -> list[bytes] | None:
    """The fields of `/proc/PID/stat` after the command name: state, ppid, ..."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()


def adopted(known: set[int]) -> list[tuple[int, bool]]:
    """(pid, is a zombie) of this process's children that are not in `known`: as a subreaper,
    what the processes it started left behind when their own parents died."""
    me = os.getpid()
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit() or int(name) in known:
            continue
        fields = _stat(int(name))
        if fields and len(fields) > 1 and int(fields[1]) == me:
            found.append((int(name), fields[0] in (b"Z", b"X")))
    return found


def end_adopted(known: set[int], rounds: int = 20) -> int:
    """Kill and reap every process `adopted` returns, and what they started; the number ended."""
    ended = 0
    for _ in range(rounds):
        found = adopted(known)
        if not found:
            break
        for pid, zombie in found:
            if not zombie:
                kill_tree(pid)
                ended += 1
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    return ended
