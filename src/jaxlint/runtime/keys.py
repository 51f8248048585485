"""Confirming JAX101 (a PRNG key consumed twice) with JAX's own key-reuse checker.

The function is called as plain Python under `jax.debug_key_reuse(True)`, with typed keys
(`jax.random.key(0)`) for its key parameters. Plain calls, because under `jit` the checker only
reports "argument 0 is already consumed" at the function boundary, with no line; called plainly,
each `jax.random` function checks its key and the traceback points at the second consumption.

JAX's checker does not track legacy `jax.random.PRNGKey` (uint32) keys. A function that makes
them itself cannot be confirmed this way; its verdict is left to the behaviour confirmers
(draw comparison) when they exist, else it is inconclusive.
"""
from __future__ import annotations

import re

from .subject import Outcome, Subject, runnable_inputs
from .tracebacks import describe, lines_run, raised_at, raised_on


def confirm(subject: Subject) -> Outcome:
    candidates = runnable_inputs(subject)
    if isinstance(candidates, Outcome):
        return candidates
    import jax

    span = (subject.line, max(subject.end_line, subject.line))
    within = subject.function_lines
    clean, failed = [], []
    for inputs in candidates:
        with lines_run(subject.path) as lines, jax.debug_key_reuse(True):
            try:
                args, kwargs = inputs.make()
                subject.python_function(*args, **kwargs)
            except BaseException as exc:  # noqa: B036 - anything the user's code raises is evidence
                error = exc
            else:
                error = None
        if error is None:
            clean.append((inputs, set(lines)))
            if inputs.settles:
                break
            continue
        if type(error).__name__ == "KeyReuseError" and raised_on(error, subject.path, span, within):
            line = raised_at(error, subject.path, within)
            return Outcome("confirmed", f"KeyReuseError at line {line} (jax.debug_key_reuse; {inputs.description})")
        loop = _loop_running(subject, raised_at(error, subject.path, within)) \
            if type(error).__name__ == "KeyReuseError" else None
        if loop is not None:
            return Outcome("confirmed", f"KeyReuseError at line {loop}, the lax loop whose body draws at line "
                                        f"{subject.line} (jax.debug_key_reuse checks a loop's body at the loop; "
                                        f"{inputs.description})")
        failed.append((inputs, error))
    if clean:
        subject.inputs = clean[0][0]  # for the behaviour confirmer that may run next: inputs that work
    if legacy_keys(subject):
        return Outcome("inconclusive", "the function makes legacy jax.random.PRNGKey keys, which JAX's "
                                       "key-reuse checker does not track")
    if clean:
        reached = sorted(((inputs, lines) for inputs, lines in clean if subject.line in lines),
                         key=lambda run: not run[0].from_caller)  # a real caller's inputs first
        if not reached:
            inputs, _ = clean[0]
            return Outcome("inconclusive", f"line {subject.line} was not reached: a call with {inputs.description} "
                                           f"ran cleanly without it; declare example inputs for "
                                           f"`{subject.qualname}` that reach it")
        inputs, _ = reached[0]
        unseen = _consumer_unseen(subject)
        if unseen is not None:
            return Outcome("inconclusive", f"line {subject.line} ran cleanly under jax.debug_key_reuse "
                                           f"({inputs.description}), but the key was first consumed by {unseen}, "
                                           f"{UNSEEN_CONSUMER}; the finding stands unconfirmed")
        if not inputs.from_caller:
            return Outcome("inconclusive", f"line {subject.line} ran cleanly under jax.debug_key_reuse "
                                           f"({inputs.description}), but these inputs are guesses: declare example "
                                           f"inputs for `{subject.qualname}`, or call it from the module, its "
                                           f"`__main__` block or a test, to settle it")
        return Outcome("not-reproduced", f"line {subject.line} ran cleanly under jax.debug_key_reuse "
                                         f"({inputs.description})")
    inputs, error = failed[0]
    return Outcome("inconclusive", f"no input set reached the key reuse: a plain call with {inputs.description} "
                                   f"raised {describe(error, subject.path, within)}")


#: Evidence of a clean run whose first consumer neither JAX's checker nor a draw comparison sees.
UNSEEN_CONSUMER = "which JAX's checker may not count as a use of it"
_CONSUMED = re.compile(r"consumed at line (\d+) by `([^`]+)`")
_RANDOM = re.compile(r"^(jax\.random|jr|jrandom|random)\.")


def _consumer_unseen(subject: Subject) -> str | None:
    """"`net.init` (line 20)" when the finding's first consumer is a library's method rather than
    a `jax.random` function: a model's `init` or `apply` may turn the key into raw bits or fold
    it in ways the checker does not count as a use, so a clean run proves nothing there."""
    match = _CONSUMED.search(subject.message)
    if match is None or _RANDOM.match(match.group(2)) or "." not in match.group(2):
        return None
    return f"`{match.group(2)}` (line {match.group(1)})"


def legacy_keys(subject: Subject) -> bool:
    """Whether the function's own source makes legacy keys (`PRNGKey(...)`)."""
    if subject.function_lines is None:
        return "PRNGKey" in subject.source
    first, last = subject.function_lines
    return "PRNGKey" in "\n".join(subject.source.splitlines()[first - 1:last])


def _loop_running(subject: Subject, line: int | None) -> int | None:
    """`line` when it calls a lax loop (`lax.fori_loop`, `scan`, `while_loop`) after the flagged
    line, in the same function: a body drawing from a key of the code around it is checked when
    the loop traces it, and the checker's error points at the loop, not at the draw."""
    if line is None or line <= subject.line or subject.function_lines is None:
        return None
    first, last = subject.function_lines
    if not first <= subject.line < line <= last:
        return None
    text = subject.source.splitlines()[line - 1]
    return line if any(f"{name}(" in text for name in ("fori_loop", "scan", "while_loop")) else None
