"""Key reuse that reads as deliberate (JAX101, JAX103): silent by default, reported with
`strict-key-reuse`; and the messages of what stays reported say what the code does."""

import functools
from pathlib import Path

import pytest

from jaxlint.engine.files import check_file
from jaxlint.model.settings import Settings

from conftest import FIXTURES, checked_by_default

KEY_REUSE = FIXTURES / "JAX101_key_reuse.py"
KEY_IN_LOOP = FIXTURES / "JAX103_key_in_loop.py"
COMPARED_METHODS = FIXTURES / "JAX101_compared_methods.py"


def findings(path, code, **settings):
    return [f for f in _checked(str(path), tuple(sorted(settings.items()))) if f.code == code]


@functools.lru_cache(maxsize=None)
def _checked(path, settings):
    """The findings of a fixture, checked once per settings for all the tests here (they are slow);
    with the default settings, the run test_walk_count counts the walks of."""
    if not settings:
        return tuple(checked_by_default(Path(path))[0].findings)
    return tuple(check_file(path, Settings(**dict(settings))).findings)


def lines_of(path, function_name):
    """The lines of a top-level function of a fixture, found in its text (the fixture is not imported)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {function_name}("))
    end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()), len(lines))
    return set(range(start + 1, end + 1))


DELIBERATE_JAX101 = ["online_and_target", "init_from_dummy_input", "compare_on_common_noise", "time_sampler",
                     "fit_each_candidate", "train_with_periodic_samples", "time_kept_warm_up", "shape_probe",
                     "evaluation_keys_replaced", "placeholder_replaced", "latent_or_inversion",
                     "drawn_into_nothing"]
DELIBERATE_JAX103 = ["run_experiment", "compare_solvers", "evaluate_candidates", "train_and_sample", "evaluate_every"]


def test_deliberate_reuse_is_reported_only_with_strict_key_reuse():
    for path, code, names in ((KEY_REUSE, "JAX101", DELIBERATE_JAX101), (KEY_IN_LOOP, "JAX103", DELIBERATE_JAX103),
                              (COMPARED_METHODS, "JAX101", ["compare_methods"])):
        default = {f.start.line for f in findings(path, code)}
        strict = {f.start.line for f in findings(path, code, strict_key_reuse=True)}
        assert default <= strict, f"{path.name}: strict mode dropped findings"
        for name in names:
            lines = lines_of(path, name)
            assert not default & lines, f"{name} is deliberate, reported by default"
            assert strict & lines, f"{name} is not reported with strict-key-reuse"


def test_strict_key_reuse_is_read_from_the_configuration(tmp_path):
    from jaxlint.engine.registry import known_codes
    from jaxlint.frontends.config import load_settings

    assert load_settings(tmp_path, known_codes()).strict_key_reuse is False
    (tmp_path / "pyproject.toml").write_text("[tool.jaxlint]\nstrict-key-reuse = true\n", encoding="utf-8")
    assert load_settings(tmp_path, known_codes()).strict_key_reuse is True


def test_a_key_split_again_after_a_draw_is_not_said_to_repeat_every_iteration():
    """`rng, _ = split(rng)` then a draw from `rng`: the key changes every iteration, so "every
    iteration draws the same numbers" would be false; the message names the draw and the split."""
    [finding] = [f for f in findings(KEY_REUSE, "JAX101") if f.start.line in lines_of(KEY_REUSE, "resplit_after_draw")]
    assert "every iteration draws the same numbers" not in finding.message
    assert "in the next iteration of the loop" in finding.message and "before the body rebinds it" in finding.message
    [same] = [f for f in findings(KEY_REUSE, "JAX101") if f.start.line in lines_of(KEY_REUSE, "noise_every_step")]
    assert "every iteration draws the same numbers" in same.message


def test_again_messages_match_the_two_calls():
    """Identical only for the same draw with the same arguments; a draw and a split share bits; a
    function jaxlint cannot see into gets the same randomness."""
    by_function = {}
    for f in findings(KEY_REUSE, "JAX101"):
        for name in ("init_layer", "use_after_split", "module_key"):
            if name != "module_key" and f.start.line in lines_of(KEY_REUSE, name):
                by_function[name] = f.message
    assert "draws start from the same random bits" in by_function["init_layer"]  # normal (n_in, n_out) vs (n_out,)
    assert "keys split from it are not independent" in by_function["use_after_split"]
    models = FIXTURES / "JAX101_models.py"
    assert all("both calls get the same randomness" in f.message for f in findings(models, "JAX101"))
    same_draw = [f.message for f in findings(KEY_REUSE, "JAX101") if "`module_key`" in f.message]
    assert same_draw and "the two draws are identical" in same_draw[0]


def test_a_loop_with_branches_after_the_reuse_is_checked_to_the_end():
    """The search for a periodic `if` around a reused key walks the whole loop body: branches after
    the reuse, nested or not, must not break it (they once made JAX101 and JAX103 fail)."""
    from jaxlint.engine.checker import check_source, enabled_rules

    source = (
        "import jax\n\n"
        "def run(key, xs, every):\n"
        "    for step, x in enumerate(xs):\n"
        "        y = jax.random.normal(key, (3,))\n"
        "        k = jax.random.PRNGKey(0)\n"
        "        if step > 2:\n"
        "            if every:\n"
        "                print(step, y)\n"
        "        elif x:\n"
        "            pass\n"
    )
    settings = Settings()
    found = check_source(source, "run.py", settings, enabled_rules(settings, "run.py"))
    assert sorted((f.start.line, f.code) for f in found) == [(5, "JAX101"), (6, "JAX103")]


@pytest.mark.jax
def test_model_library_reuse_raises_under_jax_checker_where_reported():
    """JAX's checker raises in both the reported and the deliberate functions of JAX101_models.py;
    jaxlint reports only the first kind, at the line where JAX raises."""
    import importlib.util
    import traceback

    import jax

    path = FIXTURES / "JAX101_models.py"
    spec = importlib.util.spec_from_file_location("fixture_JAX101_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    reported = {f.start.line for f in findings(path, "JAX101")}
    for function in [*module.REPORTED, *module.DELIBERATE]:
        with jax.debug_key_reuse(True):
            with pytest.raises(jax.errors.KeyReuseError) as info:
                function(*module.ARGUMENTS[function.__name__]())
        lines = [frame.lineno for frame in traceback.extract_tb(info.value.__traceback__) if frame.filename == str(path)]
        inside = lines_of(path, function.__name__)
        raised = [line for line in lines if line in inside][-1]
        assert (raised in reported) == (function in module.REPORTED), function.__name__
