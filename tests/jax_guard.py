"""Keeps the static tests static: a test that brings JAX in must be marked `jax` or `runtime`.

`pytest -m "not jax and not runtime"` is the static suite: the analyzer alone, no JAX import, no
runtime mode. Forgetting a marker must not go unnoticed, so this plugin (conftest.py re-exports
its hooks) checks three things:

* Each phase (setup, call, teardown) of an unmarked test is watched for *requests* to import JAX,
  not for JAX being in `sys.modules`: `builtins.__import__` and `importlib.import_module` are
  wrapped for the whole session (and `importlib.util.find_spec`: asking whether JAX is installed
  depends on JAX too), so `import jax.numpy`, `from jax import lax` or
  `pytest.importorskip("jax")`, in the test or in any code it calls, is seen even when an earlier
  test already loaded JAX. Run order and `-k` selections cannot hide a violation. A module whose
  top-level code is running when JAX is asked for (a fixture file, a helper test module, a
  package) is remembered as bringing JAX in, and asking for that module later counts as asking for
  JAX, even once it is cached in `sys.modules`. Requests made by JAX's own modules do not count:
  they only run when JAX is already in use. An unmarked phase that asked fails, whatever the
  test's own outcome, so a test that would `pytest.importorskip("jax")` fails instead of being
  quietly skipped.
* A test module that imports JAX at module level fails its unmarked tests: in the static run,
  collecting it would import JAX.
* When none of the selected tests carries either marker (the static run), the session fails if
  JAX was imported at all, at collection or otherwise: exact, and a backstop for the two above.

Modules whose top-level `pytestmark` names `jax` or `runtime` are not collected when the `-m`
expression deselects those markers, so their module-level JAX imports never run in the static
suite. (pytest collects a file named on the command line all the same; JAX imported by collecting
such a module is not held against the session.) Tests marked `jax` or `runtime` are skipped where
JAX is not installed. Not covered: JAX imported by a subprocess a static test starts.
"""
from __future__ import annotations

import ast
import builtins
import functools
import importlib
import importlib.util
import sys

import pytest

MARKERS = ("jax", "runtime")
JAX_PACKAGES = ("jax", "jaxlib")

_import = builtins.__import__
_import_module = importlib.import_module
_find_spec = importlib.util.find_spec


class _Watch:
    """Import requests that bring JAX in, noticed since the last reset."""

    def __init__(self):
        self.bringing_jax: set[str] = set()  # non-JAX modules whose top-level code imports JAX
        # those and their packages: `from package import module` asks for the package by name
        self.packages_of_bringing_jax: set[str] = set()
        self.requested: list[str] = []

    def brings_jax(self, name: str) -> bool:
        return name.partition(".")[0] in JAX_PACKAGES or name in self.bringing_jax

    def may_bring_jax(self, name: str) -> bool:
        """A cheap first test for an absolute name (every import statement passes here)."""
        return name.partition(".")[0] in JAX_PACKAGES or name in self.packages_of_bringing_jax

    def notice(self, names: list[str], frame) -> None:
        importer = frame.f_globals.get("__name__") or ""
        if importer.partition(".")[0] in JAX_PACKAGES:
            return
        asked = [name for name in names if self.brings_jax(name)]
        if not asked:
            return
        self.requested.append(f"{importer or '?'} imports {asked[0]}")
        # Every module whose top-level code is running now (the import chain that led here, however
        # indirect, e.g. through `pytest.importorskip`) brings JAX in whenever it is imported.
        while frame is not None:
            if frame.f_code.co_name == "<module>":
                module = frame.f_globals.get("__name__")
                if module and module != "__main__" and module.partition(".")[0] not in JAX_PACKAGES:
                    self.bringing_jax.add(module)
                    parts = module.split(".")
                    self.packages_of_bringing_jax.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
            frame = frame.f_back

    def take(self) -> list[str]:
        requested, self.requested = self.requested, []
        return requested


WATCH = _Watch()


def _absolute(name: str, importer: dict | None, level: int) -> str:
    if not level:
        return name
    try:
        return importlib.util.resolve_name("." * level + name, (importer or {}).get("__package__"))
    except (ImportError, ValueError):
        return name


def _watched_import(name, globals=None, locals=None, fromlist=(), level=0):
    # The common case first, inlined (`may_bring_jax` of an absolute name): libcst's native parser
    # imports its node classes by name for every node it builds, tens of thousands per file, and a
    # slower hook here was a fifth of every parse.
    if not level and name not in WATCH.packages_of_bringing_jax and name.partition(".")[0] not in JAX_PACKAGES:
        return _import(name, globals, locals, fromlist, level)
    absolute = _absolute(name, globals, level)
    if WATCH.may_bring_jax(absolute):
        names = [absolute, *(f"{absolute}.{item}" for item in fromlist or () if item != "*")]
        WATCH.notice(names, sys._getframe(1))
    return _import(name, globals, locals, fromlist, level)


def _watched_import_module(name, package=None):
    absolute = importlib.util.resolve_name(name, package) if name.startswith(".") else name
    WATCH.notice([absolute], sys._getframe(1))
    return _import_module(name, package)


def _watched_find_spec(name, package=None):
    """Asking whether JAX is installed is depending on JAX too (runtime mode refuses to start without it)."""
    absolute = importlib.util.resolve_name(name, package) if name.startswith(".") else name
    WATCH.notice([absolute], sys._getframe(1))
    return _find_spec(name, package)


def install() -> None:
    builtins.__import__ = _watched_import
    importlib.import_module = _watched_import_module
    importlib.util.find_spec = _watched_find_spec


def marked(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) is not None for name in MARKERS)


def module_markers(path) -> set[str]:
    """The marker names in a test module's top-level `pytestmark`, read without importing it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    return set(_markers_in(text))


@functools.lru_cache(maxsize=None)
def _markers_in(text: str) -> frozenset[str]:
    """`module_markers` of a module's text: asked for every test module by two collection hooks
    (this plugin's and conftest's), and again at the session's end, so each text is parsed once."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return frozenset()
    names = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "pytestmark" for target in statement.targets):
            for node in ast.walk(statement.value):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                        and node.value.attr == "mark":
                    names.add(node.attr)
    return frozenset(names)


def _deselected(config, markers: set[str]) -> bool:
    """Whether `-m` deselects every test carrying `markers`, whatever other markers it has."""
    expression = config.getoption("markexpr", default="")
    if not expression:
        return False
    try:
        from _pytest.mark.expression import Expression  # pytest's own `-m` parser

        compiled = Expression.compile(expression)
        return not any(compiled.evaluate(lambda name, /, **_: name in markers or others)
                       for others in (False, True))
    except Exception:  # noqa: BLE001 - an unknown pytest: collect, the session check still holds
        return False


def pytest_ignore_collect(collection_path, config):
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        markers = module_markers(collection_path) & set(MARKERS)
        if markers and _deselected(config, markers):
            return True
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    loaded_before = "jax" in sys.modules
    WATCH.take()
    yield
    WATCH.take()  # a module's own top-level requests are in WATCH.bringing_jax now
    if not loaded_before and "jax" in sys.modules and isinstance(collector, pytest.Module):
        collector.config.stash[_LOADED_JAX] = collector.path


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if marked(item):
        pytest.importorskip("jax")


def pytest_runtest_logstart(nodeid, location):
    WATCH.take()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    requested = WATCH.take()
    if marked(item):
        return
    module = getattr(item, "module", None)
    if call.when == "setup" and module is not None and WATCH.brings_jax(module.__name__):
        requested.insert(0, f"{module.__name__} imports JAX at module level")
    if requested:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} brings JAX in during {call.when} ({'; '.join(requested[:3])}) "
                           "but is not marked: mark it @pytest.mark.jax (or runtime), or keep JAX out of it.")


def pytest_collection_finish(session):
    session.config.stash[_STATIC_ONLY] = not any(marked(item) for item in session.items)


def pytest_sessionfinish(session, exitstatus):
    loader = session.config.stash.get(_LOADED_JAX, None)
    if loader is not None and module_markers(loader) & set(MARKERS):
        return  # a marked module named on the command line (not ignored then) was collected
    if session.config.stash.get(_STATIC_ONLY, False) and "jax" in sys.modules:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = ("the selected tests are all static (no jax/runtime marker) but JAX was imported "
                   f"(modules that bring it in: {sorted(WATCH.bringing_jax) or 'unknown'})")
        if reporter is not None:
            reporter.write_line(f"ERROR: {message}", red=True)
        else:
            sys.stderr.write(f"ERROR: {message}\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_STATIC_ONLY = pytest.StashKey[bool]()
_LOADED_JAX = pytest.StashKey[object]()  # the path of the test module whose collection imported JAX
