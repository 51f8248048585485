"""Confirming the rules whose mistakes JAX turns into an exception (`check = "raises"` in their
catalogue entry, which names the exceptions).

The flagged function is run the way the static analysis says JAX runs it:
- traced abstractly (jit family, lax bodies, vmap, checkpoint …): `jax.jit(f).trace(...)`, which
  traces without compiling or running anything;
- under `grad` alone: `jax.vjp` over its floating-point arguments (concrete values, as `grad`
  sees them; `vjp` does not need a scalar output);
- not traced at all (JAX401/JAX403 in plain code): an ordinary call.
A finding is confirmed when JAX raises one of the rule's predicted exceptions and the innermost
frame of the flagged function in the traceback is on the flagged line. The predictions were
checked against JAX (see tests/fixtures/*: RUNTIME_CHECKS); a plain `TypeError`/`IndexError`
must also carry JAX's message (the entry's `message` pattern), so an unrelated mistake on the
same line is not taken for it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

from .subject import Inputs, Outcome, Subject, runnable_inputs
from .tracebacks import caught, describe, lines_run, raised_at, raised_on

ABSTRACT_MODES = ("jit", "lax", "vmap", "abstract")


#: What a rule predicts: (exception class name in the MRO, message pattern or None), from the
#: `raises` of its catalogue entry.
Raises = Sequence[Tuple[str, Optional[str]]]


def predicted(raises: Raises, exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    for name, pattern in raises:
        if name in names and (pattern is None or re.search(pattern, str(exc))):
            return True
    return False


@dataclass
class Run:
    """One call of the subject with one set of inputs."""

    how: str  # "jax.jit trace", "jax.vjp", "a plain call"
    error: BaseException | None
    lines: set[int]
    #: exceptions raised in the file during the call that the code itself caught
    caught: list[BaseException] = field(default_factory=list)


def how_traced(subject: Subject) -> str:
    modes = subject.extra.get("modes", [])
    if any(m in modes for m in ABSTRACT_MODES):
        return "jax.jit trace"
    if "grad" in modes:
        return "jax.vjp"
    return "a plain call"


def run(subject: Subject, inputs: Inputs, cache: dict | None = None) -> Run:
    """Call the subject once as JAX would; cached per function, inputs and mode."""
    how = how_traced(subject)
    key = (subject.qualname, inputs.description, how)
    if cache is not None and key in cache:
        return cache[key]
    import jax

    fn = _fresh(subject.python_function)
    error = None
    raised: list[BaseException] = []
    with lines_run(subject.path, raised) as lines:
        try:
            args, kwargs = inputs.make()
            if how == "jax.jit trace":
                jitted = jax.jit(fn, static_argnames=inputs.static_argnames or None)
                trace = getattr(jitted, "trace", None) or jitted.lower  # older JAX: lower traces too
                trace(*args, **kwargs)
            elif how == "jax.vjp":
                _vjp(jax, fn, args, kwargs)
            else:
                fn(*args, **kwargs)
        except BaseException as exc:  # noqa: B036 - SystemExit from user code is evidence too
            error = exc
    result = Run(how, error, set(lines), caught(raised, error))
    if cache is not None:
        cache[key] = result
    return result


def _fresh(fn):
    """A new function object for a plain function: JAX caches traces per function, and the
    program's own call of it (recorded earlier) must not stand in for this trace."""
    import types

    if type(fn) is not types.FunctionType:
        return fn
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__dict__.update(fn.__dict__)
    copy.__qualname__ = fn.__qualname__
    return copy


def _vjp(jax, fn, args: tuple, kwargs: dict) -> None:
    """Differentiate with respect to the floating-point array arguments, the others held fixed."""
    import jax.numpy as jnp

    positions = [i for i, a in enumerate(args)
                 if hasattr(a, "dtype") and jnp.issubdtype(a.dtype, jnp.inexact)]
    if not positions:
        fn(*args, **kwargs)
        return

    def partial(*diff):
        full = list(args)
        for index, value in zip(positions, diff):
            full[index] = value
        return fn(*full, **kwargs)

    jax.vjp(partial, *(args[i] for i in positions))


def confirm(subject: Subject, raises: Raises, cache: dict | None = None) -> Outcome:
    """confirmed / not-reproduced / inconclusive for a finding whose rule predicts that JAX raises
    one of `raises`."""
    candidates = runnable_inputs(subject)
    if isinstance(candidates, Outcome):
        return candidates
    span = (subject.line, max(subject.end_line, subject.line))
    within = subject.function_lines
    clean: list[tuple[Inputs, Run]] = []
    failed: list[tuple[Inputs, Run]] = []
    for inputs in candidates:
        result = run(subject, inputs, cache)
        handled = _caught_here(result, raises, subject.path, span, within)
        if handled is not None:
            line = raised_at(handled, subject.path, within)
            return Outcome("confirmed", f"{type(handled).__name__} at line {line}, caught by the code "
                                        f"({_through(result.how, subject)}; {inputs.description})")
        if result.error is None:
            clean.append((inputs, result))
            if inputs.settles:
                break
            continue
        if predicted(raises, result.error) and raised_on(result.error, subject.path, span, within):
            line = raised_at(result.error, subject.path, within)
            return Outcome("confirmed", f"{type(result.error).__name__} at line {line} "
                                        f"({_through(result.how, subject)}; {inputs.description})")
        failed.append((inputs, result))
    if clean:
        return _clean(subject, clean)
    inputs, result = failed[0]
    first = raised_at(result.error, subject.path, within) if predicted(raises, result.error) else None
    if first is not None and not span[0] <= first <= span[1]:
        # Another line of the function raises the same kind of error before the trace gets here.
        return Outcome("inconclusive", f"{type(result.error).__name__} at line {first} stops "
                                       f"{_through(result.how, subject)} first ({inputs.description}), before "
                                       f"line {subject.line}: fix line {first}, then check this line again")
    more = f" (and {len(failed) - 1} other input set{'s' if len(failed) > 2 else ''})" if len(failed) > 1 else ""
    return Outcome("inconclusive", f"no input set reached the predicted error: {_through(result.how, subject)} with "
                                   f"{inputs.description} raised {describe(result.error, subject.path, within)}{more}")


def _clean(subject: Subject, clean: list[tuple[Inputs, Run]]) -> Outcome:
    """No input set raised what the rule predicts. `not-reproduced` only when the flagged line ran
    under the transform the finding names, with inputs that stand for the transformed call;
    anything short of that is inconclusive and says what would settle it."""
    line = subject.line
    reached = [(inputs, result) for inputs, result in clean if line in result.lines]
    standing = [(inputs, result) for inputs, result in reached if not inputs.plain_call and inputs.from_caller]
    if standing:
        inputs, result = standing[0]
        verb = "traced" if result.how != "a plain call" else "ran"
        return Outcome("not-reproduced", f"line {line} {verb} cleanly with {_through(result.how, subject)} "
                                         f"({inputs.description})")
    guessed = [(inputs, result) for inputs, result in reached if not inputs.plain_call]
    if guessed:
        inputs, result = guessed[0]
        verb = "traced" if result.how != "a plain call" else "ran"
        return Outcome("inconclusive", f"line {line} {verb} cleanly with {_through(result.how, subject)} "
                                       f"({inputs.description}), but these inputs are guesses: {_settle(subject)}")
    if reached:
        inputs, result = reached[0]
        return Outcome("inconclusive", f"line {line} traced cleanly only with the arguments of a plain call "
                                       f"({inputs.description}), which {_names(subject)} never receives; "
                                       f"declare example inputs for `{subject.qualname}` to check it")
    inputs, result = clean[0]
    return Outcome("inconclusive", f"line {line} was not reached: {_through(result.how, subject)} with "
                                   f"{inputs.description} ran cleanly without it; declare example inputs for "
                                   f"`{subject.qualname}` that reach it")


def _settle(subject: Subject) -> str:
    """What settles a finding that guessed inputs could not: inputs a real caller passes."""
    return (f"declare example inputs for `{subject.qualname}`, or call it from the module, its `__main__` "
            f"block or a test, to settle it")


def _names(subject: Subject) -> str:
    transforms = [t for t in subject.extra.get("transforms", []) if not t.startswith("called from")]
    return f"the `{transforms[0]}` transform" if transforms else "the transformed function"


def _caught_here(result: Run, raises: Raises, path: str, span: tuple[int, int],
                 within: tuple[int, int] | None) -> BaseException | None:
    """A predicted exception raised at the flagged line that the code itself caught: the user's
    `try: x[0] = 1 / except TypeError:` still shows JAX raising what the finding says."""
    if result.error is not None and predicted(raises, result.error) and \
            raised_on(result.error, path, span, within):
        return None  # the escaping error confirms on its own
    return next((error for error in result.caught
                 if predicted(raises, error) and raised_on(error, path, span, within)), None)


def _through(how: str, subject: Subject) -> str:
    """`a plain call of make()` when the flagged function is reached through the one defining it."""
    if not subject.extra.get("inner_qualname"):
        return how
    caller = "its caller " if subject.extra.get("through_caller") else ""
    return f"{how} of {caller}{subject.qualname}()"
