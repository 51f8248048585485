"""The behaviour confirmers of runtime mode, run directly on small modules written to a temporary
directory: the verdict and the evidence for each positive, `not-reproduced` for the hard negatives."""
from __future__ import annotations

import importlib.util
import inspect
import itertools
import sys
import textwrap

import pytest

pytestmark = pytest.mark.runtime

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from jaxlint.catalogue.rule_docs import load_catalogue  # noqa: E402
from jaxlint.runtime.behaviour import CONFIRMERS  # noqa: E402
from jaxlint.runtime.subject import Inputs, Subject  # noqa: E402

_names = itertools.count()


def load(tmp_path, source: str):
    """Write `source` to a fresh module file and import it."""
    source = textwrap.dedent(source)
    name = f"behaviour_subject_{next(_names)}"
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def line_of(module, marker: str) -> int:
    """The line of the module holding `# <marker>`."""
    source = inspect.getsource(module)
    for number, text in enumerate(source.splitlines(), start=1):
        if text.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(f"no line marked {marker!r}")


def ones(*shapes):
    return Inputs(make=lambda: (tuple(jnp.ones(s) for s in shapes), {}), description="test")


def make_subject(module, code: str, qualname: str | None, marker: str, *, inputs=None, mode: str | None = "jit",
                 message: str = "") -> Subject:
    function = None
    if qualname is not None:
        function = module
        for part in qualname.split("."):
            function = getattr(function, part)
    return Subject(
        code=code, line=line_of(module, marker), path=module.__file__, message=message, module=module,
        function=function, python_function=inspect.unwrap(function) if function is not None else None,
        qualname=qualname, inputs=(inputs if inputs is not None else ones(3)) if qualname else None,
        trace_mode=mode, source=inspect.getsource(module),
    )


def confirm(subject: Subject):
    """The behaviour check the rule's catalogue entry names, on the subject."""
    return CONFIRMERS[load_catalogue()[subject.code].runtime.behaviour](subject)


def test_every_behaviour_the_catalogue_names_has_a_confirmer_and_every_confirmer_is_named():
    named = {doc.runtime.behaviour for doc in load_catalogue().values() if doc.runtime.behaviour}
    assert named == set(CONFIRMERS)


# -- JAX301 print-in-traced ---------------------------------------------------------------------
PRINTS = """
import jax
import jax.numpy as jnp
from jax import lax


@jax.jit
def step(x):
    print("x =", x)  # p1
    return x * 2


def body(i, carry):
    print(carry)  # p2
    return carry + i


@jax.jit
def debug_print(x):
    jax.debug.print("x = {}", x)  # n1
    return x


def eager(x):
    print("x =", x)  # n2
    return x
"""


def test_print_in_jit_runs_at_trace_time_only(tmp_path):
    module = load(tmp_path, PRINTS)
    outcome = confirm(make_subject(module, "JAX301", "step", "p1"))
    assert outcome.verdict == "confirmed", outcome
    assert "print ran at trace time only and showed a tracer: 1 line on the first call, 0 on the second" \
        in outcome.evidence
    assert f"line {line_of(module, 'p1')}" in outcome.evidence


def test_print_in_lax_body_under_a_jit_stand_in(tmp_path):
    module = load(tmp_path, PRINTS)
    outcome = confirm(make_subject(module, "JAX301", "body", "p2", mode="lax",
                                   inputs=Inputs(lambda: ((0, jnp.float32(1.0)), {}), "test")))
    assert outcome.verdict == "confirmed", outcome
    assert "stand-in for the lax trace" in outcome.evidence


@pytest.mark.parametrize("qualname, marker, mode", [("debug_print", "n1", "jit"), ("eager", "n2", None)])
def test_print_on_every_call_is_not_reproduced(tmp_path, qualname, marker, mode):
    module = load(tmp_path, PRINTS)
    outcome = confirm(make_subject(module, "JAX301", qualname, marker, mode=mode))
    assert outcome.verdict == "not-reproduced", outcome
    assert "printing 1 and 1 lines" in outcome.evidence


# -- JAX302 global-read-in-traced ---------------------------------------------------------------
GLOBALS = """
import jax

scale = 2.0
offset = 1.0


@jax.jit
def scaled(x):
    return x * scale  # g1


def set_scale(value):
    global scale
    scale = value


@jax.jit
def shadowed(x):
    offset = 5.0
    return x + offset  # n1


def eager(x):
    return x * scale  # n2
"""


def test_stale_global_after_reassignment(tmp_path):
    module = load(tmp_path, GLOBALS)
    message = "`scale` is a global variable reassigned in set_scale, read inside a function traced by `jax.jit`"
    outcome = confirm(make_subject(module, "JAX302", "scaled", "g1", message=message))
    assert outcome.verdict == "confirmed", outcome
    assert "stale global: after `scale` 2.0 → 3.0 the call still returned [2. 2. 2.]" in outcome.evidence
    assert "eager evaluation gives [3. 3. 3.]" in outcome.evidence
    assert module.scale == 2.0  # restored


def test_global_named_from_the_source_line_without_a_message(tmp_path):
    module = load(tmp_path, GLOBALS)
    outcome = confirm(make_subject(module, "JAX302", "scaled", "g1"))
    assert outcome.verdict == "confirmed", outcome
    assert "`scale`" in outcome.evidence


def test_a_global_bound_only_by_the_script_says_so(tmp_path):
    """A function and the global it reads, both defined in the `__main__` block: the imported module
    has no such global, and the evidence says what to do instead."""
    module = load(tmp_path, GLOBALS)
    subject = make_subject(module, "JAX302", "scaled", "g1", message="`student_scale` is a global variable")
    outcome = confirm(subject)
    assert outcome.verdict == "inconclusive", outcome
    assert "`student_scale` is bound only when the file runs as a script" in outcome.evidence
    assert "run the script to see the stale value" in outcome.evidence


def test_a_stale_attribute_of_self_is_left_inconclusive(tmp_path):
    """An attribute of an object (not a global): the global read on the same line is not what the
    finding is about, and is not the one changed."""
    module = load(tmp_path, GLOBALS)
    message = "`self.weights` is replaced by `train_step`, but `_update` is given to `jax.jit` as a bound method"
    outcome = confirm(make_subject(module, "JAX302", "scaled", "g1", message=message))
    assert outcome.verdict == "inconclusive", outcome
    assert "attribute of an object" in outcome.evidence


def test_shadowed_or_eager_global_is_not_reproduced(tmp_path):
    module = load(tmp_path, GLOBALS)
    shadowed = confirm(make_subject(module, "JAX302", "shadowed", "n1", message="`offset` is a global variable"))
    assert shadowed.verdict == "not-reproduced", shadowed
    assert "does not change even eagerly" in shadowed.evidence
    eager = confirm(make_subject(module, "JAX302", "eager", "n2", mode=None, message="`scale` is a global variable"))
    assert eager.verdict == "not-reproduced", eager
    assert "returned the new result [3. 3. 3.]" in eager.evidence


# -- JAX303 state-mutation-in-traced ------------------------------------------------------------
MUTATION = """
import jax
import jax.numpy as jnp

history = []
calls = 0


class Config:
    def __init__(self):
        self.scale = 1.0


config = Config()


@jax.jit
def train_step(w):
    history.append(jnp.sum(w))  # m1
    return w


@jax.jit
def counted(x):
    global calls
    calls += 1  # m2
    return x * 2


@jax.jit
def set_scale(x):
    config.scale = x  # m3
    return x


@jax.jit
def stack_powers(x):
    powers = []
    for k in range(3):
        powers.append(x ** k)  # n1
    return jnp.stack(powers)


evaluations = 0


def counted_loss(w):
    global evaluations
    evaluations += 1  # n2
    return jnp.sum(w ** 2)
"""


def test_tracer_leaked_into_a_global_list(tmp_path):
    module = load(tmp_path, MUTATION)
    outcome = confirm(make_subject(module, "JAX303", "train_step", "m1"))
    assert outcome.verdict == "confirmed", outcome
    assert "leaked tracer: after the call history[0] = " in outcome.evidence
    assert "Tracer(float32[])" in outcome.evidence
    assert module.history == []  # restored


def test_tracer_leaked_into_an_attribute(tmp_path):
    module = load(tmp_path, MUTATION)
    outcome = confirm(make_subject(module, "JAX303", "set_scale", "m3"))
    assert outcome.verdict == "confirmed", outcome
    assert "config.scale = " in outcome.evidence
    assert module.config.scale == 1.0


def test_plain_counter_changes_once_at_trace_time(tmp_path):
    module = load(tmp_path, MUTATION)
    outcome = confirm(make_subject(module, "JAX303", "counted", "m2"))
    assert outcome.verdict == "confirmed", outcome
    assert "`calls` changed once, at trace time: 0 → 1 on the first call, unchanged on the second" in outcome.evidence
    assert module.calls == 0


FACTORIES = """
import jax
import jax.numpy as jnp


def make_accumulator():
    total = jnp.zeros(())

    @jax.jit
    def add(x):
        nonlocal total
        total = total + x  # m1
        return total

    return add


def make_step(lr):
    def step(w, g):
        print("compiling step")  # p1
        return w - lr * g

    return jax.jit(step)
"""


def test_factory_product_is_run(tmp_path):
    module = load(tmp_path, FACTORIES)
    mutation = confirm(make_subject(module, "JAX303", "make_accumulator", "m1",
                                    inputs=Inputs(lambda: ((), {}), "no arguments")))
    assert mutation.verdict == "confirmed", mutation
    assert "leaked tracer: after the call total = " in mutation.evidence
    assert "on the function make_accumulator returns" in mutation.evidence
    printed = confirm(make_subject(module, "JAX301", "make_step", "p1", inputs=Inputs(lambda: ((0.1,), {}), "lr")))
    assert printed.verdict == "confirmed", printed
    assert "1 line on the first call, 0 on the second" in printed.evidence


def test_local_list_and_grad_counter_are_not_reproduced(tmp_path):
    module = load(tmp_path, MUTATION)
    local = confirm(make_subject(module, "JAX303", "stack_powers", "n1"))
    assert local.verdict == "not-reproduced", local
    assert "no tracer leaked" in local.evidence
    grad = confirm(make_subject(module, "JAX303", "counted_loss", "n2", mode="grad"))
    assert grad.verdict == "not-reproduced", grad
    assert "`evaluations` changed on both calls (0 → 1 → 2)" in grad.evidence


# -- JAX304 impure-call-in-traced ---------------------------------------------------------------
IMPURE = """
import logging
import time

import jax

logger = logging.getLogger(__name__)


@jax.jit
def stamped(x):
    return x * 2, time.time()  # i1


@jax.jit
def logged(x):
    logger.info("tracing with %s", x)  # i2
    return x + 1


def _log_value(value):
    logger.info("value %s", value)


@jax.jit
def callback_logged(x):
    jax.debug.callback(_log_value, x)  # n1
    return x + 1
"""


def test_clock_read_is_frozen_at_trace_time(tmp_path):
    module = load(tmp_path, IMPURE)
    outcome = confirm(make_subject(module, "JAX304", "stamped", "i1", message="`time.time()` inside a function"))
    assert outcome.verdict == "confirmed", outcome
    assert "`time.time` at line" in outcome.evidence
    assert "ran at trace time only: 1 time on the first call, 0 on the second" in outcome.evidence
    assert "while eager calls differ" in outcome.evidence


def test_logging_happens_once(tmp_path):
    module = load(tmp_path, IMPURE)
    outcome = confirm(make_subject(module, "JAX304", "logged", "i2", message="`logger.info(...)` inside a function"))
    assert outcome.verdict == "confirmed", outcome
    assert "1 log record emitted on the first call, 0 on the second" in outcome.evidence


def test_logging_through_a_callback_is_not_reproduced(tmp_path):
    module = load(tmp_path, IMPURE)
    outcome = confirm(make_subject(module, "JAX304", "callback_logged", "n1"))
    assert outcome.verdict == "not-reproduced", outcome
    assert "the second call still had an effect (1 log record" in outcome.evidence


# -- JAX501 jit-in-loop / JAX502 jit-of-fresh-closure -------------------------------------------
COMPILES = """
import jax
import jax.numpy as jnp


def sweep(x, factors):
    outs = []
    for f in factors:
        outs.append(jax.jit(lambda v: v * f)(x))  # c1
    return outs


def decorated(xs):
    out = []
    for x in xs:
        @jax.jit  # c2
        def step(v):
            return v * 2

        out.append(step(x))
    return out


hoisted_fn = jax.jit(lambda v: v + 1)


def hoisted(xs):
    return [hoisted_fn(x) for x in xs]  # n1


def predict(params, x):
    return jax.jit(lambda p, v: jnp.tanh(p * v))(params, x)  # c3


def named(x):
    return jax.jit(jnp.sin)(x)  # n2


for k in range(2):
    jax.jit(lambda v: v - k)(jnp.ones(2))  # c4
"""


def test_jit_of_a_lambda_in_a_loop_recompiles(tmp_path):
    module = load(tmp_path, COMPILES)
    outcome = confirm(make_subject(module, "JAX501", "sweep", "c1", mode=None, inputs=ones(3, 3)))
    assert outcome.verdict == "confirmed", outcome
    assert "jit(<lambda>) compiled 3 times for the same argument types" in outcome.evidence
    assert "over 3 iterations of the loop" in outcome.evidence


def test_decorated_def_in_a_loop_recompiles(tmp_path):
    module = load(tmp_path, COMPILES)
    outcome = confirm(make_subject(module, "JAX501", "decorated", "c2", mode=None))
    assert outcome.verdict == "confirmed", outcome
    assert "jit(step) compiled 3 times" in outcome.evidence


def test_module_level_loop_runs_the_module_again(tmp_path):
    module = load(tmp_path, COMPILES)
    outcome = confirm(make_subject(module, "JAX501", None, "c4"))
    assert outcome.verdict == "confirmed", outcome
    assert "compiled 2 times" in outcome.evidence and "over 2 iterations" in outcome.evidence


def test_hoisted_jit_is_not_reproduced(tmp_path):
    module = load(tmp_path, COMPILES)
    outcome = confirm(make_subject(module, "JAX501", "hoisted", "n1", mode=None, inputs=ones((3, 2))))
    assert outcome.verdict == "not-reproduced", outcome


def test_fresh_closure_compiles_on_every_call(tmp_path):
    module = load(tmp_path, COMPILES)
    outcome = confirm(make_subject(module, "JAX502", "predict", "c3", mode=None, inputs=ones(3, 3)))
    assert outcome.verdict == "confirmed", outcome
    assert "jit(<lambda>) compiled on every call of predict" in outcome.evidence
    assert "1 on the first call, 1 on the second" in outcome.evidence


def test_jit_of_a_module_function_is_cached(tmp_path):
    module = load(tmp_path, COMPILES)
    outcome = confirm(make_subject(module, "JAX502", "named", "n2", mode=None))
    assert outcome.verdict == "not-reproduced", outcome
    assert "the second call of named with the same inputs compiled nothing" in outcome.evidence


# -- JAX101-104 randomness ----------------------------------------------------------------------
RANDOM = """
import random

import jax
import jax.numpy as jnp
import numpy as np

SEED = 0


def legacy_init(n):
    key = jax.random.PRNGKey(SEED)
    w = jax.random.normal(key, (2,))
    b = jax.random.normal(key, (2,))  # r1
    return w, b


def split_per_iteration(key, x):
    for _ in range(3):
        key, sub = jax.random.split(key)
        x = x + jax.random.normal(sub, x.shape)  # n1
    return x


@jax.jit
def host_noise(x):
    return x + np.random.normal(size=x.shape)  # r2


@jax.jit
def jax_noise(x):
    return x + jax.random.normal(jax.random.key(0), x.shape) * random.random() * 0.0  # n2


def per_example(x):
    return x * random.random()  # r3


def noisy_batches(batches):
    out = []
    for x in batches:
        key = jax.random.key(0)  # r4
        out.append(x + jax.random.normal(key, x.shape))
    return out


def per_step_seed(batches):
    out = []
    for i, x in enumerate(batches):
        key = jax.random.key(i)  # n3
        out.append(x + jax.random.normal(key, x.shape))
    return out


def broadcast(key, xs):
    def add(x):
        return x + jax.random.normal(key, x.shape)  # r5

    return jax.vmap(add)(xs)


def add_noise(key, x):
    return x + jax.random.normal(key, x.shape)  # r6


def noisy_batch(key, xs):
    return jax.vmap(add_noise, in_axes=(None, 0))(key, xs)


def add_noise_mapped(key, x):
    return x + jax.random.normal(key, x.shape)  # n5


def noisy_batch_split(key, xs):
    return jax.vmap(add_noise_mapped)(jax.random.split(key, xs.shape[0]), xs)


def split_batch(key, xs):
    def add(k, x):
        return x + jax.random.normal(k, x.shape)  # n4

    return jax.vmap(add)(jax.random.split(key, xs.shape[0]), xs)
"""


def keyed(*shapes):
    return Inputs(make=lambda: ((jax.random.key(0), *(jnp.ones(s) for s in shapes)), {}), description="test")


def test_legacy_key_reuse_by_comparing_key_bits(tmp_path):
    module = load(tmp_path, RANDOM)
    outcome = confirm(make_subject(module, "JAX101", "legacy_init", "r1", mode=None,
                                   inputs=Inputs(lambda: ((2,), {}), "test")))
    assert outcome.verdict == "confirmed", outcome
    line = line_of(module, "r1")
    assert f"the key consumed by normal at line {line - 1} was consumed again by normal at line {line}" \
        in outcome.evidence
    assert outcome.evidence.endswith("same key bits; the two draws are identical")


def test_split_key_per_iteration_is_not_reuse(tmp_path):
    module = load(tmp_path, RANDOM)
    outcome = confirm(make_subject(module, "JAX101", "split_per_iteration", "n1", mode=None, inputs=keyed(3)))
    assert outcome.verdict == "not-reproduced", outcome


def test_host_rng_frozen_under_jit(tmp_path):
    module = load(tmp_path, RANDOM)
    outcome = confirm(make_subject(module, "JAX102", "host_noise", "r2"))
    assert outcome.verdict == "confirmed", outcome
    assert outcome.evidence.startswith("frozen draw: two calls returned the same")
    assert "while eager calls differ" in outcome.evidence


def test_host_rng_shared_across_a_vmap_batch(tmp_path):
    module = load(tmp_path, RANDOM)
    outcome = confirm(make_subject(module, "JAX102", "per_example", "r3", mode="vmap"))
    assert outcome.verdict == "confirmed", outcome
    assert "both got the same draw" in outcome.evidence


def test_host_draw_that_does_not_reach_the_result_is_not_reproduced(tmp_path):
    module = load(tmp_path, RANDOM)
    outcome = confirm(make_subject(module, "JAX102", "jax_noise", "n2"))
    assert outcome.verdict == "not-reproduced", outcome


def test_key_recreated_with_the_same_seed_in_a_loop(tmp_path):
    module = load(tmp_path, RANDOM)
    outcome = confirm(make_subject(module, "JAX103", "noisy_batches", "r4", mode=None))
    assert outcome.verdict == "confirmed", outcome
    assert "was the same in 3 of 3 iterations: 3 draws (normal at line" in outcome.evidence
    assert "3 of them identical" in outcome.evidence


def test_key_seeded_per_step_is_not_reproduced(tmp_path):
    module = load(tmp_path, RANDOM)
    outcome = confirm(make_subject(module, "JAX103", "per_step_seed", "n3", mode=None))
    assert outcome.verdict == "not-reproduced", outcome
    assert "different in each of 3 iterations" in outcome.evidence


def test_key_broadcast_to_every_vmap_element(tmp_path):
    module = load(tmp_path, RANDOM)
    outcome = confirm(make_subject(module, "JAX104", "broadcast", "r5", mode=None, inputs=keyed((4, 2))))
    assert outcome.verdict == "confirmed", outcome
    assert "ran inside vmap (a batch of 4) with a key that has no batch axis" in outcome.evidence


def test_key_broadcast_by_a_caller_is_run_through_the_caller(tmp_path):
    module = load(tmp_path, RANDOM)
    outcome = confirm(make_subject(module, "JAX104", "add_noise", "r6", mode="vmap", inputs=keyed(2)))
    assert outcome.verdict == "confirmed", outcome
    assert outcome.evidence.endswith("(run through its caller noisy_batch)")
    mapped = confirm(make_subject(module, "JAX104", "add_noise_mapped", "n5", mode="vmap", inputs=keyed(2)))
    assert mapped.verdict == "not-reproduced", mapped
    assert mapped.evidence.endswith("(run through its caller noisy_batch_split)")


def test_split_keys_under_vmap_are_not_reproduced(tmp_path):
    module = load(tmp_path, RANDOM)
    outcome = confirm(make_subject(module, "JAX104", "split_batch", "n4", mode=None, inputs=keyed((4, 2))))
    assert outcome.verdict == "not-reproduced", outcome
    assert "is batched: one key per element (a batch of 4)" in outcome.evidence


# -- robustness -----------------------------------------------------------------------------------
def test_failures_are_inconclusive_with_a_reason(tmp_path):
    module = load(tmp_path, PRINTS)
    no_inputs = make_subject(module, "JAX301", "step", "p1")
    no_inputs.inputs = None
    assert confirm(no_inputs).verdict == "inconclusive"
    assert "no inputs could be built" in confirm(no_inputs).evidence
    raising = make_subject(module, "JAX301", "step", "p1", inputs=Inputs(lambda: (("text", 1, 2), {}), "bad"))
    outcome = confirm(raising)
    assert outcome.verdict == "inconclusive"
    assert outcome.evidence.startswith("the call raised TypeError")
    assert "\n" not in outcome.evidence


def test_next_input_candidate_is_tried(tmp_path):
    module = load(tmp_path, PRINTS)
    subject = make_subject(module, "JAX301", "step", "p1", inputs=Inputs(lambda: ((), {}), "none"))
    subject.candidates = [subject.inputs, ones(2)]
    outcome = confirm(subject)
    assert outcome.verdict == "confirmed", outcome
    assert outcome.evidence.endswith("[inputs: test]")


MODULE_KEYS = """
import jax
import jax.numpy as jnp

legacy = jax.random.PRNGKey(0)
eval_noise = jax.random.normal(legacy, (2,))
train_noise = jax.random.normal(legacy, (2,))  # r1

key = jax.random.key(1)
shared = jax.vmap(lambda x: x + jax.random.normal(key, x.shape))(jnp.ones((3, 2)))  # r2
"""


def test_module_level_reuse_of_a_legacy_key(tmp_path):
    module = load(tmp_path, MODULE_KEYS)
    outcome = confirm(make_subject(module, "JAX101", None, "r1"))
    assert outcome.verdict == "confirmed", outcome
    assert "consumed again by normal at line" in outcome.evidence
    assert outcome.evidence.endswith("the two draws are identical")


def test_module_level_vmapped_lambda_is_run_with_the_module(tmp_path):
    module = load(tmp_path, MODULE_KEYS)
    lambda_ = Subject(code="JAX104", line=line_of(module, "r2"), path=module.__file__, message="", module=module,
                      function=lambda x: x, python_function=lambda x: x, qualname="<lambda>", inputs=ones(2),
                      trace_mode="vmap", source=inspect.getsource(module))
    outcome = confirm(lambda_)
    assert outcome.verdict == "confirmed", outcome
    assert "a batch of 3" in outcome.evidence


def test_cli_runtime_confirms_a_trace_time_print(tmp_path):
    import json
    import subprocess

    (tmp_path / "prints.py").write_text(textwrap.dedent('''
        import jax


        @jax.jit
        def step(x: jax.Array):
            print("x =", x)
            return x * 2
    '''), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "jaxlint", "check", "--runtime", "--no-cache", "--output-format",
                             "json", "prints.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    findings = json.loads(result.stdout)
    assert [(f["code"], f["line"]) for f in findings] == [("JAX301", 7)], result.stderr
    assert findings[0]["runtime"]["verdict"] == "confirmed", findings[0]["runtime"]
    assert "print ran at trace time only" in findings[0]["runtime"]["evidence"]
