"""JAX301 print-in-traced and JAX304 impure-call-in-traced: the effect happens while JAX traces, not
on later calls that reuse the compiled code."""
from __future__ import annotations

import ast
import logging
import re
import sys
import time
from typing import Any

from ..subject import Outcome, Subject
from .support.calls import call, inputs_repeat, make_args, printed_lines, quiet_io
from .support.entry import clear_trace_cache, traced_entry
from .support.frames import same_file, source_paths
from .support.outcomes import Inconclusive, guarded, short, where
from .support.source import statement_at, statement_span, tree_of
from .support.statement_counter import StatementCounter
from .support.values import leaves_equal


def _twice(subject: Subject, span: tuple[int, int], extra: Any = None) -> tuple[Any, Any, list[int], Any]:
    """Trace-and-call, then call again with like inputs; count the flagged statement's runs each time."""
    entry = traced_entry(subject)
    subject = entry.subject
    clear_trace_cache(entry.call, subject)
    records, counts = [], []
    for _ in range(2):
        with StatementCounter(subject, span) as counter:
            if extra is not None:
                extra.start()
            try:
                records.append(call(subject, entry.call))
            finally:
                if extra is not None:
                    extra.stop()
        counts.append(counter.count)
    inputs_repeat(subject, records[0], records[1])
    return entry, records, counts, extra


@guarded
def confirm_print(subject: Subject) -> Outcome:
    span = statement_span(subject)
    entry, (first, second), (ran1, ran2), _ = _twice(subject, span)
    subject = entry.subject
    lines1, lines2 = printed_lines(first), printed_lines(second)
    at = f"the print at {where(span)}"
    if ran1 == 0:
        raise Inconclusive(f"{at} did not run with these inputs ({subject.inputs.description})")
    if ran2 or lines2:
        return Outcome("not-reproduced", f"{at} ran {ran1} and {ran2} times on two calls, printing {lines1} and "
                                         f"{lines2} lines ({entry.how}): output on every call")
    tracer = " and showed a tracer" if any(t in first.stdout for t in ("Traced<", "Tracer(")) else ""
    return Outcome("confirmed", f"print ran at trace time only{tracer}: {lines1} line{'s' * (lines1 != 1)} on the "
                                f"first call, {lines2} on the second ({at}, {entry.how})")


_CLOCK_HINTS = ("time", "perf_counter", "monotonic", "process_time", "now", "today", "utcnow", "clock")


_QUOTED = re.compile(r"^`([^`]+?)(?:\(\.*\))?`")


def _called_name(subject: Subject) -> str:
    """The impure call the finding names (`time.time`, `os.environ`), else the first call at the line."""
    match = _QUOTED.match(subject.message or "")
    if match:
        return match.group(1)
    node = statement_at(tree_of(subject), subject.line)
    if node is None:
        return "the call"
    for call_node in ast.walk(node):
        if isinstance(call_node, ast.Call) and call_node.lineno == subject.line:
            try:
                return ast.unparse(call_node.func)
            except Exception:  # noqa: BLE001
                break
    return "the call"


class _LogCapture:
    """Catches every log record emitted from the subject's file while active (levels opened to DEBUG)."""

    def __init__(self, subject: Subject, span: tuple[int, int]):
        self.paths = source_paths(subject)
        self.span = span
        self.counts: list[int] = []  # records logged at the span, per call
        self.anywhere: list[int] = []  # records logged from anywhere in the file, per call
        self._handler = None
        self._level = None

    def start(self) -> None:
        capture = self
        self.counts.append(0)
        self.anywhere.append(0)

        class Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if same_file(record.pathname, capture.paths):
                    capture.anywhere[-1] += 1
                    if capture.span[0] <= record.lineno <= capture.span[1]:
                        capture.counts[-1] += 1

        root = logging.getLogger()
        self._handler = Handler(level=logging.DEBUG)
        self._level = root.level
        self._disabled = logging.root.manager.disable
        logging.disable(logging.NOTSET)
        root.addHandler(self._handler)
        root.setLevel(logging.DEBUG)

    def stop(self) -> None:
        root = logging.getLogger()
        root.removeHandler(self._handler)
        root.setLevel(self._level)
        logging.disable(self._disabled)


class _SleepCap:
    """Caps sleeps called from the subject's file at 50 ms, so a confirmer never waits long."""

    def __init__(self, subject: Subject):
        self.paths = source_paths(subject)
        self._original = time.sleep

    def start(self) -> None:
        original, paths = self._original, self.paths

        def sleep(seconds: float) -> None:
            caller = sys._getframe(1).f_code.co_filename
            original(min(float(seconds), 0.05) if same_file(caller, paths) else seconds)

        time.sleep = sleep

    def stop(self) -> None:
        time.sleep = self._original


class _Both:
    def __init__(self, *parts: Any):
        self.parts = parts

    def start(self) -> None:
        for part in self.parts:
            part.start()

    def stop(self) -> None:
        for part in reversed(self.parts):
            part.stop()


def _eager_pair(subject: Subject) -> tuple[Any, Any] | None:
    """Two eager evaluations a moment apart: whether the clock reaches the result at all."""
    import io

    import jax

    plain = subject.python_function or subject.function
    results = []
    try:
        for _ in range(2):
            args, kwargs = make_args(subject)
            with quiet_io(io.StringIO(), io.StringIO()):  # the plain body: it reads the clock every call
                results.append(jax.block_until_ready(plain(*args, **kwargs)))
            time.sleep(0.002)
    except Exception:  # noqa: BLE001 - the extra evidence is optional
        return None
    return results[0], results[1]


@guarded
def confirm_impure(subject: Subject) -> Outcome:
    span = statement_span(subject)
    name = _called_name(subject)
    logs = _LogCapture(subject, span)
    t0 = time.time()
    entry, (first, second), (ran1, ran2), _ = _twice(subject, span, _Both(logs, _SleepCap(subject)))
    subject = entry.subject
    at = f"`{name}` at {where(span)}"
    if ran1 == 0:
        raise Inconclusive(f"{at} did not run with these inputs ({subject.inputs.description})")
    if ran2:
        return Outcome("not-reproduced", f"{at} ran on both calls ({ran1} and {ran2} times, {entry.how}): "
                                         f"the body is not cached")
    repeated = []
    if logs.anywhere[1]:
        repeated.append(f"{logs.anywhere[1]} log record{'s' * (logs.anywhere[1] != 1)}")
    if printed_lines(second):
        repeated.append(f"{printed_lines(second)} printed line{'s' * (printed_lines(second) != 1)}")
    if repeated:
        return Outcome("not-reproduced", f"{at} ran on the first call only, but the second call still had an effect "
                                         f"({', '.join(repeated)}; {entry.how})")
    details = [f"{ran1} time{'s' * (ran1 != 1)} on the first call, 0 on the second"]
    if logs.counts and logs.counts[0]:
        details.append(f"{logs.counts[0]} log record{'s' * (logs.counts[0] != 1)} emitted on the first call, "
                       f"{logs.counts[1]} on the second")
    if name.split(".")[-1] in _CLOCK_HINTS and leaves_equal(first.result, second.result):
        eager = _eager_pair(subject)
        if eager is not None and not leaves_equal(*eager):
            details.append(f"both calls returned {short(second.result)} though {time.time() - t0:.3f} s passed, "
                           f"while eager calls differ ({short(eager[0])} vs {short(eager[1])})")
    return Outcome("confirmed", f"{at} ran at trace time only: {'; '.join(details)} ({entry.how})")
