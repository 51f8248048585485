"""JAX504 against JAX itself: dispatch returns before the work is done, and the waits the rule trusts do wait.

The checks read the array's own readiness (`is_ready()`) rather than clocks, so a slow or busy
machine cannot change the conclusions; the work is sized so that it keeps the device busy for a
while, and "returned before the work was done" only has to be seen in one of a few trials.
"""
import contextlib
import importlib.util
import io
import time

import pytest

from conftest import FIXTURES

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")

TRIALS = 3
#: The waited-for work takes at least this long, on whatever device runs the tests.
LONG_ENOUGH = 0.05


@jax.jit
def chain(x):
    # unrolled on purpose: on GPUs a loop with a trip count known only on the device makes the host
    # wait for every iteration, which would hide asynchronous dispatch
    for _ in range(4):
        x = jnp.tanh(x @ x)
    return x


def best(measure):
    return min(measure() for _ in range(TRIALS))


def busy_input(function, make, size=1024):
    """The smallest input, doubling from `size`, on which `function` keeps this device busy long enough."""
    while True:
        x = make(size)
        function(x).block_until_ready()  # compile outside every measurement
        if size >= 16384 or blocked_by(function, x) >= LONG_ENOUGH:
            return x
        size *= 2


def blocked_by(function, x) -> float:
    def measure():
        t0 = time.perf_counter()
        function(x).block_until_ready()
        return time.perf_counter() - t0

    return best(measure)


def square(size):
    return jnp.full((size, size), 1e-3, jnp.float32)


@pytest.fixture(scope="module")
def work():
    """An input that keeps the device busy for at least LONG_ENOUGH."""
    return busy_input(chain, square)


def load(name):
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_jitted_call_returns_before_its_work_is_done(work):
    not_ready = []
    for _ in range(TRIALS):
        y = chain(work)
        not_ready.append(not y.is_ready())
        y.block_until_ready()
        assert y.is_ready()
    assert any(not_ready)  # the returned array is a placeholder


def test_the_flagged_timing_reports_the_dispatch_and_the_fixed_one_the_work():
    timing, negatives = load("JAX504_timing"), load("JAX504_negatives")
    x = busy_input(negatives.step, square)
    timing.step(x).block_until_ready()

    def clock_stopped_before_the_work_was_done():
        y, _ = timing.bench_assigned(x)  # reported by JAX504
        unfinished = not y.is_ready()
        y.block_until_ready()
        return unfinished

    def clock_stopped_after_the_work_was_done():
        y, _ = negatives.blocked_method(x)  # the same work, waited for: not reported
        return y.is_ready()

    assert any(clock_stopped_before_the_work_was_done() for _ in range(TRIALS))
    assert all(clock_stopped_after_the_work_was_done() for _ in range(TRIALS))


def test_work_left_on_the_path_that_reads_the_clock_is_not_done():
    """JAX504_paths: a wait on a path that returns or breaks early does not finish the work of the
    path that reads the clock (the last step of a loop left by `break` before its wait)."""
    paths = load("JAX504_paths")
    x = busy_input(lambda p: paths.train_step(p, p), square)

    def left_running(run):
        out = run()
        unfinished = not out.is_ready()
        out.block_until_ready()
        return unfinished

    early_exit = lambda: paths.timed_step_with_early_exit(x, x, last_step=False)[0]  # noqa: E731
    until = lambda: paths.run_steps_until(x, [x, x, x], 3)[0]  # noqa: E731
    assert any(left_running(early_exit) for _ in range(TRIALS))
    assert any(left_running(until) for _ in range(TRIALS))


def test_mapped_key_splitting_is_bookkeeping_next_to_real_work(work):
    """JAX504_epochs: the vmapped split left running at the end of an iteration (brax's PPO loop)
    takes a small fraction of the work a timing measures, as `jax.random.split` itself does."""
    split = jax.vmap(lambda k, n: jax.random.split(k[0], n), in_axes=(0, None))
    keys = jax.random.split(jax.random.key(0), (8, 2))

    def split_keys(keys):
        return split(keys, 2048)

    assert blocked_by(split_keys, keys) * 10 < blocked_by(chain, work)


WAITS = {
    "float": lambda y: float(y[0, 0]),
    "int": lambda y: int(y[0, 0]),
    "bool test": lambda y: bool(y[0, 0] > 0),
    "item": lambda y: y[0, 0].item(),
    "tolist": lambda y: y[:2, :2].tolist(),
    "numpy.asarray": np.asarray,
    "numpy.array": np.array,
    "jax.device_get": jax.device_get,
    "jax.block_until_ready on a pytree": lambda y: jax.block_until_ready({"out": (y, 1)}),
    # printing reads the values of small arrays; JAX 0.11 prints only the shape of arrays of 1 MiB or
    # more, without waiting (the rule then stays silent: a missed finding, never a false one)
    "print": lambda y: print(y[:4, :4]),
    "str": lambda y: str(y[:4, :4]),
    "f-string": lambda y: f"{y[0, 0]:.3f}",
    "a result computed from it": lambda y: (y + 1).block_until_ready(),
    "a later, independent result": lambda y: chain(jnp.ones((2, 2))).block_until_ready(),
}


@pytest.mark.parametrize("wait", list(WAITS), ids=list(WAITS))
def test_what_the_rule_counts_as_waiting_waits(work, wait):
    """After the operation the work is done: the operation itself waited for it."""
    operation = WAITS[wait]
    chain(jnp.ones((2, 2))).block_until_ready()
    for _ in range(TRIALS):
        y = chain(work)
        with contextlib.redirect_stdout(io.StringIO()):
            operation(y)
        assert y.is_ready()


def test_shape_and_dtype_do_not_wait(work):
    def still_running_after_reading_the_shape():
        y = chain(work)
        _ = (y.shape, y.dtype, y.ndim)
        unfinished = not y.is_ready()
        y.block_until_ready()
        return unfinished

    assert any(still_running_after_reading_the_shape() for _ in range(TRIALS))


def test_lowering_and_compiling_are_synchronous():
    def many_ops(x):
        for i in range(300):
            x = jnp.sin(x) * 1.0001 + i
        return x

    x = jnp.ones((8,))
    t0 = time.perf_counter()
    compiled = jax.jit(many_ops).lower(x).compile()
    compile_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    compiled(x).block_until_ready()  # would wait for a compilation still running in the background
    first_run = time.perf_counter() - t0
    assert first_run * 2 < compile_time


def test_what_a_factory_of_jitted_functions_returns_runs_after_the_call_returns():
    """JAX504_factories: the jitted functions factories return (a jitted `shard_map` too) hand back
    their result while the device still works; the waited twin does not."""
    factories = load("JAX504_factories")
    step = factories.make_train_step(0.1)
    x = busy_input(lambda p: step(p, p), square)

    def left_running(run):
        out = run()
        unfinished = not out.is_ready()
        out.block_until_ready()
        return unfinished

    assert any(left_running(lambda: factories.benchmark_train(x, x)[0]) for _ in range(TRIALS))
    assert any(left_running(lambda: factories.benchmark_sharded(x, x)[0]) for _ in range(TRIALS))
    assert not any(left_running(lambda: factories.benchmark_waited(x, x)[0]) for _ in range(TRIALS))


def test_a_function_of_the_file_that_returns_queued_work_returns_before_it_is_done():
    """JAX504_helpers: a plain function that returns what `lax.scan` or jnp operations make hands back
    placeholders while the device still works; the helpers that wait inside hand back finished work."""
    helpers = load("JAX504_helpers")
    x = busy_input(helpers.refine, square)

    def left_running(run):
        out = run()
        unfinished = not out.is_ready()
        out.block_until_ready()
        return unfinished

    assert any(left_running(lambda: helpers.time_refine(x)[0]) for _ in range(TRIALS))
    assert any(left_running(lambda: helpers.time_unroll(x)[0]) for _ in range(TRIALS))
    assert not any(left_running(lambda: helpers.refine_and_wait(x)) for _ in range(TRIALS))
    assert not any(left_running(lambda: helpers.time_waited_result(x)[0]) for _ in range(TRIALS))


def test_a_name_rebound_to_the_jit_of_its_own_value_dispatches():
    """JAX504_helpers: `update = jax.jit(update)` after `init, update = optimizer(…)`: its calls
    return before the work is done."""
    helpers = load("JAX504_helpers")
    x = busy_input(helpers.refine, square)

    def left_running():
        out = helpers.time_updates(x, x)[0]
        unfinished = not out.is_ready()
        out.block_until_ready()
        return unfinished

    assert any(left_running() for _ in range(TRIALS))


def test_timeit_fills_the_dispatch_queue_and_then_pays_for_the_work(work):
    """`%timeit f(x)` without a wait is not reported, `%timeit -n 1 f(x)` is (engine/magic_lines.py):
    the device queue holds a bounded number of calls, so a loop of many unwaited calls makes the host
    wait for room and its time is that of the work, while the calls of a few loops all fit."""
    small = square(256)
    chain(small).block_until_ready()
    results = [chain(small) for _ in range(300)]
    behind = results[200].is_ready()  # a hundred calls before the last one dispatched
    jax.block_until_ready(results)
    assert behind

    def few_loops_left_running():
        few = [chain(work) for _ in range(3)]
        unfinished = not few[-1].is_ready()
        jax.block_until_ready(few)
        return unfinished

    assert any(few_loops_left_running() for _ in range(TRIALS))


def test_timeit_of_a_few_runs_returns_before_the_work_is_done():
    """JAX504_timeit: `timeit` with a small `number` stops its clock while the last run's work is
    queued; the same statement ending in a wait returns with it done."""
    import timeit

    fixture = load("JAX504_timeit")
    x = busy_input(fixture.step, square)
    results = []

    def left_running():
        results.clear()
        timeit.timeit(lambda: results.append(fixture.step(x)), number=2)
        unfinished = not results[-1].is_ready()
        results[-1].block_until_ready()
        return unfinished

    def done():
        results.clear()
        timeit.timeit(lambda: results.append(fixture.step(x).block_until_ready()), number=2)
        return results[-1].is_ready()

    assert any(left_running() for _ in range(TRIALS))
    assert all(done() for _ in range(TRIALS))
