"""Calling user code: fresh inputs, captured output and an empty stdin, results waited for, and a
check that two calls got like inputs."""
from __future__ import annotations

import builtins
import contextlib
import io
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ...subject import Subject
from .outcomes import Inconclusive
from .values import leaves_equal


def block(value: Any) -> Any:
    import jax

    try:
        return jax.block_until_ready(value)
    except Exception:  # noqa: BLE001 - leaked tracers and plain objects in results
        return value


def effects_barrier() -> None:
    import jax

    try:
        jax.effects_barrier()
    except Exception:  # noqa: BLE001
        pass


@dataclass
class Call:
    args: tuple
    kwargs: dict
    result: Any = None
    stdout: str = ""
    stderr: str = ""


@contextlib.contextmanager
def quiet_io(stdout: io.StringIO, stderr: io.StringIO) -> Iterator[None]:
    """Capture what user code prints (the worker's own streams stay clean) and give it an empty stdin."""
    old_in, old_input = sys.stdin, builtins.input

    def no_input(prompt: str = "") -> str:
        sys.stdout.write(str(prompt))
        return ""

    sys.stdin, builtins.input = io.StringIO(""), no_input
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            yield
    finally:
        sys.stdin, builtins.input = old_in, old_input


def make_args(subject: Subject) -> tuple[tuple, dict]:
    assert subject.inputs is not None
    args, kwargs = subject.inputs.make()
    return tuple(args), dict(kwargs)


def call(subject: Subject, fn: Callable, args: tuple | None = None, kwargs: dict | None = None) -> Call:
    if args is None:
        args, kwargs = make_args(subject)
    record = Call(args, dict(kwargs or {}))
    out, err = io.StringIO(), io.StringIO()
    with quiet_io(out, err):
        record.result = block(fn(*record.args, **record.kwargs))
        effects_barrier()  # host callbacks (`jax.debug.print`) have printed by now
    record.stdout, record.stderr = out.getvalue(), err.getvalue()
    return record


def printed_lines(record: Call) -> int:
    return len((record.stdout + record.stderr).splitlines())


def inputs_repeat(subject: Subject, first: Call, second: Call) -> None:
    if not leaves_equal((first.args, first.kwargs), (second.args, second.kwargs)):
        raise Inconclusive("the inputs differ from one make() to the next, so calls cannot be compared")
