"""Inputs recorded from the program's own calls, inside the worker process.

Probes guess what a function takes; the program itself knows. While the module is imported (its
script code, a notebook's cells), and then while its entry points run (the body of its
`if __name__ == "__main__":` block, then its test functions), a profile hook watches for the first
calls of the flagged functions and records their arguments abstractly:

- arrays (JAX arrays, tracers, NumPy arrays) by shape and dtype, keys as keys;
- Python scalars, strings and None by value: they are what the code branches on;
- other objects (a model, an optimizer, a function) by reference: they are the program's own;
- the pytree structure around them (dicts of parameters, tuples of state).

The hook only looks at calls: the functions themselves run as the program runs them. At import
nothing is stopped, so the module defines what it always defines. An entry point, which would
otherwise not run at all, is stopped as soon as every flagged function has been called (or its
time budget is spent) by a private exception raised from the hook or a timer, so a training loop
does not actually train. Entry points run in a copy of the module's namespace, so what they
assign at their top level does not change the module the checks see, and everything runs inside
the worker's sandbox and limits (scratch directory, no stdin, time and memory limits).

A recording is rebuilt with fresh values for each run (`Recorded.inputs`): arrays of ones of the
recorded shape and dtype, a fresh key per key leaf, the same Python values and objects.
Parameters whose value holds no array were not traced in the real call (JAX had made them
tracers otherwise): they are passed as static arguments.
"""
from __future__ import annotations

import ast
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .subject import Inputs
from .units import future_flags

#: Distinct recordings kept per function (its first calls), out of at most this many calls read:
#: a helper called in a loop costs the reading of its first calls only.
KEPT_CALLS = 3
READ_CALLS = 20
#: Code flags of generators and coroutines: their frames are entered again at every resumption,
#: with the parameters' names bound to whatever the body made of them.
_RESUMABLE = 0x20 | 0x80 | 0x100 | 0x200
#: Seconds the entry points may run in all, at most (a quarter of the worker's time limit if less).
ENTRY_BUDGET_S = 10.0


class _Stop(BaseException):
    """Ends an entry point early. A BaseException, so that the program's `except Exception` does
    not swallow it."""


@dataclass(frozen=True)
class Target:
    """A flagged function (or the function called to reach it) whose calls are recorded."""

    qualname: str
    name: str  # the code object's name
    lines: frozenset[int]  # its first line with decorators, and its `def` line
    skip_receiver: bool  # a method: `self`/`cls` is supplied by the worker, not recorded


@dataclass
class Leaf:
    kind: str  # "array" (JAX), "numpy", "key", "python", "object"
    shape: tuple[int, ...] = ()
    dtype: str = ""
    value: Any = None
    traced: bool = False  # a tracer: the call was made inside a transform


@dataclass
class Parameter:
    name: str
    how: str  # "positional", "keyword", "var_positional", "var_keyword"
    treedef: Any
    leaves: list[Leaf]

    @property
    def static(self) -> bool:
        """Nothing of it was traced in the real call: no array, no tracer among its leaves."""
        return all(leaf.kind in ("python", "object") for leaf in self.leaves)


@dataclass
class Recorded:
    parameters: list[Parameter]
    where: str  # "train.py:88", or "line 88" in the module itself (notebooks translate it)
    #: the call was made inside a JAX transform (a tracer among its arguments): it is what a
    #: finding about the transformed function may be settled by, never a plain call
    traced: bool = False

    def describe(self) -> str:
        parts = []
        for parameter in self.parameters:
            text = _describe(parameter.treedef, parameter.leaves)
            prefix = {"var_positional": "*", "var_keyword": "**"}.get(parameter.how, "")
            parts.append(f"{prefix}{parameter.name}={text}")
        return ", ".join(parts) or "no arguments"

    def inputs(self, abstract: bool, transformed: bool = False) -> Inputs:
        """Fresh arguments like the recorded ones; under an abstract trace, the parameters that
        held no array are static, as they were in the real call. For a function the finding says
        is `transformed`, only a call made under the transform settles the finding: a plain call
        of the same function (`relu(1.0)` before `jax.jit(relu)(x)`) passes what the transform
        never sees, so its inputs are tried but do not stop the other candidates."""
        static = tuple(p.name for p in self.parameters if abstract and p.static and p.how in ("positional", "keyword"))
        parameters = self.parameters

        def make() -> tuple[tuple, dict]:
            args: list = []
            kwargs: dict = {}
            seeds = iter(range(1_000_000))
            for parameter in parameters:
                value = _rebuild(parameter.treedef, parameter.leaves, seeds)
                if parameter.name in static:
                    value = _hashable(value)
                if parameter.how == "positional":
                    args.append(value)
                elif parameter.how == "var_positional":
                    args.extend(value)
                elif parameter.how == "var_keyword":
                    kwargs.update(value)
                else:
                    kwargs[parameter.name] = value
            return tuple(args), kwargs

        plain = transformed and not self.traced
        description = f"inputs recorded from the {'plain ' if plain else ''}call at {self.where}: {self.describe()}"
        return Inputs(make, _shorten(description), static, settles=not plain, plain_call=plain, from_caller=True)


@dataclass
class Recorder:
    """The profile hook and what it recorded: qualname -> the first distinct calls."""

    path: str
    targets: list[Target]
    #: how calls in the module itself are named: "train.py" gives "train.py:88"; None gives "line 88"
    display: str | None = None
    records: dict[str, list[Recorded]] = field(default_factory=dict)
    stop_when_complete: bool = False
    entry_points: list[str] = field(default_factory=list)  # what ran: "the __main__ block", "test_fit()"

    def __post_init__(self) -> None:
        self._by_code = {(t.name, line): t for t in self.targets for line in t.lines}
        self._names = {t.name for t in self.targets}
        self._files: dict[str, bool] = {}
        self._read: dict[str, int] = {}

    def complete(self) -> bool:
        return all(t.qualname in self.records for t in self.targets)

    def hook(self, frame, event: str, _arg) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code.co_name not in self._names:
            return
        target = self._by_code.get((code.co_name, code.co_firstlineno))
        if target is None or code.co_flags & _RESUMABLE or not self._ours(code.co_filename):
            return
        read = self._read[target.qualname] = self._read.get(target.qualname, 0) + 1
        kept = self.records.setdefault(target.qualname, [])
        if len(kept) < KEPT_CALLS and read <= READ_CALLS:
            try:
                recorded = _record(frame, target, self.path, self.display)
            except Exception:  # noqa: BLE001 - an argument that cannot be read costs only its recording
                recorded = None
            if recorded is not None and all(r.describe() != recorded.describe() for r in kept):
                kept.append(recorded)
            if not kept:
                del self.records[target.qualname]
        if self.stop_when_complete and self.complete():
            raise _Stop

    def _ours(self, filename: str) -> bool:
        known = self._files.get(filename)
        if known is None:
            known = self._files[filename] = filename == self.path or \
                os.path.realpath(filename) == os.path.realpath(self.path)
        return known

    def inputs(self, qualname: str, abstract: bool, transformed: bool = False) -> list[Inputs]:
        """The recorded calls' inputs, the calls made under a transform first when the function
        is `transformed`."""
        recorded = list(self.records.get(qualname, ()))
        if transformed:
            recorded.sort(key=lambda call: not call.traced)
        return [call.inputs(abstract, transformed) for call in recorded]

    # -- running ---------------------------------------------------------------------------------
    def watching(self, run: Callable[[], Any]) -> Any:
        """Run `run` (the module's import) with the hook on; nothing is stopped."""
        previous = sys.getprofile()
        sys.setprofile(self.hook)
        try:
            return run()
        finally:
            sys.setprofile(previous)

    def run_entry_points(self, module, source: str, budget: float) -> None:
        """The module's `__main__` block, then its test functions, until every target is recorded
        or the budget is spent; whatever they raise is dropped (they only supply inputs)."""
        if self.complete() or module is None:
            return
        entries = entry_points(module, source, self.path)
        if not entries:
            return
        worker = os.getpid()
        deadline = time.monotonic() + budget
        self.stop_when_complete = True
        try:
            with _alarm(budget):
                self._run_each(entries, deadline, worker)
        except _Stop:  # the budget ran out between two entry points
            pass
        finally:
            self.stop_when_complete = False

    def _run_each(self, entries, deadline: float, worker: int) -> None:
        for label, entry in entries:
            if self.complete() or time.monotonic() >= deadline:
                break
            self.entry_points.append(label)
            sys.setprofile(self.hook)
            try:
                entry()
            except BaseException:  # noqa: B036 - _Stop, SystemExit, the program's own errors
                pass
            finally:
                sys.setprofile(None)
                if os.getpid() != worker:  # a process the entry point forked: it ends here
                    os._exit(0)


def entry_points(module, source: str, path: str) -> list[tuple[str, Callable[[], Any]]]:
    """The `__main__` block's body (run in a copy of the module's namespace) and the module's
    test functions that take no arguments, in source order."""
    try:
        tree = ast.parse(source, path)
    except (SyntaxError, ValueError):
        return []
    namespace = module.__dict__
    found: list[tuple[str, Callable[[], Any]]] = []
    for statement in tree.body:
        if isinstance(statement, ast.If) and _is_main_test(statement.test):
            body = ast.Module(body=statement.body, type_ignores=[])
            code = compile(body, path, "exec", flags=future_flags(tree), dont_inherit=True)

            def main_block(code=code) -> None:
                exec(code, dict(namespace, __name__="__main__"))  # noqa: S102 - the user's code, in the worker

            found.append(("the __main__ block", main_block))
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name.startswith("test") \
                and isinstance(statement, ast.FunctionDef) and _no_required_parameters(statement.args):
            function = namespace.get(statement.name)
            if callable(function):
                found.append((f"{statement.name}()", function))
    return found


def _is_main_test(test: ast.expr) -> bool:
    """`__name__ == "__main__"`, either way round."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    texts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(texts) == 1


def _no_required_parameters(args: ast.arguments) -> bool:
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    kwonly_required = sum(default is None for default in args.kw_defaults)
    return required == 0 and kwonly_required == 0



class _alarm:
    """A wall-clock budget that raises `_Stop` (and again every quarter second, should the program
    catch it), with the worker's own alarm restored afterwards."""

    def __init__(self, seconds: float) -> None:
        self.seconds = max(seconds, 0.05)

    def __enter__(self) -> None:
        self.usable = hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")
        if not self.usable:
            return
        self.started = time.monotonic()
        self.previous_handler = signal.signal(signal.SIGALRM, _raise_stop)
        self.previous_timer = signal.setitimer(signal.ITIMER_REAL, self.seconds, 0.25)[0]

    def __exit__(self, *_exc) -> None:
        if not self.usable:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous_handler)
        if self.previous_timer:
            left = self.previous_timer - (time.monotonic() - self.started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.01))


def _raise_stop(_signum, _frame) -> None:
    raise _Stop


# -- one call -------------------------------------------------------------------------------------
def _record(frame, target: Target, path: str, display: str | None) -> Recorded | None:
    code = frame.f_code
    local = frame.f_locals
    names = list(code.co_varnames[:code.co_argcount])
    keyword_only = list(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
    position = code.co_argcount + code.co_kwonlyargcount
    var_positional = var_keyword = None
    if code.co_flags & 0x04:  # CO_VARARGS
        var_positional = code.co_varnames[position]
        position += 1
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        var_keyword = code.co_varnames[position]
    if target.skip_receiver and names:
        names = names[1:]
    parameters = []
    for name, how in ([(n, "positional") for n in names] + [(n, "keyword") for n in keyword_only]
                      + [(var_positional, "var_positional"), (var_keyword, "var_keyword")]):
        if name is None:
            continue
        if name not in local:
            return None
        treedef, leaves = _abstract(local[name])
        parameters.append(Parameter(name, how, treedef, leaves))
    traced = any(leaf.traced for parameter in parameters for leaf in parameter.leaves)
    return Recorded(parameters, _call_place(frame.f_back, path, display), traced)


def _call_place(frame, path: str, display: str | None) -> str:
    """Where the call was made: the innermost frame of the module itself ("train.py:88", or "line
    88"), else of the nearest file that is not JAX's or the standard library's ("data.py:12")."""
    from .tracebacks import same_file

    outside = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if same_file(filename, path):
            return f"{display}:{frame.f_lineno}" if display else f"line {frame.f_lineno}"
        if outside is None and not _library(filename):
            outside = f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return outside or "an unknown place"


def _library(filename: str) -> bool:
    return filename.startswith("<") or "site-packages" in filename or os.path.dirname(filename) in _stdlib()


def _stdlib() -> set[str]:
    import sysconfig

    return {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")}


def _abstract(value: Any) -> tuple[Any, list[Leaf]]:
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(value)
    return treedef, [_leaf(leaf) for leaf in leaves]


def _leaf(value: Any) -> Leaf:
    import jax
    import numpy as np

    if isinstance(value, (bool, int, float, complex, str, bytes)) or value is None:
        return Leaf("python", value=value)
    if isinstance(value, (jax.Array, jax.core.Tracer)):
        aval = value.aval
        dtype = aval.dtype
        traced = isinstance(value, jax.core.Tracer)
        if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
            return Leaf("key", tuple(aval.shape), str(dtype), traced=traced)
        return Leaf("array", tuple(aval.shape), str(dtype), traced=traced)
    if isinstance(value, (np.ndarray, np.generic)):
        return Leaf("numpy", tuple(np.shape(value)), str(value.dtype),
                    value=isinstance(value, np.generic))
    return Leaf("object", value=value)


def _rebuild(treedef: Any, leaves: list[Leaf], seeds) -> Any:
    import jax
    import jax.numpy as jnp
    import numpy as np

    values = []
    for leaf in leaves:
        if leaf.kind == "array":
            values.append(jnp.ones(leaf.shape, dtype=leaf.dtype))
        elif leaf.kind == "numpy":
            array = np.ones(leaf.shape, dtype=leaf.dtype)
            values.append(array[()] if leaf.value else array)
        elif leaf.kind == "key":
            key = jax.random.key(next(seeds))  # distinct keys: equal bits would read as reuse
            count = int(np.prod(leaf.shape)) if leaf.shape else 0
            values.append(jax.random.split(key, count).reshape(leaf.shape) if leaf.shape else key)
        else:
            values.append(leaf.value)
    return jax.tree_util.tree_unflatten(treedef, values)


class _HashableDict(dict):
    """A dict passed as a static argument: JAX needs static arguments hashable; one trace, one
    object, so identity will do."""

    __hash__ = object.__hash__


class _HashableList(list):
    __hash__ = object.__hash__


def _hashable(value: Any) -> Any:
    if type(value) is dict:
        return _HashableDict(value)
    if type(value) is list:
        return _HashableList(value)
    return value


def _describe(treedef: Any, leaves: list[Leaf]) -> str:
    import jax

    texts = [_leaf_text(leaf) for leaf in leaves]
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:
        return texts[0]
    try:
        marked = jax.tree_util.tree_unflatten(treedef, [_Text(t) for t in texts])
    except Exception:  # noqa: BLE001 - a pytree class that checks its leaves
        return f"a pytree of {len(leaves)} leaves"
    return _structure_text(marked)


class _Text(str):
    pass


def _structure_text(value: Any) -> str:
    if isinstance(value, _Text):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_structure_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        inner = ", ".join(_structure_text(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, list):
        return "[" + ", ".join(_structure_text(v) for v in value) + "]"
    if value is None:
        return "None"
    return type(value).__name__


def _leaf_text(leaf: Leaf) -> str:
    from .specs import DTYPES

    if leaf.kind in ("array", "numpy"):
        code = next((c for c, name in DTYPES.items() if name == leaf.dtype), leaf.dtype)
        text = f"{code}[{','.join(map(str, leaf.shape))}]"
        return f"np.{text}" if leaf.kind == "numpy" else text
    if leaf.kind == "key":
        return f"key[{','.join(map(str, leaf.shape))}]" if leaf.shape else "key"
    if leaf.kind == "python":
        text = repr(leaf.value)
        return text if len(text) <= 24 else type(leaf.value).__name__
    return type(leaf.value).__name__


def _shorten(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
