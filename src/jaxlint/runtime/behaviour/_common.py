"""Shared machinery of the behaviour confirmers: source positions, what to call, how to call it, and
the recorders (statement executions, compilations, key consumptions) they observe it with."""
from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import functools
import io
import linecache
import os
import reprlib
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..missing import needs_package
from ..subject import Outcome, Subject

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

        if _is_tracer(value):
            return f"a tracer {type(value).__name__}({_aval(value)})"
        if isinstance(value, (tuple, list)) and any(hasattr(v, "shape") for v in value):
            items = ", ".join(short(v) for v in value[:3]) + (", …" if len(value) > 3 else "")
            return f"({items})" if isinstance(value, tuple) else f"[{items}]"
        if hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, np.generic):
            if _is_key(value):
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


# --- the source --------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def source_text(subject: Subject) -> str:
    if subject.source:
        return subject.source
    try:
        with open(subject.path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return "".join(linecache.getlines(subject.path))


def tree_of(subject: Subject) -> ast.Module:
    tree = _parse(source_text(subject))
    if tree is None:
        raise Inconclusive("the source could not be parsed")
    return tree


def _header_end(node: ast.stmt) -> int:
    """Last line of a compound statement's header (the line before its body)."""
    body = getattr(node, "body", None)
    if isinstance(body, list) and body:
        return max(node.lineno, _start(body[0]) - 1)
    return node.end_lineno or node.lineno


def _start(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def statement_at(tree: ast.Module, line: int) -> ast.stmt | None:
    """The innermost statement at `line` (a compound statement only where `line` is in its header)."""
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        start, end = _start(node), node.end_lineno or node.lineno
        if not start <= line <= end:
            continue
        if hasattr(node, "body") and isinstance(node.body, list) and node.body and line > _header_end(node):
            continue  # the line is in the body, so a statement inside is the one
        if best is None or (start, -end) >= (_start(best), -(best.end_lineno or best.lineno)):
            best = node
    return best


def statement_span(subject: Subject) -> tuple[int, int]:
    """First and last line of the flagged statement (a compound statement: its header)."""
    node = statement_at(tree_of(subject), subject.line)
    if node is None:
        return subject.line, subject.line
    if hasattr(node, "body") and isinstance(node.body, list) and node.body:
        return _start(node), _header_end(node)
    return _start(node), node.end_lineno or node.lineno


_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _ancestors(tree: ast.Module, line: int) -> list[ast.AST]:
    """Nodes whose lines contain `line`, outermost first."""
    chain: list[ast.AST] = []
    node: ast.AST = tree
    while True:
        for child in ast.iter_child_nodes(node):
            if hasattr(child, "lineno") and _start(child) <= line <= (child.end_lineno or child.lineno):
                chain.append(child)
                node = child
                break
        else:
            return chain


def enclosing_scope(subject: Subject) -> ast.AST | None:
    """The innermost function (def or lambda) containing the flagged line."""
    scopes = [n for n in _ancestors(tree_of(subject), subject.line) if _opens_scope(n, subject.line)]
    return scopes[-1] if scopes else None


def _opens_scope(node: ast.AST, line: int) -> bool:
    """A def whose body holds `line` (its decorators and header belong to the outer scope). Lambdas hold
    no statements: one on the flagged line is part of the flagged statement."""
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and line > _header_end(node)


def enclosing_loop_span(subject: Subject) -> tuple[int, int] | None:
    """Lines of the innermost loop (or comprehension) around the flagged line inside its function."""
    loop = None
    for node in _ancestors(tree_of(subject), subject.line):
        if _opens_scope(node, subject.line):
            loop = None
        elif isinstance(node, _LOOPS):
            if isinstance(node, (ast.For, ast.AsyncFor)) and subject.line <= _header_end(node):
                continue  # the loop's own header (its iterable) runs once
            loop = node
    if loop is None:
        return None
    return _start(loop), loop.end_lineno or loop.lineno


def scope_span(node: ast.AST) -> tuple[int, int]:
    return _start(node), node.end_lineno or node.lineno


# --- files and frames ----------------------------------------------------------------------------


def source_paths(subject: Subject) -> frozenset[str]:
    paths = {subject.path, os.path.realpath(subject.path)}
    module_file = getattr(subject.module, "__file__", None)
    if module_file:
        paths |= {module_file, os.path.realpath(module_file)}
    for fn in (subject.python_function, subject.function):
        code = getattr(fn, "__code__", None)
        if code is not None and _real(code.co_filename) in {_real(p) for p in paths}:
            paths.add(code.co_filename)
    return frozenset(paths)


@functools.lru_cache(maxsize=256)
def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def same_file(filename: str, paths: frozenset[str]) -> bool:
    return filename in paths or _real(filename) in paths


def caller_lines(paths: frozenset[str], start: Any = None) -> tuple[int, ...]:
    """The lines of every frame of the subject's file on the current stack, innermost first."""
    frame = start if start is not None else sys._getframe(1)
    lines = []
    while frame is not None:
        if same_file(frame.f_code.co_filename, paths):
            lines.append(frame.f_lineno)
        frame = frame.f_back
    return tuple(lines)


def caller_line(paths: frozenset[str], start: Any = None) -> int | None:
    """The line of the innermost frame of the subject's file on the current stack."""
    frame = start if start is not None else sys._getframe(1)
    while frame is not None:
        if same_file(frame.f_code.co_filename, paths):
            return frame.f_lineno
        frame = frame.f_back
    return None


# --- what to call -----------------------------------------------------------------------------


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
    from ..units import run_units

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
    return _start(scope) == code.co_firstlineno or getattr(scope, "lineno", None) == code.co_firstlineno


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
    chain = [n for n in _ancestors(tree_of(subject), subject.line) if _opens_scope(n, subject.line)]
    outer = next((n for n in chain if _start(n) == code.co_firstlineno), None)
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
    from ..inputs import candidates

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


# --- calling ------------------------------------------------------------------------------------


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


# --- comparing values ----------------------------------------------------------------------------


def _is_tracer(value: Any) -> bool:
    try:
        from jax.core import Tracer
    except ImportError:  # pragma: no cover - older layouts
        from jax._src.core import Tracer
    return isinstance(value, Tracer)


def _aval(value: Any) -> str:
    try:
        return str(value.aval.str_short())
    except Exception:  # noqa: BLE001
        return "?"


def _is_key(value: Any) -> bool:
    try:
        import jax

        return jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key)
    except Exception:  # noqa: BLE001
        return False


def key_bits(key: Any) -> bytes | None:
    """The raw bits of a concrete key (typed or legacy uint32), None for a tracer."""
    import numpy as np

    if _is_tracer(key):
        return None
    try:
        import jax

        data = jax.random.key_data(key) if _is_key(key) else key
        array = np.asarray(data)
    except Exception:  # noqa: BLE001
        return None
    return repr((array.dtype.str, array.shape)).encode() + array.tobytes()


def leaves_equal(a: Any, b: Any) -> bool:
    """Same structure and the same values (keys by their bits, NaNs equal)."""
    import jax
    import numpy as np

    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    if tree_a != tree_b or len(leaves_a) != len(leaves_b):
        return False
    for x, y in zip(leaves_a, leaves_b):
        if _is_tracer(x) or _is_tracer(y):
            return False
        if _is_key(x) or _is_key(y):
            if key_bits(x) != key_bits(y):
                return False
            continue
        if hasattr(x, "shape") or hasattr(y, "shape"):
            try:
                ax, ay = np.asarray(x), np.asarray(y)
                if ax.shape != ay.shape:
                    return False
                if ax.dtype.kind in "fc" or ay.dtype.kind in "fc":
                    if not np.array_equal(ax, ay, equal_nan=True):
                        return False
                elif not np.array_equal(ax, ay):
                    return False
            except Exception:  # noqa: BLE001
                return False
            continue
        try:
            if bool(x != y):
                return False
        except Exception:  # noqa: BLE001
            return False
    return True


def inputs_repeat(subject: Subject, first: Call, second: Call) -> None:
    if not leaves_equal((first.args, first.kwargs), (second.args, second.kwargs)):
        raise Inconclusive("the inputs differ from one make() to the next, so calls cannot be compared")


def find_tracers(value: Any, name: str, depth: int = 4, limit: int = 200) -> list[str]:
    """Paths (`name[0]`, `name['k']`, `name.attr`) at which `value` holds a JAX tracer."""
    import types

    found: list[str] = []
    seen: set[int] = set()
    budget = [limit]

    def walk(v: Any, path: str, level: int) -> None:
        if budget[0] <= 0 or id(v) in seen:
            return
        budget[0] -= 1
        if _is_tracer(v):
            found.append(f"{path} = {type(v).__name__}({_aval(v)})")
            return
        if level >= depth:
            return
        seen.add(id(v))
        if isinstance(v, (str, bytes, int, float, complex, bool, type(None))):
            return
        if isinstance(v, dict):
            for k, item in list(v.items())[:50]:
                walk(item, f"{path}[{k!r}]", level + 1)
        elif isinstance(v, (list, tuple, set, frozenset)) or type(v).__name__ == "deque":
            for i, item in enumerate(list(v)[:50]):
                walk(item, f"{path}[{i}]", level + 1)
        elif isinstance(v, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
            return
        elif hasattr(v, "__dict__") and not hasattr(v, "shape"):
            try:
                attrs = dict(vars(v))
            except TypeError:
                return
            for k, item in list(attrs.items())[:50]:
                walk(item, f"{path}.{k}", level + 1)

    walk(value, name, 0)
    return found


# --- recorders ------------------------------------------------------------------------------------


class StatementCounter:
    """Counts executions of the statement at lines `first..last` of the subject's file.

    An execution starts when a frame enters the span, or jumps back inside it (the next iteration of
    a comprehension on one line). Functions and lambdas defined inside the span (a traced lambda, a
    decorated def) are part of the statement, not executions of it, so their frames are not watched.
    """

    _COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})

    def __init__(self, subject: Subject, span: tuple[int, int]):
        self.paths = source_paths(subject)
        self.first, self.last = span
        self.count = 0
        self._state: dict[int, tuple[bool, int]] = {}
        self._codes: dict[Any, bool] = {}
        self._old: Any = None

    def _watched(self, code: Any) -> bool:
        if not same_file(code.co_filename, self.paths):
            return False
        inner = self.first <= code.co_firstlineno <= self.last and code.co_name not in self._COMPREHENSIONS
        return not inner

    def _global(self, frame: Any, event: str, arg: Any) -> Any:
        code = frame.f_code
        mine = self._codes.get(code)
        if mine is None:
            mine = self._codes[code] = self._watched(code)
        return self._local if mine else None

    def _local(self, frame: Any, event: str, arg: Any) -> Any:
        # A comprehension's frame is entered once per execution of its line, which the enclosing
        # frame counts already; each later pass of its loop is a line event at an earlier or the
        # same offset. (Its frame is kept across `return` events: a generator returns at each yield.)
        comprehension = frame.f_code.co_name in self._COMPREHENSIONS
        if event == "line":
            inside = self.first <= frame.f_lineno <= self.last
            was_inside, last = self._state.get(id(frame), (comprehension, -1))
            if inside and (not was_inside or 0 <= frame.f_lasti <= last):
                self.count += 1
            self._state[id(frame)] = (inside, frame.f_lasti)
        elif event == "return" and not comprehension:
            self._state.pop(id(frame), None)
        return self._local

    def __enter__(self) -> "StatementCounter":
        self._old = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(self._old)


COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@dataclass
class Compile:
    fun_name: str
    shapes: str  # the abstract argument types from the compile log, "" when not logged
    line: int | None  # the innermost line of the subject's file on the stack when it compiled


class CompileRecorder:
    """Records the XLA compilations run while it is active, with the subject's line that caused each.

    Counts JAX's monitoring event for a backend compilation; takes the argument types from the
    `jax_log_compiles` message logged just before it, captured here so nothing reaches the logs.
    """

    def __init__(self, subject: Subject):
        self.paths = source_paths(subject)
        self.compiles: list[Compile] = []
        self._shapes = threading.local()
        self._handler: Any = None
        self._saved: Any = None

    def _listener(self, event: str, duration: float, **kwargs: Any) -> None:
        if event != COMPILE_EVENT:
            return
        self.compiles.append(Compile(str(kwargs.get("fun_name", "?")), getattr(self._shapes, "last", ""),
                                     caller_line(self.paths, sys._getframe(1))))
        self._shapes.last = ""

    def __enter__(self) -> "CompileRecorder":
        import logging

        import jax
        from jax import monitoring

        recorder = self

        class Capture(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                try:
                    text = record.getMessage()
                except Exception:  # noqa: BLE001
                    return
                if text.startswith("Compiling ") and " with global shapes and types " in text:
                    shapes = text.split(" with global shapes and types ", 1)[1].split(". Argument mapping", 1)[0]
                    recorder._shapes.last = shapes

        jax_logger = logging.getLogger("jax")
        self._handler = Capture(level=logging.DEBUG)
        self._saved = (jax.config.jax_log_compiles, jax_logger.propagate)
        jax_logger.addHandler(self._handler)
        jax_logger.propagate = False
        jax.config.update("jax_log_compiles", True)
        monitoring.register_event_duration_secs_listener(self._listener)
        return self

    def __exit__(self, *exc: Any) -> None:
        import logging

        import jax
        from jax import monitoring

        try:
            monitoring.unregister_event_duration_listener(self._listener)
        except Exception:  # noqa: BLE001
            pass
        jax.config.update("jax_log_compiles", self._saved[0])
        jax_logger = logging.getLogger("jax")
        jax_logger.removeHandler(self._handler)
        jax_logger.propagate = self._saved[1]


#: `jax.random` functions that consume their key (as JAX's key-reuse checker counts them).
CONSUMERS = ("ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy", "chisquare", "choice",
             "dirichlet", "double_sided_maxwell", "exponential", "f", "gamma", "generalized_normal", "geometric",
             "gumbel", "laplace", "loggamma", "logistic", "lognormal", "maxwell", "multinomial",
             "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson", "rademacher",
             "randint", "rayleigh", "shuffle", "split", "t", "triangular", "truncated_normal", "uniform", "wald",
             "weibull_min")
CONSTRUCTORS = ("key", "PRNGKey")


@dataclass
class Draw:
    sampler: str
    line: int | None
    bits: bytes | None  # None: the key was a tracer
    batched: bool | None  # inside a vmap: whether the key carries the batch axis; None outside vmap
    axis_size: int | None
    shape_args: str  # the non-key arguments, to tell like draws from unlike
    stack: tuple[int, ...] = ()  # every line of the subject's file on the stack, innermost first
    output: Any = None

    def at(self, lines: range) -> int | None:
        """The line on the stack inside `lines` (the draw was made there or in a call made there)."""
        return next((line for line in self.stack if line in lines), None)


@dataclass
class Made:
    line: int | None
    bits: bytes | None
    stack: tuple[int, ...] = ()

    def at(self, lines: range) -> int | None:
        return next((line for line in self.stack if line in lines), None)


@dataclass
class KeyRecorder:
    """Wraps `jax.random`'s samplers and key constructors while active, recording each consumption
    (key bits, line of the subject's file, whether it is batched under vmap) and each key made."""

    subject: Subject
    draws: list[Draw] = field(default_factory=list)
    made: list[Made] = field(default_factory=list)
    _patches: list[tuple[Any, str, Any]] = field(default_factory=list)
    _busy: int = 0

    def _vmap_state(self, key: Any) -> tuple[bool | None, int | None]:
        try:
            from jax._src import core
            from jax._src.interpreters import batching

            trace = core.trace_ctx.trace
            if not isinstance(trace, batching.BatchTrace):
                return None, None
            size = getattr(getattr(trace, "axis_data", None), "size", None)
            batched = isinstance(key, batching.BatchTracer) and getattr(key, "_trace", trace) is trace
            return batched, size
        except Exception:  # noqa: BLE001 - private layout changed: say nothing about vmap
            return None, None

    def _wrap_consumer(self, name: str, original: Callable) -> Callable:
        paths = source_paths(self.subject)

        @functools.wraps(original)
        def consumer(*args: Any, **kwargs: Any) -> Any:
            if self._busy:
                return original(*args, **kwargs)
            key = args[0] if args else kwargs.get("key")
            stack = caller_lines(paths, sys._getframe(1))
            batched, size = self._vmap_state(key)
            draw = Draw(name, stack[0] if stack else None, key_bits(key), batched, size,
                        _describe_args(args[1:], kwargs), stack)
            self.draws.append(draw)
            self._busy += 1
            try:
                out = original(*args, **kwargs)
            finally:
                self._busy -= 1
            draw.output = out
            return out

        return consumer

    def _wrap_constructor(self, name: str, original: Callable) -> Callable:
        paths = source_paths(self.subject)

        @functools.wraps(original)
        def constructor(*args: Any, **kwargs: Any) -> Any:
            out = original(*args, **kwargs)
            if not self._busy:
                stack = caller_lines(paths, sys._getframe(1))
                self.made.append(Made(stack[0] if stack else None, key_bits(out), stack))
            return out

        return constructor

    def __enter__(self) -> "KeyRecorder":
        import jax.random as jr

        replacements: dict[int, Any] = {}
        for name in CONSUMERS + CONSTRUCTORS:
            original = getattr(jr, name, None)
            if original is None:
                continue
            wrapper = (self._wrap_consumer if name in CONSUMERS else self._wrap_constructor)(name, original)
            replacements[id(original)] = wrapper
            self._patch(jr, name, wrapper)
        # `from jax.random import normal` binds the function into the module's namespace.
        namespaces = [getattr(self.subject.module, "__dict__", None),
                      getattr(self.subject.python_function, "__globals__", None)]
        for namespace in {id(ns): ns for ns in namespaces if isinstance(ns, dict)}.values():
            for name, value in list(namespace.items()):
                if id(value) in replacements and callable(value):
                    self._patch_dict(namespace, name, replacements[id(value)])
        return self

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._patches.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def _patch_dict(self, namespace: dict, name: str, value: Any) -> None:
        self._patches.append((namespace, name, namespace[name]))
        namespace[name] = value

    def __exit__(self, *exc: Any) -> None:
        for owner, name, value in reversed(self._patches):
            if isinstance(owner, dict):
                owner[name] = value
            else:
                setattr(owner, name, value)
        self._patches.clear()


def _describe_args(args: tuple, kwargs: dict) -> str:
    parts = []
    for value in (*args, *kwargs.values()):
        shape = getattr(value, "shape", None)
        parts.append(f"shape{tuple(shape)}" if shape is not None and not isinstance(value, tuple) else short(value))
    return ", ".join(parts)


def line_set(span: tuple[int, int]) -> range:
    return range(span[0], span[1] + 1)


def where(span: tuple[int, int]) -> str:
    return f"line {span[0]}" if span[0] == span[1] else f"lines {span[0]}-{span[1]}"
