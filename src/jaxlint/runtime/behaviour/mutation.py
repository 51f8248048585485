"""JAX303 state-mutation-in-traced: a traced value left behind in outside state (a leaked tracer), or
a plain outside value changed once, at trace time, and not by later calls."""
from __future__ import annotations

import ast
import copy
import types
from typing import Any, Callable

from ..subject import Outcome, Subject
from .support.calls import call
from .support.entry import Entry, clear_trace_cache, flagged_line_is_direct, runs_once, traced_entry
from .support.outcomes import Inconclusive, guarded, short, where
from .support.source import statement_at, statement_span, tree_of
from .support.statement_counter import StatementCounter
from .support.values import find_tracers


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def target_name(subject: Subject) -> str | None:
    """The outside name the flagged statement changes: `x` in `x = …`, `x[k] = …`, `x.a = …`, `x.append(…)`."""
    node = statement_at(tree_of(subject), subject.line)
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = list(node.targets)
    elif node is not None:
        for child in ast.walk(node):
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                targets = [child.func.value]
                break
    for target in targets:
        for element in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]):
            name = _root(element)
            if name:
                return name
    return None


class _Holder:
    """Reads, snapshots and restores the value an outside name holds (a module global or a closure cell)."""

    def __init__(self, subject: Subject, name: str):
        self.name = name
        self.get: Callable[[], Any] | None = None
        self.set: Callable[[Any], None] | None = None
        fn = subject.python_function
        code = getattr(fn, "__code__", None)
        if code is not None and name in code.co_freevars and getattr(fn, "__closure__", None):
            cell = fn.__closure__[code.co_freevars.index(name)]
            self.get = lambda: cell.cell_contents
            self.set = lambda value: setattr(cell, "cell_contents", value)
            self.kind = "closure variable"
            return
        namespace = getattr(fn, "__globals__", None) or (vars(subject.module) if subject.module else None)
        if isinstance(namespace, dict) and name in namespace:
            self.get = lambda: namespace[name]
            self.set = lambda value: namespace.__setitem__(name, value)
            self.kind = "global"

    @property
    def known(self) -> bool:
        return self.get is not None

    def snapshot(self) -> tuple[Any, Any]:
        value = self.get()
        try:
            contents = copy.copy(vars(value)) if _is_object(value) else copy.copy(value)
        except Exception:  # noqa: BLE001
            contents = None
        return value, contents

    def restore(self, saved: tuple[Any, Any]) -> None:
        value, contents = saved
        try:
            self.set(value)
            if contents is None:
                return
            if isinstance(value, list) or type(value).__name__ == "deque":
                value.clear()
                value.extend(contents)
            elif isinstance(value, dict):
                value.clear()
                value.update(contents)
            elif isinstance(value, set):
                value.clear()
                value.update(contents)
            elif _is_object(value):
                vars(value).clear()
                vars(value).update(contents)
        except Exception:  # noqa: BLE001 - best effort
            pass


def _is_object(value: Any) -> bool:
    """An instance whose state is its attributes (containers, even subclassed, are not)."""
    return hasattr(value, "__dict__") and not isinstance(
        value, (types.ModuleType, type, types.FunctionType, dict, list, tuple, set, frozenset)) \
        and type(value).__name__ != "deque" and not hasattr(value, "shape")


def fingerprint(value: Any, depth: int = 3) -> Any:
    """A comparable picture of a plain value (containers and object attributes, a few levels deep)."""
    if isinstance(value, (int, float, complex, str, bytes, bool, type(None))):
        return value
    if depth <= 0:
        return ("id", id(value))
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), fingerprint(v, depth - 1)) for k, v in list(value.items())[:100]), len(value))
    if isinstance(value, (list, tuple)) or type(value).__name__ == "deque":
        return (type(value).__name__, tuple(fingerprint(v, depth - 1) for v in list(value)[:100]), len(value))
    if isinstance(value, (set, frozenset)):
        return ("set", len(value), tuple(sorted(repr(v) for v in list(value)[:100])))
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ("array", id(value))
    if _is_object(value):
        try:
            return ("object", fingerprint(dict(vars(value)), depth - 1))
        except TypeError:
            return ("id", id(value))
    return ("id", id(value))


def _render(value: Any) -> str:
    if _is_object(value):
        try:
            return f"{type(value).__name__}({short(dict(vars(value)))})"
        except TypeError:
            pass
    return short(value)


def _leak_entry(subject: Subject, entry: Entry) -> Entry:
    """Tracers leak the same way under every transform: where the exposed function is a plain one run
    eagerly (a vmap or grad body), look for leaks under a jax.jit stand-in."""
    if entry.stand_in or entry.call is not subject.python_function or not flagged_line_is_direct(subject):
        return entry
    import jax

    static = tuple(subject.inputs.static_argnames) if subject.inputs else ()
    jitted = jax.jit(entry.call, static_argnames=static) if static else jax.jit(entry.call)
    return Entry(jitted, "under a jax.jit stand-in for the leak check", stand_in=True)


@guarded
def confirm_mutation(subject: Subject) -> Outcome:
    import jax

    span = statement_span(subject)
    entry = traced_entry(subject)
    subject = entry.subject
    leak_entry = _leak_entry(subject, entry)
    name = target_name(subject)
    holder = _Holder(subject, name) if name else None
    saved = holder.snapshot() if holder and holder.known else None
    once = entry.stand_in or runs_once(subject)
    try:
        # 1. A traced value left in the named state, or in the result.
        clear_trace_cache(leak_entry.call, subject)
        with StatementCounter(subject, span) as counter:
            try:
                first = call(subject, leak_entry.call)
            except Exception as error:  # noqa: BLE001
                if type(error).__name__ == "UnexpectedTracerError":
                    return Outcome("confirmed", f"UnexpectedTracerError on the first call: "
                                                f"{str(error).strip().splitlines()[0]} ({leak_entry.how})")
                raise
        if counter.count == 0:
            raise Inconclusive(f"{where(span)} did not run with these inputs ({subject.inputs.description})")
        leaks = (find_tracers(holder.get(), name) if saved else []) + find_tracers(first.result, "the result")
        if leaks:
            more = f" (and {len(leaks) - 1} more)" if len(leaks) > 1 else ""
            return Outcome("confirmed", f"leaked tracer: after the call {leaks[0]}{more} ({leak_entry.how})")
        # 2. A plain value changed by the first call and not by the second.
        if saved:
            holder.restore(saved)
            clear_trace_cache(entry.call, subject)
            before, shown_before = fingerprint(holder.get()), _render(holder.get())
            call(subject, entry.call)
            middle, shown_middle = fingerprint(holder.get()), _render(holder.get())
            with StatementCounter(subject, span) as counter2:
                call(subject, entry.call)
            after = fingerprint(holder.get())
            if middle != before:
                if after == middle and counter2.count == 0 and once:
                    return Outcome("confirmed", f"`{name}` changed once, at trace time: {shown_before} → "
                                                f"{shown_middle} on the first call, unchanged on the second "
                                                f"({entry.how})")
                if after != middle:
                    return Outcome("not-reproduced", f"`{name}` changed on both calls ({shown_before} → "
                                                     f"{shown_middle} → {_render(holder.get())}): the body runs "
                                                     f"on every call ({entry.how})")
            holder.restore(saved)
        # 3. Nothing visible in the named state: JAX's leak checker looks for references anywhere.
        clear_trace_cache(leak_entry.call, subject)
        try:
            with jax.checking_leaks():
                call(subject, leak_entry.call)
        except Exception as error:  # noqa: BLE001
            text = str(error)
            if "Leaked" in text or type(error).__name__ == "UnexpectedTracerError":
                referrer = [line.strip() for line in text.splitlines() if "is referred to by" in line]
                return Outcome("confirmed", f"jax.checking_leaks: {text.strip().splitlines()[0]}"
                                            f"{'; ' + referrer[-1] if referrer else ''} ({leak_entry.how})")
            raise
        watched = holder.get() if saved else None
        if saved and _empty(watched):
            # Clearing or popping from an empty container changes nothing: this state cannot show it.
            return Outcome("inconclusive", f"{where(span)} ran, but `{name}` ({_render(watched)}) is empty, so "
                                           f"a mutation of it shows no change with this state ({entry.how}); "
                                           f"run the program to see it")
        state = (f"`{name}` ({_render(watched)}) showed no change the calls could see" if saved
                 else f"`{name}` could not be found outside to watch" if name else "no outside target was found")
        return Outcome("not-reproduced", f"{where(span)} ran, but no tracer leaked and {state} ({entry.how})")
    finally:
        if saved:
            holder.restore(saved)


def _empty(value) -> bool:
    """A container with nothing in it (a dict, list or set the program fills later)."""
    try:
        return isinstance(value, (dict, list, set)) and len(value) == 0
    except Exception:  # noqa: BLE001 - a user type with a broken __len__
        return False
