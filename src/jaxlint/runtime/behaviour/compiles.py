"""JAX501 jit-in-loop and JAX502 jit-of-fresh-closure: count XLA compilations with the same argument
types — over the iterations of the loop, or over two calls of the enclosing function."""
from __future__ import annotations

from collections import Counter

from ..subject import Outcome, Subject
from .support.calls import call, inputs_repeat
from .support.compile_recorder import Compile, CompileRecorder
from .support.entry import require_inputs, runner
from .support.outcomes import Inconclusive, guarded, where
from .support.source import enclosing_loop_span, enclosing_scope, scope_span, statement_span
from .support.statement_counter import StatementCounter


def _in(span: tuple[int, int], compiles: list[Compile]) -> list[Compile]:
    return [c for c in compiles if c.line is not None and span[0] <= c.line <= span[1]]


def _group(compiles: list[Compile]) -> tuple[tuple[str, str], int] | None:
    counts = Counter((c.fun_name, c.shapes) for c in compiles)
    return counts.most_common(1)[0] if counts else None


def _types(shapes: str) -> str:
    return f" for the same argument types {shapes}" if shapes else " for the same argument types"


@guarded
def confirm_jit_in_loop(subject: Subject) -> Outcome:
    run, _ = runner(subject)
    span = statement_span(subject)
    loop = enclosing_loop_span(subject)
    if loop is None:
        raise Inconclusive(f"no loop around {where(span)} inside {subject.qualname or 'the module'}")
    with StatementCounter(subject, span) as counter, CompileRecorder(subject) as recorder:
        run()
    iterations = counter.count
    inputs = f" ({subject.inputs.description})" if subject.inputs is not None else ""
    if iterations == 0:
        raise Inconclusive(f"{where(span)} did not run with these inputs{inputs}")
    # Compiles caused at the flagged line; where the jitted function is called on a later line of the
    # loop body (`fn = jax.jit(...)` then `fn(x)`, or a decorated def), those of the loop body.
    own = _in(span, recorder.compiles) or _in(loop, recorder.compiles)
    top = _group(own)
    loop_text = f"the loop at {where(loop)}"
    if iterations < 2:
        raise Inconclusive(f"{where(span)} ran once with these inputs{inputs}: "
                           f"one iteration cannot show a recompile")
    if top is None:
        return Outcome("not-reproduced", f"no compilation in {loop_text} over {iterations} iterations: "
                                         f"JAX reused compiled code")
    (fun_name, shapes), count = top
    if count >= 2:
        return Outcome("confirmed", f"{fun_name} compiled {count} times{_types(shapes)} over {iterations} "
                                    f"iterations of {loop_text}")
    names = ", ".join(sorted({c.fun_name for c in own}))
    return Outcome("not-reproduced", f"over {iterations} iterations of {loop_text} each function compiled at most "
                                     f"once ({names}): JAX reused the compiled code (only the wrapper is rebuilt "
                                     f"each iteration)")


@guarded
def confirm_fresh_closure(subject: Subject) -> Outcome:
    require_inputs(subject)
    span = statement_span(subject)
    scope = enclosing_scope(subject)
    body = scope_span(scope) if scope is not None else span
    records, counts = [], []
    for _ in range(2):
        with StatementCounter(subject, span) as counter, CompileRecorder(subject) as recorder:
            records.append(call(subject, subject.function))
        counts.append((counter.count, _in(body, recorder.compiles)))
    inputs_repeat(subject, records[0], records[1])
    (ran1, first), (ran2, second) = counts
    if ran1 == 0 or ran2 == 0:
        raise Inconclusive(f"{where(span)} did not run with these inputs ({subject.inputs.description})")
    name = subject.qualname or "the function"
    if not second:
        return Outcome("not-reproduced", f"the second call of {name} with the same inputs compiled nothing "
                                         f"({len(first)} compile{'s' * (len(first) != 1)} on the first): "
                                         f"JAX reused the compiled code")
    (fun_name, shapes), count = _group(second)
    again = sum(1 for c in first if (c.fun_name, c.shapes) == (fun_name, shapes))
    return Outcome("confirmed", f"{fun_name} compiled on every call of {name}{_types(shapes)}: {again} on the "
                                f"first call, {count} on the second")
