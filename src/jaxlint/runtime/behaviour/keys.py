"""Key confirmers, by recording what `jax.random` consumes: JAX101 prng-key-reuse (the fallback for
reuse JAX's checker cannot see, such as legacy uint32 keys), JAX103 key-recreated-in-loop and JAX104
key-broadcast-in-vmap."""
from __future__ import annotations

import contextlib
from collections import Counter
import dataclasses
import inspect
from typing import Any, Callable, Iterator

from ..subject import Outcome, Subject
from .support.calls import call
from .support.entry import rerun_module, runner, signature_params
from .support.key_recorder import Draw, KeyRecorder
from .support.outcomes import Inconclusive, guarded, short, where
from .support.source import enclosing_loop_span, line_set, statement_span, tree_of
from .support.values import leaves_equal


@contextlib.contextmanager
def _recording(subject: Subject, *, eager: bool) -> Iterator[KeyRecorder]:
    """Key-reuse checking off (this is the fallback that compares bits), jit off where keys must be
    concrete to be read."""
    import jax

    with contextlib.ExitStack() as stack:
        stack.enter_context(jax.debug_key_reuse(False))
        if eager:
            stack.enter_context(jax.disable_jit())
        yield stack.enter_context(KeyRecorder(subject))


def _record(subject: Subject, run: Callable[[], Any], times: int, lines: range) -> KeyRecorder:
    """Run and record; where the keys at the flagged lines were traced (a jitted body), run again with
    jit disabled so their bits can be read (slower: eager `jax.random` runs op by op)."""
    with _recording(subject, eager=False) as recorder:
        for _ in range(times):
            run()
    traced = [d for d in recorder.draws if d.at(lines) is not None and d.bits is None] or \
        [m for m in recorder.made if m.at(lines) is not None and m.bits is None]
    if not traced:
        return recorder
    with _recording(subject, eager=True) as recorder:
        for _ in range(times):
            run()
    return recorder


def _same_draw(a: Draw, b: Draw) -> bool:
    return a.sampler == b.sampler and a.shape_args == b.shape_args and a.output is not None \
        and b.output is not None and leaves_equal(a.output, b.output)


def _vmapping_callers(subject: Subject) -> Iterator[tuple[str, Callable[[], Any]]]:
    """Module-level functions that apply `vmap` to the subject's function (`jax.vmap(add_noise, …)`),
    each with a way to call it on probe inputs: the subject alone shows no batch."""
    import ast

    from ..inputs import candidates

    name = getattr(subject.python_function, "__name__", None)
    namespace = getattr(subject.module, "__dict__", {})
    for node in tree_of(subject).body:
        if not isinstance(node, ast.FunctionDef) or node.name == name:
            continue
        applies = any(isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Name)
                      and call.args[0].id == name and _called_name(call.func).endswith("vmap")
                      for call in ast.walk(node))
        caller = namespace.get(node.name)
        if not applies or not callable(caller):
            continue
        for inputs in candidates(signature_params(inspect.unwrap(caller)), None)[:4]:
            probe = dataclasses.replace(subject, function=caller, inputs=inputs)
            yield node.name, (lambda probe=probe: call(probe, probe.function))


def _called_name(func: Any) -> str:
    import ast

    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _module_lambda(subject: Subject) -> bool:
    return bool(subject.qualname) and subject.qualname.endswith("<lambda>") and "<locals>" not in subject.qualname


def _inputs(subject: Subject) -> str:
    return f" ({subject.inputs.description})" if subject.inputs is not None else ""


def _where(draw: Draw, lines: range) -> str:
    """`line 72 (in a call, at line 67)` when the draw happened in a function called from the line."""
    at = draw.at(lines) or draw.line
    return f"line {at}" if at == draw.line else f"line {at} (in a call, at line {draw.line})"


@guarded
def confirm_key_reuse(subject: Subject) -> Outcome:
    run, _ = runner(subject)
    span = statement_span(subject)
    lines = line_set(span)
    recorder = _record(subject, run, 1, lines)
    here = [d for d in recorder.draws if d.at(lines) is not None]
    if not here:
        raise Inconclusive(f"no key was consumed at {where(span)} with these inputs{_inputs(subject)}")
    if all(d.bits is None for d in here):
        raise Inconclusive(f"the keys consumed at {where(span)} were traced values, whose bits cannot be read")
    first_use: dict[bytes, Draw] = {}
    for draw in recorder.draws:
        if draw.bits is None:
            continue
        earlier = first_use.get(draw.bits)
        if earlier is not None and draw.at(lines) is not None:
            same = "; the two draws are identical" if _same_draw(earlier, draw) else ""
            return Outcome("confirmed", f"the key consumed by {earlier.sampler} at {_where(earlier, lines)} was "
                                        f"consumed again by {draw.sampler} at {_where(draw, lines)}: same key "
                                        f"bits{same}")
        first_use.setdefault(draw.bits, draw)
    return Outcome("not-reproduced", f"{len(here)} consumption{'s' * (len(here) != 1)} at {where(span)}, each of a "
                                     f"key not consumed before")


@guarded
def confirm_key_recreated(subject: Subject) -> Outcome:
    run, _ = runner(subject)
    span = statement_span(subject)
    lines = line_set(span)
    in_loop = enclosing_loop_span(subject) is not None
    # The loop is here: one run covers it. The loop is in a caller: two calls stand for two iterations.
    recorder = _record(subject, run, 1 if in_loop else 2, lines)
    made = [m for m in recorder.made if m.at(lines) is not None and m.bits is not None]
    runs = "iterations" if in_loop else "calls"
    if len(made) < 2:
        raise Inconclusive(f"the key at {where(span)} was made {len(made)} time{'s' * (len(made) != 1)} with these "
                           f"inputs{_inputs(subject)}: too few {runs} to compare")
    bits, count = Counter(m.bits for m in made).most_common(1)[0]
    if count < 2:
        return Outcome("not-reproduced", f"the key made at {where(span)} was different in each of {len(made)} {runs}")
    draws = [d for d in recorder.draws if d.bits == bits]
    if not draws:
        return Outcome("not-reproduced", f"the key made at {where(span)} was the same in {count} {runs} but "
                                         f"nothing drew from it")
    first = draws[0]
    identical = sum(1 for d in draws[1:] if _same_draw(first, d))
    drawn = f"{len(draws)} draws ({first.sampler} at line {first.line}) from the same key bits"
    if identical:
        drawn += f", {identical + 1} of them identical: {short(first.output)}"
    return Outcome("confirmed", f"the key made at {where(span)} was the same in {count} of {len(made)} {runs}: {drawn}")


@guarded
def confirm_key_broadcast(subject: Subject) -> Outcome:
    run, _ = runner(subject)
    span = statement_span(subject)
    lines = line_set(span)
    with _recording(subject, eager=False) as recorder:
        run()
    consumed = any(d.at(lines) is not None for d in recorder.draws)
    mapped = [d for d in recorder.draws if d.at(lines) is not None and d.batched is not None]
    via = ""
    if not mapped and _module_lambda(subject):
        # A lambda vmapped at module level, which the worker calls on its own: run the module's code,
        # which applies the vmap, instead.
        with _recording(subject, eager=False) as recorder:
            rerun_module(subject)
        mapped = [d for d in recorder.draws if d.at(lines) is not None and d.batched is not None]
    if not mapped and subject.python_function is not None:
        for caller, how in _vmapping_callers(subject):
            with _recording(subject, eager=False) as recorder:
                try:
                    how()
                except Exception:  # noqa: BLE001 - the caller did not run with probes: try the next
                    continue
            mapped = [d for d in recorder.draws if d.at(lines) is not None and d.batched is not None]
            if mapped:
                via = f" (run through its caller {caller})"
                break
    if not mapped:
        if not consumed:
            raise Inconclusive(f"no key was consumed at {where(span)} with these inputs{_inputs(subject)}")
        raise Inconclusive(f"the key at {where(span)} was consumed outside any vmap when calling "
                           f"{subject.qualname or 'the function'} (the vmap may be in a caller)")
    shared = [d for d in mapped if d.batched is False]
    if shared:
        d = shared[0]
        value = f"; the one draw {short(d.output)} is shared" if d.output is not None and d.bits is not None else ""
        size = f" (a batch of {d.axis_size})" if d.axis_size else ""
        return Outcome("confirmed", f"{d.sampler} at {_where(d, lines)} ran inside vmap{size} with a key that has no "
                                    f"batch axis: every element draws the same numbers{value}{via}")
    d = mapped[0]
    return Outcome("not-reproduced", f"the key consumed by {d.sampler} at {_where(d, lines)} inside vmap is batched: "
                                     f"one key per element (a batch of {d.axis_size}){via}")
