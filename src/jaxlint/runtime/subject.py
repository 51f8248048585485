"""What a confirmer is handed inside the worker process, and what it hands back.

The worker imports the user's module, finds the function a finding sits in, and builds a
`Subject` for it; a confirmer (one per rule family) runs JAX on the subject and returns an
`Outcome`. Confirmers never import user code themselves and never write to the user's tree.

What the worker guarantees when it calls a confirmer:
- JAX is imported, traceback filtering is off (`jax_traceback_filtering="off"`), the default
  device is the one chosen with `--device`; its name is `device`. Key-reuse checking is off.
- The module was imported once, by its package name (`module.__name__` is what the user's code
  imports), with bytecode writing off and the working directory a scratch directory. Its
  top-level statements ran one by one (units.py): one that raised an `Exception` was skipped,
  so names it would have bound may be missing from the module. A notebook
  is run as its code cells joined (IPython lines masked, as the static check reads them): `path`
  is the .ipynb, `source` and `line` are in the joined text (linecache holds it for `path`), and
  the module is named `__jaxlint_notebook__`; the parent turns "line N" in the evidence into
  "cell C, line M".
- `function` is what the module exposes under the qualified name (a jit or vmap wrapper, or the
  plain function); `python_function` is the plain function underneath. They are the same object
  when nothing wraps it. A method is bound to an instance made with the class's no-argument
  constructor (or the example's `init` arguments); a classmethod to its class. A function defined
  inside another function, or a lambda, is rebuilt from the module's compiled code when it uses
  no variables of the enclosing function: then `function is python_function`, and its defaults
  are evaluated in the module's namespace.
- `inputs` is the first of `candidates` (best first: a declared example, else the inputs recorded
  from the program's own calls (`recording.py`), else call sites with literal arguments,
  annotations and probes; see `inputs.py`); `inputs` is None when no candidate could be built.
  `static_argnames` of recorded inputs name the parameters that held no array in the recorded
  call; a dict or list among them is hashable by identity. The module was imported, and its
  `__main__` block and test functions may have run, with a profile hook watching the calls; the
  hook is off when a confirmer runs. For JAX101, a
  behaviour confirmer runs after JAX's key-reuse checker did not confirm, and `inputs` is then the
  candidate that ran cleanly under that checker when there was one.
- `trace_mode` lists the static analysis' modes, comma-separated and sorted ("jit", "grad,jit");
  None when it finds the function untransformed. `extra["modes"]` holds them as a list,
  `extra["transforms"]` the transforms (e.g. "jax.jit", "called from update"),
  `extra["traced_params"]` the parameters it finds traced.
- `function_lines` is (first line including decorators, last line) of the function.

Module-level findings (`function`, `python_function`, `qualname` and `inputs` are None): when a
module has a module-level JAX101 finding, the worker first imports it under
`jax.debug_key_reuse(True)`; when the import is ended by an exception, `extra["import_error"]` is
`{"type": class name, "message": str, "lines": [lines of this file in the traceback, innermost
last]}`. After a checked import in which a statement raised, the module is imported again with
checking off, and `module` is that second import, or None if it was ended early. A confirmer that needs to watch
module-level code run again may execute `source` compiled with `path` as the file name in a
fresh namespace (`{"__name__": "__jaxlint_rerun__"}`); it must not replace `module`.

`tracebacks.py` has helpers to find the user's line in an exception (`raised_at`, `raised_on`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Literal

Verdict = Literal["confirmed", "not-reproduced", "inconclusive"]


@dataclass
class Inputs:
    """Arguments for one call of the subject; `make()` returns fresh ones each time (keys included)."""

    make: Callable[[], tuple[tuple, dict]]
    description: str  # how they were chosen, e.g. "probes: x=f32[3]" or "examples: pyproject.toml"
    static_argnames: tuple[str, ...] = ()
    #: A clean run with these inputs settles the finding: the candidates after them are not tried
    #: (the program's own calls ran cleanly; a guess that fails proves nothing it does).
    settles: bool = False
    #: Recorded from a plain call of a function the finding says is transformed: worth trying,
    #: but a clean run with them says nothing about the transformed call.
    plain_call: bool = False
    #: What a real caller passes (a declared example, a recorded call, a call site's literals), as
    #: opposed to a guess (annotations, probes): only these can refute a finding.
    from_caller: bool = False


@dataclass
class Subject:
    code: str  # the finding's rule code, e.g. "JAX201"
    line: int  # the finding's 1-based line in the (joined, for notebooks) source
    path: str  # absolute path of the imported source file
    message: str
    module: ModuleType | None  # None for a module-level finding whose module failed to import
    function: Callable | None  # the flagged function as the module exposes it (maybe a jit wrapper); None at module level
    python_function: Callable | None  # the plain Python function underneath (`__wrapped__` followed)
    qualname: str | None  # dotted path inside the module, e.g. "Model.step" or "make.<locals>.body"
    inputs: Inputs | None  # None when no inputs could be built
    trace_mode: str | None = None  # what the static analysis says traces it: "jit", "vmap", "grad", "lax", …
    source: str = ""  # the module's source text as the engine read it
    extra: dict[str, Any] = field(default_factory=dict)
    end_line: int = 0  # the finding's last line (a finding may span several lines); 0: same as `line`
    function_lines: tuple[int, int] | None = None  # (first line with decorators, last line); None at module level
    candidates: list[Inputs] = field(default_factory=list)  # every input set worth trying, best first
    device: str = ""  # the JAX device the worker runs on, e.g. "cpu:0 (cpu)"


@dataclass
class Outcome:
    verdict: Verdict
    evidence: str  # one line: the exception class and where it was raised, a count, the values compared


Confirmer = Callable[[Subject], Outcome]


def runnable_inputs(subject: Subject) -> "list[Inputs] | Outcome":
    """The input sets to try on the subject in order, or why it cannot be run at all."""
    if subject.python_function is None:
        return Outcome("inconclusive", "the function could not be found in the imported module")
    candidates = subject.candidates or ([subject.inputs] if subject.inputs else [])
    if not candidates:
        return Outcome("inconclusive", "no inputs could be built for the function")
    return candidates
