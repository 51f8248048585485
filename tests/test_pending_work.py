"""The pending-work domain (`facts.pending_work`): the device queue of a path, its joins, and what
it costs — a file without a clock read never builds it; a scope with clock reads is run once."""
import textwrap

import pytest

from jaxlint.model.settings import Settings
from jaxlint.engine.checker import check_source
from jaxlint.jaxmodel import pending_work
from jaxlint.jaxmodel.dispatch import KEYS, WORK
from jaxlint.jaxmodel.pending_work import Queue

START, LATER = 1, 2  # clock reads
A, B, C = 10, 11, 12  # pieces of work


def lint(source):
    return [(f.start.line, f.code) for f in check_source(
        textwrap.dedent(source), "t.py", Settings(), {"JAX504"})]


@pytest.fixture
def runs(monkeypatch):
    """The scopes the domain was run over, by name."""
    seen = []
    original = pending_work.PendingWork.run

    def run(self, node):
        seen.append(getattr(getattr(node, "name", None), "value", type(node).__name__))
        return original(self, node)

    monkeypatch.setattr(pending_work.PendingWork, "run", run)
    return seen


def test_waiting_for_one_result_waits_for_everything_queued_before_it():
    queue = Queue().read_clock(START).queue(A, WORK).queue(B, KEYS).queue(C, WORK)
    assert set(queue.wait(frozenset({B})).pending) == {C}
    assert set(queue.wait(frozenset({B})).waited) == {A, B}


def test_work_before_the_first_clock_read_is_not_tracked():
    assert Queue().queue(A, WORK).pending == {}


def test_a_clock_read_again_comes_after_the_work_queued_so_far():
    queue = Queue().read_clock(START).queue(A, WORK)
    assert START in queue.pending[A].after
    assert START not in queue.read_clock(START).pending[A].after


def test_a_join_keeps_work_pending_on_either_path_unless_a_path_waited_for_it():
    queued = Queue().read_clock(START).queue(A, WORK)
    assert set(queued.join(Queue().read_clock(START)).pending) == {A}
    assert queued.join(queued.wait(frozenset({A}))).pending == {}
    # queued again after the wait: pending once more
    assert set(queued.wait(frozenset({A})).queue(A, WORK).pending) == {A}


def test_a_wait_answers_only_for_timings_opened_before_it():
    """The previous epoch waited for A, then this epoch read START and queued A again: where the two
    meet (the head of the loop of steps), A is pending for the timing opened by START."""
    previous_epoch = Queue().read_clock(LATER).queue(A, WORK).wait(frozenset({A})).read_clock(START)
    this_epoch = previous_epoch.queue(A, WORK)
    for joined in (previous_epoch.join(this_epoch), this_epoch.join(previous_epoch)):
        assert joined.pending[A].after == {START}
    # a wait after START, on the other path, does answer for it (one flag tested twice)
    waited_after = Queue().read_clock(START).queue(A, WORK).wait(frozenset({A}))
    assert waited_after.join(this_epoch).pending == {}
    # waited before START on one path and after it on the other: the later wait answers on both
    assert previous_epoch.join(waited_after).join(this_epoch).pending == {}


def test_forgotten_work_is_not_counted_as_waited_for():
    queued = Queue().read_clock(START).queue(A, WORK)
    assert set(queued.forget(frozenset({A})).join(queued).pending) == {A}


def test_a_file_without_clock_reads_never_runs_the_domain(runs):
    assert lint("""
        import jax.numpy as jnp

        def step(x):
            y = jnp.tanh(x @ x)
            return y.block_until_ready()
    """) == []
    assert runs == []


def test_each_scope_with_clock_reads_is_run_once(runs):
    found = lint("""
        import time
        import jax

        @jax.jit
        def step(x):
            return x * 2

        def bench(x):
            t0 = time.perf_counter()
            y = step(x)
            t1 = time.perf_counter()
            return y, t1 - t0, time.perf_counter() - t0

        def untimed(x):
            return step(x)
    """)
    assert found == [(12, "JAX504"), (13, "JAX504")]
    assert runs == ["bench"]


def test_a_closing_read_pairs_through_names_bound_on_every_path_to_it():
    assert lint("""
        import time
        import jax

        @jax.jit
        def step(x):
            return x * 2

        def bench(x, warm):
            if warm:
                t0 = time.perf_counter()
            else:
                t0 = time.time()
            y = step(x)
            return y, time.perf_counter() - t0

        def offset(x, t0):
            if x is None:
                t0 = time.perf_counter()
            y = step(x)
            return y, time.perf_counter() - t0  # `t0` may be the caller's: not known to be a clock read
    """) == [(15, "JAX504")]
