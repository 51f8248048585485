"""What a confirmer reports: `Inconclusive`, `guarded` (which turns any failure into an inconclusive
outcome), and the one-line evidence text for values, errors and line spans."""
from __future__ import annotations

import dataclasses
import functools
import reprlib
from typing import Any, Callable

from ...missing import needs_package
from ...subject import Outcome, Subject
from .frames import same_file, source_paths
from .values import is_key, is_tracer, short_aval


_MAX_EVIDENCE = 400


class Inconclusive(Exception):
    """Raised inside a confirmer: the behaviour could not be exercised; the message says why."""


def one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_EVIDENCE else text[: _MAX_EVIDENCE - 1] + "…"


_short = reprlib.Repr()
_short.maxstring = 40
_short.maxother = 40
_short.maxlist = _short.maxtuple = _short.maxdict = _short.maxset = 4


def short(value: Any) -> str:
    """A short, one-line rendering of a value (arrays by their values when small)."""
    try:
        import numpy as np

        if is_tracer(value):
            return f"a tracer {type(value).__name__}({short_aval(value)})"
        if isinstance(value, (tuple, list)) and any(hasattr(v, "shape") for v in value):
            items = ", ".join(short(v) for v in value[:3]) + (", …" if len(value) > 3 else "")
            return f"({items})" if isinstance(value, tuple) else f"[{items}]"
        if hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, np.generic):
            if is_key(value):
                return f"key<{tuple(value.shape)}>"
            array = np.asarray(value)
            if array.ndim == 0:
                return f"{array.item():.6g}" if array.dtype.kind == "f" else str(array.item())
            if array.size <= 4:
                return one_line(np.array2string(array, precision=4, separator=" "))
            return f"{array.dtype}{list(array.shape)}"
        return one_line(_short.repr(value))
    except Exception:  # noqa: BLE001 - rendering must never fail a confirmer
        return f"<{type(value).__name__}>"


def guarded(confirm: Callable[[Subject], Outcome]) -> Callable[[Subject], Outcome]:
    """Turn every failure into an `inconclusive` outcome with a one-line reason; where the first input
    candidate gives no answer, try the next ones (at most three in all)."""

    def once(subject: Subject) -> Outcome:
        try:
            outcome = confirm(subject)
        except Inconclusive as reason:
            return Outcome("inconclusive", one_line(str(reason)))
        except ModuleNotFoundError as error:
            if not error.name:
                return Outcome("inconclusive", one_line(f"the call raised {describe_error(error, subject)}"))
            # an import inside the function: the same line as for a module's own missing import
            package = error.name.partition(".")[0]
            return Outcome("inconclusive", one_line(needs_package(package, package, describe_error(error, subject))))
        except (Exception, SystemExit) as error:  # noqa: BLE001 - user code may raise anything
            return Outcome("inconclusive", one_line(f"the call raised {describe_error(error, subject)}"))
        return Outcome(outcome.verdict, one_line(outcome.evidence))

    @functools.wraps(confirm)
    def run(subject: Subject) -> Outcome:
        first = once(subject)
        if first.verdict != "inconclusive" or subject.function is None or subject.inputs is None:
            return first
        others = [c for c in getattr(subject, "candidates", None) or [] if c is not subject.inputs][:2]
        for inputs in others:
            outcome = once(dataclasses.replace(subject, inputs=inputs))
            if outcome.verdict != "inconclusive":
                return Outcome(outcome.verdict, one_line(f"{outcome.evidence} [inputs: {inputs.description}]"))
        return first

    return run


def describe_error(error: BaseException, subject: Subject) -> str:
    """`TypeError: message (line 12)`, with the deepest line of the subject's file in the traceback."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    line = None
    tb = error.__traceback__
    paths = source_paths(subject)
    while tb is not None:
        if same_file(tb.tb_frame.f_code.co_filename, paths):
            line = tb.tb_lineno
        tb = tb.tb_next
    where = f" (line {line})" if line else ""
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return one_line(text[:200] + where)


def where(span: tuple[int, int]) -> str:
    return f"line {span[0]}" if span[0] == span[1] else f"lines {span[0]}-{span[1]}"
