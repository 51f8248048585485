"""Runtime mode takes its inputs from the program itself: the arguments of its own calls (recorded
while the module is imported and while its `__main__` block and test functions run), then what
its call sites pass, and only then probes.

The fixtures are in tests/fixtures/runtime: `recorded_*` are called only from the `__main__`
block, a test function or a later notebook cell, with arguments no probe guesses (a dict of
parameters, a tuple state, a static count, a key); `python_values_only.py` holds functions whose
flagged parameter only ever receives a Python value that JAX keeps static. Tests marked `runtime`
start workers; the others are fast.
"""
from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from jaxlint.engine.files import check_file
from jaxlint.engine.registry import known_codes
from jaxlint.frontends.config import load_settings
from jaxlint.model.settings import Settings
from jaxlint.runtime import RuntimeOptions, confirm
from jaxlint.runtime.inputs import candidates
from jaxlint.runtime.planner import plan_module

from conftest import FIXTURES, expectations

RUNTIME_FIXTURES = FIXTURES / "runtime"
#: fixture -> where the recorded call is, as the evidence names it
RECORDED = {
    "recorded_params.py": "recorded_params.py:19",
    "recorded_state.py": "recorded_state.py:17",
    "recorded_key.py": "recorded_key.py:17",
    "recorded_tests.py": "recorded_tests.py:17",
    "recorded_cells.ipynb": "cell 4 (counted from 1), line 3",
}


def _findings(paths, settings=None):
    settings = settings or Settings()
    return [f for path in paths for f in check_file(str(path), settings).findings]


def test_runtime_fixtures_have_the_static_findings_they_declare():
    for path in sorted(RUNTIME_FIXTURES.glob("*.py")):
        found = sorted((f.start.line, f.code) for f in check_file(str(path), Settings()).findings)
        assert found == expectations(path.read_text(encoding="utf-8")), path.name


@pytest.mark.runtime
def test_inputs_recorded_from_the_program_confirm_and_python_values_are_never_confirmed():
    paths = sorted([*RUNTIME_FIXTURES.glob("*.py"), *RUNTIME_FIXTURES.glob("*.ipynb")])
    findings = _findings(paths)
    checked = confirm(findings, Settings(), RuntimeOptions(jobs=4))
    by_file: dict[str, list] = {}
    for finding in checked:
        by_file.setdefault(Path(finding.path).name, []).append(finding.runtime)
    for name, place in RECORDED.items():
        (runtime,) = by_file[name]
        assert runtime["verdict"] == "confirmed", (name, runtime)
        assert f"inputs recorded from the call at {place}: " in runtime["evidence"], (name, runtime)
    assert "params={b: f32[2], w: f32[3,2]}, batch=f32[8,3]" in by_file["recorded_params.py"][0]["evidence"]
    assert "state=(f32[2], f32[2]), horizon=10" in by_file["recorded_state.py"][0]["evidence"]
    assert "source=key, count=16" in by_file["recorded_key.py"][0]["evidence"]
    negatives = by_file["python_values_only.py"]
    assert len(negatives) == 2
    for runtime in negatives:
        assert runtime["verdict"] == "not-reproduced", runtime
        assert "inputs recorded from the call at python_values_only.py:" in runtime["evidence"], runtime


FLAGGED = '''\
import jax
import jax.numpy as jnp


@jax.jit
def loss(params):
    if params["w"].sum() > 0:
        return params["w"]
    return -params["w"]

'''
#: module -> its `__main__` block; each must leave the finding checked (by probes, since the block
#: never gets to the call) and nothing behind.
HOSTILE_MAIN = {
    "exits": "import os\n    os._exit(3)",
    "sys_exits": "import sys\n    sys.exit(4)",
    "loops": ("while True:\n        try:\n            while True:\n                pass\n"
              "        except BaseException:\n            pass"),
    "reads_stdin": "import sys\n    sys.stdin.read()",
    "writes": "open('written.txt', 'w').write('x')\n    open(__file__ + '.out', 'w').write('x')",
    "forks": ("import os, time\n    if os.fork() == 0:\n        os.setsid()\n"
              "        open(os.path.join(PIDS, str(os.getpid())), 'w').close()\n        time.sleep(300)\n"
              "    time.sleep(300)"),
}


@pytest.mark.runtime
def test_hostile_main_blocks_cost_no_verdict_and_leave_nothing_behind(tmp_path_factory):
    tree = tmp_path_factory.mktemp("tree")
    pids = tmp_path_factory.mktemp("pids")
    timeout = 20
    (tree / "pyproject.toml").write_text(f"[tool.jaxlint.runtime]\ntimeout = {timeout}\n", encoding="utf-8")
    for name, block in HOSTILE_MAIN.items():
        text = f"PIDS = {str(pids)!r}\n{FLAGGED}\nif __name__ == '__main__':\n    {block}\n"
        (tree / f"{name}.py").write_text(text, encoding="utf-8")
    good = f"{FLAGGED}\nif __name__ == '__main__':\n    loss({{'w': jnp.ones(3)}})\n"
    (tree / "good.py").write_text(good, encoding="utf-8")
    before = sorted(os.listdir(tree))
    settings = load_settings(tree, known_codes())
    findings = _findings(sorted(tree.glob("*.py")), settings)
    assert len(findings) == len(HOSTILE_MAIN) + 1

    started = time.monotonic()
    checked = confirm(findings, settings, RuntimeOptions(jobs=4))
    elapsed = time.monotonic() - started

    verdicts = {Path(f.path).stem: f.runtime for f in checked}
    assert verdicts["good"]["verdict"] == "confirmed"
    assert "inputs recorded from the call at good.py:" in verdicts["good"]["evidence"]
    for name in HOSTILE_MAIN:
        # The block never reached the call: the probes (one array for `params`) cannot index it.
        assert verdicts[name]["verdict"] == "inconclusive", (name, verdicts[name])
        assert "probes: params=f32[3]" in verdicts[name]["evidence"], (name, verdicts[name])
    # A block that ends the worker costs one more worker, not a time limit per finding.
    assert elapsed < timeout + 30
    assert sorted(os.listdir(tree)) == before
    forked = [int(name) for name in os.listdir(pids)]
    assert forked, "the forking block did not run"
    for pid in forked:
        assert not _alive(pid), f"process {pid} started by a __main__ block is still running"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie not yet reaped by init counts as gone
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# -- fast: the planner's call facts and the probes they guide --------------------------------------
CALLS = '''\
import jax


def scale(x, factor, mode="fast", steps=2):
    return x * factor


@jax.jit
def run(x):
    return scale(x, 2.0) + scale(x, 3.0, mode="slow")


def passed_around(x, n=3):
    return x


@jax.jit
def uses(x):
    return passed_around(x)


HANDLERS = [passed_around]


def clamp(value, low):
    return max(value, low)


clamp(1.5, low=0)


class Net:
    def apply(self, x, gain=1.0):
        return x * gain


def use(other):
    return Net().apply(1.0) + other.apply(2.0, gain=3.0)


SETTINGS = dict(scale=1.0)  # a keyword named like a function is no use of it
'''


def test_the_planner_sends_what_the_call_sites_pass(tmp_path):
    path = tmp_path / "calls.py"
    path.write_text(CALLS, encoding="utf-8")
    plan = plan_module(str(path), [], Settings(), {}, ())
    assert plan.payload is not None
    from jaxlint.runtime.planner import _functions
    import libcst as cst

    functions = {f["qualname"]: f for f in _functions(cst.parse_module(CALLS), CALLS, str(path), Settings())}
    calls = functions["scale"]["calls"]
    assert calls["unpassed"] == ["steps"]
    assert calls["literals"] == {"factor": "2.0"}  # `mode` is passed by one call only
    assert calls["sites"] == []  # `x` is never a literal
    assert functions["clamp"]["calls"] == {"sites": [{"where": "calls.py:29", "args": {"value": "1.5", "low": "0"}}],
                                           "unpassed": [], "literals": {"value": "1.5", "low": "0"}}
    # A function whose name escapes (stored in a list) may be called from anywhere: nothing is known.
    assert functions["passed_around"]["calls"] == {}
    # Nor when a call of its name reaches something the analysis cannot tell (`other.apply`).
    assert functions["Net.apply"]["calls"] == {}


def test_probes_keep_defaults_no_call_passes_and_use_the_literals_every_call_passes():
    params = [{"name": "x", "kind": "positional", "default": None, "annotation": None},
              {"name": "factor", "kind": "positional", "default": None, "annotation": None},
              {"name": "steps", "kind": "positional", "default": "2", "annotation": None}]
    traced = {"x", "factor", "steps"}
    plain = candidates(params, traced)
    assert plain[0].description == "probes: x=f32[3], factor=f32[3], steps=3"  # traced, so probed
    guided = candidates(params, traced, calls={"unpassed": ["steps"], "literals": {"factor": "2.0"},
                                               "sites": [{"where": "calls.py:7", "args": {"x": "1.0", "factor": "2.0"}}]})
    assert guided[0].description == "inputs from the call site at calls.py:7 (literals): x=1.0, factor=2.0"
    assert guided[1].description == "probes: x=f32[3], factor=2.0"
    for inputs in guided[1:]:
        assert "steps" not in inputs.description and "factor=2.0" in inputs.description


@pytest.mark.runtime
def test_helpers_are_confirmed_through_their_traced_callers_and_guesses_that_do_not_fit_say_what_to_do(tmp_path):
    """`first_positive(*args)` and `scale_updates(grads, **hyper)` take what no probe gives, and
    `NFWPotential._check_init` needs constructor arguments: their jitted callers build them."""
    guess = tmp_path / "guess.py"
    guess.write_text(textwrap.dedent('''\
        import jax


        @jax.jit
        def first_key(batch):
            if batch["x"].sum() > 0:
                return batch["x"]
            return -batch["x"]


        @jax.jit
        def twice(x):
            if x.sum() > 0:
                x = -x
            if x.mean() > 1:
                x = x * 2
            return x
        '''), encoding="utf-8")
    paths = [FIXTURES / "JAX201_packed_arguments.py", FIXTURES / "JAX201_constructed_objects.py", guess]
    findings = _findings(paths)
    checked = confirm(findings, Settings(), RuntimeOptions(jobs=3))
    verdicts = {(Path(f.path).name, f.start.line): f.runtime for f in checked}
    expected = {("JAX201_packed_arguments.py", 10): "relu_scalar", ("JAX201_packed_arguments.py", 22): "sgd_updates",
                ("JAX201_constructed_objects.py", 21): "energy", ("JAX201_constructed_objects.py", 41): "lr_at"}
    for place, caller in expected.items():
        runtime = verdicts[place]
        assert runtime["verdict"] == "confirmed", (place, runtime)
        assert f"TracerBoolConversionError at line {place[1]} (jax.jit trace of its caller {caller}(); probes: " \
            in runtime["evidence"], (place, runtime)
    unfit = verdicts[("guess.py", 6)]
    assert unfit["verdict"] == "inconclusive"
    assert unfit["evidence"].startswith("no input set reached the predicted error")
    assert unfit["evidence"].endswith("declare example inputs for `first_key` (pyproject.toml "
                                      "[tool.jaxlint.runtime.examples] or jaxlint_examples.py) to check it")
    # Of two findings in one function, the first stops the trace: the second says which line to fix.
    assert verdicts[("guess.py", 13)]["verdict"] == "confirmed"
    assert verdicts[("guess.py", 15)] == {
        "verdict": "inconclusive", "device": verdicts[("guess.py", 15)]["device"],
        "evidence": "TracerBoolConversionError at line 13 stops jax.jit trace first (probes: x=f32[3]), before "
                    "line 15: fix line 13, then check this line again"}


# -- the recorder itself, in this process -----------------------------------------------------------
RECORDED_MODULE = '''\
import jax
import jax.numpy as jnp
import numpy as np


class Model:
    def apply(self, params, x, *, config):
        return x


def helper(x, count, options):
    return x


@jax.jit
def step(state, batch):
    return helper(state[0], 3, {"mode": "fast", "eps": 1e-3})


def stream(x):
    yield x
    x = "changed"
    yield x


step((jnp.ones((2, 3)), jax.random.key(1)), np.zeros(4, np.int32))
Model().apply({"w": jnp.ones(2)}, [1.5, None], config="large")
list(stream(jnp.ones(1)))
for _ in range(50):
    helper(np.ones(7), 5, {})
'''


@pytest.mark.jax
def test_the_recorder_keeps_shapes_keys_python_values_and_structure(tmp_path):
    import jax
    import numpy as np

    from jaxlint.runtime.recording import READ_CALLS, Recorder, Target

    path = tmp_path / "recorded_module.py"
    path.write_text(RECORDED_MODULE, encoding="utf-8")
    lines = RECORDED_MODULE.splitlines()

    def target(qualname: str, receiver: bool = False) -> Target:
        name = qualname.rsplit(".", 1)[-1]
        line = next(i for i, text in enumerate(lines, 1) if text.lstrip().startswith(f"def {name}("))
        first = line - 1 if lines[line - 2].startswith("@") else line
        return Target(qualname, name, frozenset({first, line}), skip_receiver=receiver)

    recorder = Recorder(str(path), [target("step"), target("helper"), target("Model.apply", True), target("stream")],
                        "recorded_module.py")
    namespace = {"__name__": "recorded_module"}
    recorder.watching(lambda: exec(compile(RECORDED_MODULE, str(path), "exec"), namespace))  # noqa: S102

    (step,) = recorder.records["step"]
    assert step.describe() == "state=(f32[2,3], key), batch=i32[4]"  # a tracer, inside jit
    assert step.where == "recorded_module.py:26"
    # Inside the trace the helper got a tracer and Python values: the latter stay static.
    first_helper = recorder.records["helper"][0]
    assert first_helper.describe() == "x=f32[2,3], count=3, options={eps: 0.001, mode: 'fast'}"
    inputs = first_helper.inputs(abstract=True)
    assert inputs.static_argnames == ("count", "options") and inputs.settles
    args, kwargs = inputs.make()
    assert args[0].shape == (2, 3) and args[1] == 3 and hash(args[2]) is not None and args[2]["mode"] == "fast"
    # Fresh values on every call, keys distinct, NumPy stays NumPy.
    state, batch = recorder.records["step"][0].inputs(abstract=True).make()[0]
    assert isinstance(batch, jax.Array) and batch.dtype == np.int32
    assert jax.dtypes.issubdtype(state[1].dtype, jax.dtypes.prng_key)
    plain = recorder.records["helper"][1]
    assert plain.describe() == "x=np.f64[7], count=5, options={}"
    assert isinstance(plain.inputs(abstract=False).make()[0][0], np.ndarray)
    # A method: `self` is left to the worker; keyword-only arguments go by keyword.
    (apply,) = recorder.records["Model.apply"]
    assert apply.describe() == "params={w: f32[2]}, x=[1.5, None], config='large'"
    assert apply.inputs(abstract=False).make()[1] == {"config": "large"}
    # A generator's frame is entered again at each resumption: not recorded. A helper called in a
    # loop is read for its first calls only.
    assert "stream" not in recorder.records
    assert len(recorder.records["helper"]) == 2
    assert recorder._read["helper"] == 51 > READ_CALLS
