"""What to call to run the flagged line the way JAX runs it: the exposed function, a `jax.jit`
stand-in for a traced body, the function a factory returns, or the module's code run again."""
from __future__ import annotations

import ast
import builtins
import dataclasses
import io
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ...subject import Subject
from .calls import call, quiet_io
from .frames import same_file, source_paths
from .outcomes import Inconclusive
from .source import ancestors, enclosing_scope, first_line, opens_scope, source_text, tree_of


#: Modes (as the static analysis names them) whose traced body runs once per trace and is then cached;
#: the others ("vmap", "grad", "abstract") run or trace the Python body again on every call.
ONCE_PER_TRACE = frozenset({"jit", "lax"})


def modes(subject: Subject) -> set[str]:
    """The static trace modes of the subject ("jit", "lax", "vmap", "grad", "abstract"); may be several."""
    import re

    return {m for m in re.split(r"[^A-Za-z_.]+", subject.trace_mode or "") if m}


def runs_once(subject: Subject) -> bool:
    """Whether the static analysis says the flagged body runs once per trace (jit family, lax body)."""
    return bool(modes(subject) & ONCE_PER_TRACE)


@dataclass
class Entry:
    call: Callable
    how: str  # for the evidence, e.g. "as exposed" or "under a jax.jit stand-in for a lax body"
    stand_in: bool = False
    #: the subject the calls go through: the one given, or, for a factory, one for the function it returns
    subject: Subject | None = None


def require_inputs(subject: Subject) -> None:
    if subject.function is None:
        if subject.qualname and "<locals>" in subject.qualname:
            raise Inconclusive(f"the flagged code is in {subject.qualname}, a nested function the worker could "
                               f"not reach to call")
        raise Inconclusive("module-level finding: there is no function to call")
    if subject.inputs is None:
        raise Inconclusive(f"no inputs could be built for {subject.qualname or 'the function'}")


def module_level(subject: Subject) -> bool:
    return subject.function is None and subject.qualname is None


def rerun_module(subject: Subject) -> None:
    """Execute the module's code again in a fresh namespace, under its own file name (for findings
    outside any function). The imported module is left as it is. As in the import, a failing
    statement elsewhere is skipped (units.py); one that fails on the flagged lines raises."""
    from ...units import run_units

    source = source_text(subject)
    if not source:
        raise Inconclusive("module-level finding: the module's source is not available to run again")
    namespace = {"__name__": "__jaxlint_rerun__", "__file__": subject.path, "__builtins__": builtins}
    out, err = io.StringIO(), io.StringIO()
    with quiet_io(out, err):
        result = run_units(namespace, source, subject.path)
    if result.fatal is not None:
        raise result.fatal
    flagged = (subject.line, max(subject.end_line, subject.line))
    for failure in result.failures:
        if failure.line <= flagged[1] and failure.end_line >= flagged[0]:
            raise failure.error


def runner(subject: Subject) -> tuple[Callable[[], Any], str]:
    """A no-argument callable that runs the flagged line once: a call of the function with fresh
    inputs, or, for a module-level finding, the module's code run again."""
    if module_level(subject):
        return (lambda: rerun_module(subject)), "running the module's code again"
    require_inputs(subject)
    return (lambda: call(subject, subject.function)), f"calling {subject.qualname or 'the function'}"


def flagged_line_is_direct(subject: Subject) -> bool:
    """Whether the flagged line sits in the body of `python_function` itself (not a nested function)."""
    fn = subject.python_function
    code = getattr(fn, "__code__", None)
    if code is None or not same_file(code.co_filename, source_paths(subject)):
        return False
    scope = enclosing_scope(subject)
    if scope is None:
        return False
    return first_line(scope) == code.co_firstlineno or getattr(scope, "lineno", None) == code.co_firstlineno


def traced_entry(subject: Subject, *, once_per_trace: bool = True) -> Entry:
    """What to call to run the flagged line the way JAX runs it.

    A function the module exposes wrapped (a jit wrapper, a vmapped function) is called as exposed. A plain
    function whose flagged line the analysis says is traced once per trace (a `lax` body, a helper called
    from a jitted function) is called under a fresh `jax.jit` stand-in, which traces it the same way.
    Where the flagged line is in a function that the subject returns (a factory such as `make_step`),
    the factory is called once and the function it returns is the one run, with probe inputs.
    """
    require_inputs(subject)
    product = _factory_product(subject)
    if product is not None:
        entry = traced_entry(product, once_per_trace=once_per_trace)
        entry.how = f"{entry.how}, on the function {subject.qualname or 'the factory'} returns"
        return entry
    fn, plain = subject.function, subject.python_function
    mode = "/".join(sorted(modes(subject) & ONCE_PER_TRACE)) or "jit"
    if fn is not plain or plain is None or not callable(fn):
        return Entry(fn, "as exposed", subject=subject)
    if once_per_trace and runs_once(subject) and flagged_line_is_direct(subject):
        import jax

        static = tuple(subject.inputs.static_argnames) if subject.inputs else ()
        jitted = jax.jit(plain, static_argnames=static) if static else jax.jit(plain)
        return Entry(jitted, f"under a jax.jit stand-in for the {mode} trace", stand_in=True, subject=subject)
    return Entry(fn, "as exposed", subject=subject)


def _returned_def(subject: Subject) -> ast.FunctionDef | None:
    """The def holding the flagged line when the subject's own function returns it (`return step`,
    `return jax.jit(step)`, a decorated `step`), else None."""
    code = getattr(subject.python_function, "__code__", None)
    inner = enclosing_scope(subject)
    if code is None or inner is None or flagged_line_is_direct(subject):
        return None
    chain = [n for n in ancestors(tree_of(subject), subject.line) if opens_scope(n, subject.line)]
    outer = next((n for n in chain if first_line(n) == code.co_firstlineno), None)
    if outer is None or chain.index(outer) + 1 >= len(chain) or chain[chain.index(outer) + 1] is not inner:
        return None
    for node in _own_nodes(outer):
        if isinstance(node, ast.Return) and node.value is not None and _returns(node.value, inner.name):
            return inner
    return None


def _returns(value: ast.expr, name: str) -> bool:
    """Whether a return value is the function `name` itself or a wrapper of it (`jax.jit(name)`),
    not the result of calling it (`jax.grad(name)(x)`)."""
    values = value.elts if isinstance(value, ast.Tuple) else [value]
    for item in values:
        if isinstance(item, ast.Name) and item.id == name:
            return True
        if isinstance(item, ast.Call) and not isinstance(item.func, ast.Call) and any(
                isinstance(arg, ast.Name) and arg.id == name for arg in item.args):
            return True
    return False


def _own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions defined in it."""
    stack = list(getattr(function, "body", []))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node)
                     if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)))


def _factory_product(subject: Subject) -> Subject | None:
    """A subject for the function a factory returns, with probe inputs for its parameters."""
    import inspect

    inner = _returned_def(subject)
    if inner is None:
        return None
    made = call(subject, subject.function).result
    if not callable(made):
        raise Inconclusive(f"{subject.qualname} was expected to return the function at line {inner.lineno}")
    plain = inspect.unwrap(made) if hasattr(made, "__wrapped__") else made
    code = getattr(plain, "__code__", None)
    if code is None or code.co_name != inner.name:
        raise Inconclusive(f"{subject.qualname} did not return `{inner.name}` with these inputs")
    from ...inputs import candidates

    params = signature_params(plain)
    options = candidates(params, None)
    if not options:
        raise Inconclusive(f"no inputs could be built for the function {subject.qualname} returns")
    return dataclasses.replace(subject, function=made, python_function=plain, inputs=options[0],
                               candidates=options, qualname=f"{subject.qualname}.<locals>.{inner.name}")


def signature_params(fn: Callable) -> list[dict]:
    """Parameter records, as the planner writes them, from a live function's signature."""
    import inspect

    kind = inspect.Parameter
    kinds = {kind.POSITIONAL_ONLY: "positional_only", kind.POSITIONAL_OR_KEYWORD: "positional",
             kind.KEYWORD_ONLY: "keyword_only", kind.VAR_POSITIONAL: "var_positional", kind.VAR_KEYWORD: "var_keyword"}
    out = []
    for param in inspect.signature(fn).parameters.values():
        annotation = param.annotation
        out.append({"name": param.name, "kind": kinds[param.kind],
                    "default": None if param.default is inspect.Parameter.empty else repr(param.default),
                    "annotation": None if annotation is inspect.Parameter.empty
                    else annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None)})
    return out


def clear_trace_cache(fn: Callable, subject: Subject) -> None:
    """Forget earlier traces, so that the next call traces (the worker may have called it already)."""
    import jax

    clear = getattr(fn, "clear_cache", None)
    if callable(clear):  # a jit wrapper: its own caches, traces included
        try:
            clear()
            return
        except Exception:  # noqa: BLE001
            pass
    if not flagged_line_is_direct(subject):
        jax.clear_caches()  # the line is in a body this function jits or loops over: every cache
