"""JAX102 stateful-rng-in-traced: a NumPy or stdlib draw in a traced body is taken once, at trace time:
traced calls repeat one value (or, under vmap, every element gets the same one) while eager calls differ."""
from __future__ import annotations

import contextlib
import io
import random
from typing import Any, Iterator

from ..subject import Outcome, Subject
from .support.calls import call, inputs_repeat, make_args, quiet_io
from .support.entry import clear_trace_cache, modes, runs_once, traced_entry
from .support.outcomes import Inconclusive, guarded, short, where
from .support.source import statement_span
from .support.statement_counter import StatementCounter
from .support.values import leaves_equal


@contextlib.contextmanager
def _host_rng_kept() -> Iterator[None]:
    """Leave NumPy's and the stdlib's global generators as they were."""
    import numpy as np

    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


def _eager(subject: Subject) -> Any:
    import jax

    plain = subject.python_function or subject.function
    args, kwargs = make_args(subject)
    with quiet_io(io.StringIO(), io.StringIO()):  # the plain body runs eagerly: its host draw runs every call
        return jax.block_until_ready(plain(*args, **kwargs))


def _twice_batched(subject: Subject) -> tuple[Any, Any, int]:
    """The plain function under a vmap stand-in, over a batch of two copies of the inputs."""
    import jax
    import jax.numpy as jnp

    args, kwargs = make_args(subject)
    if kwargs:
        raise Inconclusive("keyword inputs cannot be batched for the vmap stand-in")
    batched, axes = [], []
    for arg in args:
        if hasattr(arg, "shape") and hasattr(arg, "dtype"):
            batched.append(jnp.stack([arg, arg]))
            axes.append(0)
        else:
            batched.append(arg)
            axes.append(None)
    if 0 not in axes:
        raise Inconclusive("no array input to batch for the vmap stand-in")
    with quiet_io(io.StringIO(), io.StringIO()):
        out = jax.block_until_ready(jax.vmap(subject.python_function, in_axes=tuple(axes))(*batched))
    return jax.tree_util.tree_map(lambda leaf: leaf[0], out), jax.tree_util.tree_map(lambda leaf: leaf[1], out), 2


@guarded
def confirm_stateful_rng(subject: Subject) -> Outcome:
    span = statement_span(subject)
    entry = traced_entry(subject)
    subject = entry.subject
    with _host_rng_kept():
        eager1, eager2 = _eager(subject), _eager(subject)
        if leaves_equal(eager1, eager2):
            return Outcome("not-reproduced", f"two eager calls returned the same {short(eager1)}: the draw at "
                                             f"{where(span)} does not change the result with these inputs")
        if not runs_once(subject) and "vmap" in modes(subject) and entry.call is subject.python_function:
            row1, row2, size = _twice_batched(subject)
            if leaves_equal(row1, row2):
                return Outcome("confirmed", f"under a vmap stand-in over {size} identical elements both got the same "
                                            f"draw {short(row1)}, while eager calls differ ({short(eager1)} vs "
                                            f"{short(eager2)}): the draw at {where(span)} is taken once per trace")
            return Outcome("not-reproduced", f"under a vmap stand-in each element got its own draw "
                                             f"({short(row1)} vs {short(row2)})")
        clear_trace_cache(entry.call, subject)
        counts, records = [], []
        for _ in range(2):
            with StatementCounter(subject, span) as counter:
                records.append(call(subject, entry.call))
            counts.append(counter.count)
    inputs_repeat(subject, records[0], records[1])
    first, second = records
    if counts[0] == 0:
        raise Inconclusive(f"{where(span)} did not run with these inputs ({subject.inputs.description})")
    if leaves_equal(first.result, second.result):
        ran = f"; line {span[0]} ran {counts[0]} time{'s' * (counts[0] != 1)} then {counts[1]}"
        return Outcome("confirmed", f"frozen draw: two calls returned the same {short(first.result)} while eager calls "
                                    f"differ ({short(eager1)} vs {short(eager2)}){ran} ({entry.how})")
    return Outcome("not-reproduced", f"two calls returned different values ({short(first.result)} vs "
                                     f"{short(second.result)}): drawn on every call ({entry.how})")
