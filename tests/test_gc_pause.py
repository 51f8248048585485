"""check_source pauses Python's cycle collector for one file and always leaves it as it found it."""
import gc

import pytest

from jaxlint.model.settings import Settings
from jaxlint.engine.checker import check_source, enabled_rules

SOURCES = {
    "clean": "import jax\n\ndef f(x):\n    return jax.numpy.sum(x)\n",
    "findings": "import jax\n\n@jax.jit\ndef f(x):\n    print(x)\n    return x\n",
    "syntax error": "import jax\ndef f(:\n",
    "not jax": "x = 1\n",
}


@pytest.fixture
def restore_gc():
    was_enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    # CPython's default rate (the suite's conftest makes collections rarer): a collector left on
    # during an analysis runs within the few thousand objects a small check allocates
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*thresholds)
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.parametrize("enabled_before", [True, False])
def test_collector_state_is_restored(name: str, enabled_before: bool, restore_gc):
    settings = Settings()
    (gc.enable if enabled_before else gc.disable)()
    seen = []
    original = gc.callbacks[:]
    gc.callbacks.append(lambda phase, info: seen.append(phase))
    try:
        check_source(SOURCES[name], "t.py", settings, enabled_rules(settings, "t.py"))
    finally:
        gc.callbacks[:] = original
    assert gc.isenabled() is enabled_before
    if not enabled_before:
        assert not seen, "the collector ran although the program had turned it off"


def test_collector_is_off_during_the_analysis(monkeypatch, restore_gc):
    from jaxlint.engine import checker as engine

    states = []
    original = engine._walk

    def spy(*args, **kwargs):
        states.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(engine, "_walk", spy)
    gc.enable()
    settings = Settings()
    check_source(SOURCES["findings"], "t.py", settings, enabled_rules(settings, "t.py"))
    assert states == [False]
    assert gc.isenabled()
