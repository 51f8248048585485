"""JAX302 global-read-in-traced: after the module global changes, the cached trace still computes with
the old value, while an eager evaluation of the same Python function sees the new one."""
from __future__ import annotations

import ast
import re
import types
from typing import Any

from ..subject import Outcome, Subject
from .support.calls import call, inputs_repeat, make_args, quiet_io
from .support.entry import traced_entry
from .support.outcomes import Inconclusive, guarded, short
from .support.source import statement_at, tree_of
from .support.values import leaves_equal

_NAMED = re.compile(r"^`([A-Za-z_][A-Za-z0-9_]*)` is a global variable")
_ATTRIBUTE = re.compile(r"^`[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*` is replaced by")


def _namespace(subject: Subject) -> dict:
    fn = subject.python_function
    namespace = getattr(fn, "__globals__", None)
    if isinstance(namespace, dict):
        return namespace
    if subject.module is not None:
        return vars(subject.module)
    raise Inconclusive("the module's globals are not available")


def global_name(subject: Subject, namespace: dict) -> str:
    """The global the finding names: from the message, else the one global read at the flagged line."""
    if _ATTRIBUTE.match(subject.message or ""):
        raise Inconclusive("the stale value is an attribute of an object the program builds and changes; "
                           "runtime mode rebinds module globals only")
    match = _NAMED.match(subject.message or "")
    if match and match.group(1) in namespace:
        return match.group(1)
    if match:
        raise Inconclusive(f"`{match.group(1)}` is bound only when the file runs as a script (in its "
                           f"`__main__` block): the imported module has no such global to rebind; run the "
                           f"script to see the stale value")
    node = statement_at(tree_of(subject), subject.line)
    names = []
    if node is not None:
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load) and child.lineno == subject.line \
                    and child.id in namespace and _changeable(namespace[child.id]):
                names.append(child.id)
    names = list(dict.fromkeys(names))
    if len(names) != 1:
        raise Inconclusive("could not tell which global the finding names")
    return names[0]


def _changeable(value: Any) -> bool:
    return not isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)) \
        and not callable(value)


def changed(value: Any) -> Any:
    """A different value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float, complex)):
        return value + 1
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        kind = getattr(value.dtype, "kind", "")
        if kind == "b":
            return ~value
        if kind in "iufc":
            return value + 1
    raise Inconclusive(f"cannot make a different value of type {type(value).__name__} to compare with")


@guarded
def confirm_stale_global(subject: Subject) -> Outcome:
    import jax

    entry = traced_entry(subject)
    subject = entry.subject
    namespace = _namespace(subject)
    name = global_name(subject, namespace)
    old = namespace[name]
    new = changed(old)
    before = call(subject, entry.call)
    namespace[name] = new
    try:
        after = call(subject, entry.call)
        inputs_repeat(subject, before, after)
        plain = subject.python_function or subject.function
        args, kwargs = make_args(subject)
        with jax.disable_jit(), quiet_io(*_sinks()):
            eager = jax.block_until_ready(plain(*args, **kwargs))
    finally:
        namespace[name] = old
    change = f"`{name}` {short(old)} → {short(new)}"
    if leaves_equal(eager, before.result):
        if _reads_global(plain, name):
            # The code reads it, but these inputs hide it (uniform logits divided by a temperature).
            return Outcome("inconclusive", f"after {change} the result does not change even eagerly "
                                           f"({short(before.result)}): these inputs hide the global; declare "
                                           f"example inputs for `{subject.qualname}` whose result depends on it")
        return Outcome("not-reproduced", f"after {change} the result does not change even eagerly "
                                         f"({short(before.result)}): the global does not reach it")
    if leaves_equal(after.result, before.result):
        return Outcome("confirmed", f"stale global: after {change} the call still returned {short(after.result)} "
                                    f"while eager evaluation gives {short(eager)} ({entry.how})")
    if leaves_equal(after.result, eager):
        if subject.trace_mode:
            # A jitted function is not traced again for the same argument types: something in this
            # run forced a new trace, so the compiled function's value was not what was compared.
            return Outcome("inconclusive", f"after {change} the call returned the new result "
                                           f"{short(after.result)}: it was traced again in this run ({entry.how}), "
                                           f"so the compiled function's stale value could not be observed")
        return Outcome("not-reproduced", f"after {change} the call returned the new result {short(after.result)}: "
                                         f"it was traced again ({entry.how})")
    return Outcome("not-reproduced", f"after {change} the call returned {short(after.result)}, neither the old "
                                     f"result {short(before.result)} nor the eager {short(eager)}")


def _reads_global(function: Any, name: str) -> bool:
    """Whether the function's code (its nested functions and lambdas included) reads `name` as a
    global, rather than a local or a parameter that shadows it."""
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    stack = [code] if code is not None else []
    while stack:
        current = stack.pop()
        if name in current.co_names and name not in current.co_varnames:
            return True
        stack.extend(const for const in current.co_consts if isinstance(const, types.CodeType))
    return False


def _sinks():
    import io

    return io.StringIO(), io.StringIO()
