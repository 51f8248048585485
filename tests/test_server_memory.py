"""What the language server keeps between saves: the project state of the current session, never
the sessions a save made stale (measured in-process on `BufferLinter`, which holds the server's
project state; memory as tracemalloc counts it, not time)."""
from __future__ import annotations

import gc
import tracemalloc
import weakref
from concurrent.futures import ThreadPoolExecutor

import pytest

from jaxlint.frontends import runner
from jaxlint.frontends.editor import BufferLinter

#: modules in an import chain (the module edited is imported, through the chain, by all of them:
#: every save analyses them again) and modules beside it
CHAIN, BESIDE = 20, 180
SAVES = 20


def project(root):
    package = root / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for index in range(CHAIN):
        imported = f"from pkg.m{index - 1} import f{index - 1}\n" if index else ""
        (package / f"m{index}.py").write_text(
            f"import jax\n{imported}\n\ndef f{index}(x):\n    if x > 0:\n        return x\n    return -x\n\n\n"
            f"@jax.jit\ndef g{index}(x):\n    return f{index}(x)\n")
    for index in range(BESIDE):
        (package / f"other{index}.py").write_text(f"import jax.numpy as jnp\n\n\ndef h{index}(x):\n    return jnp.abs(x)\n")
    return package


@pytest.fixture
def default_collector():
    """The cycle collector at CPython's default rate, as the server runs it (conftest slows it)."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def live_blocks() -> int:
    """Memory blocks allocated since tracing started and not freed (a table that grows once,
    interned strings', is one block, a project's trees are thousands). No collection is forced:
    what the server holds includes the garbage it leaves for a collection that may never come."""
    return len(tracemalloc.take_snapshot().traces)


def test_memory_stays_flat_over_saves_without_an_index(tmp_path, default_collector):
    package = project(tmp_path)
    edited = str(package / "m0.py")
    text = (package / "m0.py").read_text()
    linter = BufferLinter(str(tmp_path))
    worker = ThreadPoolExecutor(1)  # the server checks on a thread of its own

    def on_worker(function, *args):
        return worker.submit(function, *args).result()

    on_worker(linter.lint, str(package / "other0.py"), (package / "other0.py").read_text())  # imports done
    on_worker(linter.forget_disk)
    gc.collect()
    tracemalloc.start()
    try:
        before = live_blocks()
        retained = []
        for _ in range(SAVES):
            on_worker(linter.forget_disk)  # what a save does, before the saved file is checked again
            found = on_worker(linter.lint, edited, text)
            assert [f.code for f in found.findings] == ["JAX201"]  # the chain traces f0
            retained.append(live_blocks() - before)
    finally:
        tracemalloc.stop()
        worker.shutdown()
    assert max(retained) <= 1.5 * retained[0], retained


def test_a_save_releases_the_sessions_made_before_it(tmp_path, default_collector):
    package = project(tmp_path)
    linter = BufferLinter(str(tmp_path))
    for _ in range(2):
        linter.lint(str(package / "m0.py"), (package / "m0.py").read_text())
        sessions = [weakref.ref(session) for session in runner._SESSIONS.values()]
        assert sessions
        linter.forget_disk()
        gc.collect()
        assert [ref() for ref in sessions] == [None] * len(sessions)
