"""JAX101 against JAX's own key-reuse checker: JAX raises KeyReuseError exactly where jaxlint reports.

Each function in the fixture's KEY_REUSE_CHECKS takes a typed key (`jax.random.key`) and is run under
`jax.debug_key_reuse(True)`. A function with a JAX101 finding must raise `jax.errors.KeyReuseError`
at the first reported line inside it; a function without one must run cleanly. Legacy
`jax.random.PRNGKey` keys are reported by jaxlint but are not tracked by JAX's checker.
"""
import importlib.util
import inspect
import traceback

import pytest

from jaxlint.model.settings import Settings
from jaxlint.engine.files import check_file

from conftest import FIXTURES

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")

PATH = FIXTURES / "JAX101_key_reuse.py"


@pytest.fixture(scope="module")
def fixture():
    spec = importlib.util.spec_from_file_location("fixture_JAX101_jax", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reported():
    return {f.start.line for f in check_file(str(PATH), Settings()).findings if f.code == "JAX101"}


def fixture_lines(exc):
    """Lines of the fixture in the exception's traceback (or, if none, in the one it chains to)."""
    while exc is not None:
        lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == str(PATH)]
        if lines:
            return lines
        exc = exc.__cause__ or exc.__context__
    return [None]


def function_lines(function):
    source, start = inspect.getsourcelines(function)
    return set(range(start, start + len(source)))


def _loop_running(function, loop_line, reported_line):
    """Whether JAX raised at a lax loop whose body, written above it in the function, holds the
    reported draw: the checker sees a loop body's reuse at the loop; jaxlint points at the draw."""
    source, start = inspect.getsourcelines(function)
    loop = source[loop_line - start]
    return any(f"lax.{name}(" in loop for name in ("fori_loop", "scan", "while_loop")) and start < reported_line < loop_line


def test_every_typed_key_function_agrees_with_jax(fixture, reported):
    checked = set()
    for function, make_args in fixture.KEY_REUSE_CHECKS:
        mine = sorted(reported & function_lines(function))
        checked |= set(mine)
        with jax.debug_key_reuse(True):
            try:
                function(*make_args())
            except jax.errors.KeyReuseError as exc:
                assert mine, f"{function.__name__}: JAX raised KeyReuseError but jaxlint reports nothing"
                # the innermost frame of this function (a helper it calls may be deeper)
                line = [n for n in fixture_lines(exc) if n in function_lines(function)][-1]
                assert line == mine[0] or _loop_running(function, line, mine[0]), \
                    f"{function.__name__}: JAX raised at line {line}, jaxlint reports {mine}"
                continue
        # Functions with a finding must have raised; the exclusive-branch functions run once per branch.
        assert not mine, f"{function.__name__}: jaxlint reports {mine}, JAX ran cleanly"
    typed = reported - {line for f in fixture.LEGACY_KEY_FUNCTIONS for line in function_lines(f)}
    module_level = {line for line in typed if not any(line in function_lines(f) for f, _ in fixture.KEY_REUSE_CHECKS)}
    # Everything reported in a typed-key function has been run against JAX; the rest is module level.
    assert typed - module_level <= checked


def test_deliberate_reuse_raises_under_the_checker_but_is_not_reported(fixture, reported):
    """Reuse on purpose (rules/JAX101-prng-key-reuse.toml): one key shuffling or indexing every array
    of a batch keeps the arrays aligned, and a warm-up call's draws are thrown away. JAX's checker
    raises all the same; jaxlint stays silent."""
    for function, make_args in fixture.DELIBERATE_KEY_REUSE:
        assert not reported & function_lines(function), f"{function.__name__} is deliberate, jaxlint reports it"
        with jax.debug_key_reuse(True):
            with pytest.raises(jax.errors.KeyReuseError):
                function(*make_args())


def test_one_key_keeps_a_batch_aligned(fixture):
    """Why the alignment idiom is deliberate: every array gets the same order."""
    batch = {"obs": jnp_arange(8), "act": 10 * jnp_arange(8)}
    for function in fixture.ALIGNED_BATCHES:
        out = function(jax.random.key(0), batch)
        assert (out["act"] == 10 * out["obs"]).all(), f"{function.__name__}: the arrays are no longer aligned"
        assert not (out["obs"].ravel() == jnp_arange(out["obs"].size)).all(), f"{function.__name__} drew nothing"


def jnp_arange(n):
    return jax.numpy.arange(n, dtype=jax.numpy.float32)


def test_module_level_reuse_raises_under_the_checker(reported):
    """The fixture's module-level reuse raises when the module is imported with the checker on."""
    spec = importlib.util.spec_from_file_location("fixture_JAX101_checked", PATH)
    module = importlib.util.module_from_spec(spec)
    with jax.debug_key_reuse(True):
        with pytest.raises(jax.errors.KeyReuseError) as info:
            spec.loader.exec_module(module)
    assert fixture_lines(info.value)[-1] in reported


def test_legacy_keys_are_reported_but_not_checked_by_jax(fixture, reported):
    for function in fixture.LEGACY_KEY_FUNCTIONS:
        with jax.debug_key_reuse(True):
            function((2, 2))  # JAX's checker does not track uint32 keys: no error
    assert reported & function_lines(fixture.legacy_init)
    assert not reported & function_lines(fixture.legacy_split)


def test_same_draws_from_a_reused_key(fixture):
    """What the finding means: both draws from one key are the same numbers."""
    w, b = fixture.init_layer(jax.random.key(0), 1, 3)
    assert (w[0] == b).all()


def load_fixture(name):
    spec = importlib.util.spec_from_file_location(f"fixture_{name}_jax", FIXTURES / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stateful_rng_is_frozen_at_trace_time():
    """JAX102: the NumPy/stdlib draw happens once, while tracing; JAX raises nothing."""
    jnp = jax.numpy
    module = load_fixture("JAX102_stateful_rng.py")
    x = jnp.zeros(3)
    assert (module.add_noise(x) == module.add_noise(x)).all()
    assert (module.generator_noise(x) == module.generator_noise(x)).all()
    rows = module.batched(jnp.ones(4))
    assert (rows == rows[0]).all()


def test_constant_seed_in_loop_repeats_the_draws():
    """JAX103: the same seed makes the same key, so each iteration draws the same numbers."""
    jnp = jax.numpy
    module = load_fixture("JAX103_key_in_loop.py")
    same = module.noisy_batches([jnp.zeros(3), jnp.zeros(3)])
    assert (same[0] == same[1]).all()
    different = module.split_in_loop([jnp.zeros(3), jnp.zeros(3)])
    assert not (different[0] == different[1]).all()


def test_broadcast_key_gives_identical_batch_elements():
    """JAX104: an unmapped key gives every batch element the same draw; a split batch does not."""
    jnp = jax.numpy
    module = load_fixture("JAX104_vmap_keys.py")
    key, xs = jax.random.key(0), jnp.zeros((4, 3))
    for rows in (module.noisy_batch(key, xs), module.closure_noise(xs), module.dropout_batch(key, xs + 1)):
        assert (rows == rows[0]).all()
    for rows in (module.noisy_batch_split(key, xs), module.fold_in_per_element(key, xs)):
        assert not (rows == rows[0]).all()


def test_messages_say_where_the_key_was_consumed(fixture):
    """A message names the calls a key went through, `once per leaf` for a tree map, and the carry for
    a lax loop: each at the line JAX's checker points at."""
    findings = [f for f in check_file(str(PATH), Settings()).findings if f.code == "JAX101"]
    by_function = {}
    for function in (fixture.train_epoch, fixture.rollout_step, fixture.perturb_params, fixture.noisy_sgd):
        lines = function_lines(function)
        by_function[function.__name__] = [f.message for f in findings if f.start.line in lines]
    draw = inspect.getsourcelines(fixture.perturbed_grad)[1] + 1
    step = inspect.getsourcelines(fixture.train_epoch)[1] + 2
    assert by_function["train_epoch"] == [
        f"key `key` consumed at line {step} by `sgd_step` → `perturbed_grad` → `jax.random.normal` (line {draw}) "
        "is used again here: the two draws start from the same random bits, so they are not independent, as JAX "
        "keys are not stateful; split it first: "
        "`key, subkey = jax.random.split(key)` and use `subkey`"]
    assert "by `agent.act` → `jax.random.uniform`" in by_function["rollout_step"][0]
    assert by_function["perturb_params"][0].startswith("key `key` is consumed once per leaf: `jax.tree.map`")
    assert "in the body of `lax.scan` and returned unchanged in its carry" in by_function["noisy_sgd"][0]


def test_numbers_nobody_reads_change_nothing(fixture):
    """Why a use whose results nobody reads makes no reuse: the function returns exactly what it
    returns without that use (JAX's checker, which follows keys and not values, raises all the same)."""
    key, x, image = jax.random.key(0), jax.numpy.ones(2), jax.numpy.full(2, 3.0)
    with jax.debug_key_reuse(False):
        replaced = fixture.evaluation_keys_replaced(key, x)
        inverted = fixture.latent_or_inversion(key, (2,), image)
    _, *keys = jax.random.split(key, 3)
    assert replaced == jax.numpy.sum(x + jax.random.normal(keys[0], x.shape))
    assert (inverted == 2.0 * fixture._invert(key, image)).all()


def test_one_key_for_every_layer_repeats_the_weights(fixture):
    """Why an initialiser given one key for each layer is reported: a draw from a key starts with the
    numbers that a smaller draw from it holds, so the layers' weights repeat one another."""
    with jax.debug_key_reuse(False):
        first, second = fixture.init_hidden_layers(jax.random.key(0))
        split_first, split_second = fixture.init_hidden_layers_split(jax.random.key(0))
    assert (first.ravel() * 2 == (second * 4).ravel()[:first.size]).all()
    assert not (split_first.ravel() * 2 == (split_second * 4).ravel()[:split_first.size]).any()
