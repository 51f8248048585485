"""The worker process of runtime mode: imports one user module and checks the findings of a plan.

It runs forked from its keeper (keeper.py), which set its limits, reads its output and kills
whatever it leaves running. It writes one JSON line per event to the events file as it goes
(`ready`, `skipped` for each top-level statement that failed and was skipped, `imported`, `start`,
`result`, `done`), so that the launcher knows how far it got if the process dies: a crash, a hang killed at the time limit or an `os._exit` in the user's code costs
the finding it happened in, not the others. A call of `os._exit` by the user's code is recorded
(`exit-call`, with the line) before the process ends; a bug of the worker's own is reported by
the keeper's wrapper as an `internal` event.

It runs in a scratch working directory, on a copy of the module's tree, with bytecode writing
off and core dumps disabled: nothing is written into the user's tree.
"""
from __future__ import annotations

import faulthandler
import importlib
import importlib.util
import json
import os
import re
import sys
import types
from pathlib import Path
from typing import Any

#: The plan as the parent wrote it, and this run's state (module, compiled code, caches).
State = dict


class Events:
    def __init__(self, path: str) -> None:
        self.handle = open(path, "a", encoding="utf-8")

    def write(self, **event: Any) -> None:
        self.handle.write(json.dumps(event) + "\n")
        self.handle.flush()


def main(plan: dict, events_path: str) -> int:
    sys.dont_write_bytecode = True
    sys.argv = [plan["path"]]  # as for `python module.py`, not the worker's own arguments
    events = Events(events_path)
    _record_exits(events, plan["path"])
    faulthandler.enable()  # a segfault prints the Python stack to the output: the parent reads the line
    if hasattr(faulthandler, "register") and hasattr(__import__("signal"), "SIGUSR1"):
        import signal

        # At the time limit the keeper asks for the stack: the line the user's code was running.
        faulthandler.register(signal.SIGUSR1, all_threads=True, chain=False)
    try:
        import jax
    except BaseException as exc:  # noqa: B036 - a broken JAX install must still be reported
        events.write(event="fatal", reason=f"cannot import jax ({type(exc).__name__}: {exc}); "
                                           f"install JAX where jaxlint runs (`pip install jax`, or the `runtime` extra: `pip install '.[runtime]'` from a checkout)")
        return 0
    jax.config.update("jax_traceback_filtering", "off")
    if plan.get("enable_x64"):
        jax.config.update("jax_enable_x64", True)
    try:
        device = _select_device(jax, plan.get("device"))
    except Exception as exc:  # noqa: BLE001 - no such device: every finding says so
        events.write(event="fatal", reason=f"no {plan.get('device')} device: {' '.join(str(exc).split())[:200]}")
        return 0
    events.write(event="ready", device=device)
    state = _import(plan, events, jax)
    state["device"] = device
    state["memory_limit"] = plan.get("memory_limit", 0)
    for entry in plan["findings"][plan.get("start", 0):]:
        events.write(event="start", index=entry["index"])
        verdict, evidence = _check(entry, plan, state)
        events.write(event="result", index=entry["index"], verdict=verdict, evidence=_one_line(evidence))
    events.write(event="done")
    return 0


def _record_exits(events: Events, path: str) -> None:
    """`os._exit` called by the user's code ends the worker at once: note the status and the
    line first, so the launcher can say so (the keeper sees the status too, but not the line)."""
    real_exit = os._exit
    worker = os.getpid()

    def recorded_exit(status: int) -> None:
        if os.getpid() == worker:  # not in a process the user's code forked
            try:
                events.write(event="exit-call", status=status, line=_caller_line(sys._getframe(1), path))
            except Exception:  # noqa: BLE001 - exiting matters more than the note
                pass
        real_exit(status)

    os._exit = recorded_exit


def _caller_line(frame, path: str) -> int | None:
    """The innermost line of `path` on the stack from `frame` outwards."""
    from .tracebacks import same_file

    while frame is not None:
        if same_file(frame.f_code.co_filename, path):
            return frame.f_lineno
        frame = frame.f_back
    return None


def _select_device(jax, wanted: str | None) -> str:
    if wanted:
        device = jax.devices(wanted)[0]
        jax.config.update("jax_default_device", device)
    else:
        device = jax.devices()[0]
    name = str(device)
    kind = getattr(device, "device_kind", "") or ""
    return name if not kind or kind.lower() in name.lower() else f"{name} ({kind})"


# -- importing the module -----------------------------------------------------------------------
def _import(plan: dict, events: Events, jax) -> State:
    """Import the module by its package name, statement by statement (units.py); with module-level
    findings that JAX's key-reuse checker decides (JAX101), first with that checker on (see
    subject.py for what a confirmer may rely on)."""
    for root in reversed(plan["roots"]):
        if root not in sys.path:
            sys.path.insert(0, root)
    state: State = {"module": None, "import_error": None, "cache": {}, "checked_errors": [], "units": None}
    checked = any(e["function"] is None and e["check"]["check"] == "key-reuse-checker" for e in plan["findings"])
    recorder = _recorder(plan)
    load = _observed((lambda: recorder.watching(lambda: _load(plan))) if recorder is not None
                     else (lambda: _load(plan)), plan, state)
    events.write(event="importing")
    if checked:
        before = set(sys.modules)
        with jax.debug_key_reuse(True):
            module, error, units = load()
        state["checked_errors"] = _raised(error, units)
        if state["checked_errors"]:
            # Import again with checking off: what the module defines must not depend on the checker.
            for name in set(sys.modules) - before:  # what the failed import left half-made
                del sys.modules[name]
            module, error, units = _load(plan)
    else:
        module, error, units = load()
    if error is not None:
        state["import_error"] = _error_record(error, plan["path"])
    state["caught_errors"] = [e for e in state.pop("observed", []) if not _escaped(e, error, units)]
    state["fatal_import_error"] = error
    state["units"] = units
    for failure in units.failures if units is not None else ():
        events.write(event="skipped", line=failure.line,
                     error=_one_line(f"{type(failure.error).__name__}: {failure.error}")[:300])
    state["module"] = module
    state["examples"], state["examples_error"] = _examples(plan)
    events.write(event="imported", ok=module is not None)
    if recorder is not None and module is not None:
        # The program's entry points run now, for their calls' arguments: should they end the
        # worker, the launcher starts another one that does not run them.
        events.write(event="recording")
        recorder.run_entry_points(module, _source(plan, state), _entry_budget(plan))
        events.write(event="recorded", entry_points=recorder.entry_points, functions=sorted(recorder.records))
    state["recorder"] = recorder
    return state


def _observed(load, plan: dict, state: State):
    """`load`, watching for the exceptions raised in the module's own frames (into
    `state["observed"]`): one that the module's code catches is still evidence of its line."""
    from .tracebacks import raised_in

    def observed():
        ran = state["module_lines"] = set()
        with raised_in(plan["path"], ran) as raised:
            try:
                return load()
            finally:
                state["observed"] = list(raised)

    return observed


def _escaped(error: BaseException, fatal: BaseException | None, units) -> bool:
    """Whether `error` ended a top-level statement (or the import) rather than being caught."""
    from .tracebacks import caught

    ended = [failure.error for failure in units.failures] if units is not None else []
    return not all(caught([error], escaped) for escaped in [*ended, fatal])


def _recorder(plan: dict):
    """A recorder for the calls of the flagged functions (and of the functions called to reach
    nested ones), or None when recording is off for this worker."""
    from .recording import Recorder, Target

    if not plan.get("record", True):
        return None
    targets: dict[str, Target] = {}
    for entry in plan["findings"]:
        facts = entry["function"]
        for function in (facts, (facts or {}).get("outer")):
            if function and function["kind"] != "property" and function["qualname"] not in targets:
                targets[function["qualname"]] = Target(
                    function["qualname"], function["name"], frozenset({function["first_line"], function["def_line"]}),
                    skip_receiver=function["kind"] in ("method", "classmethod"))
    # A notebook's calls are named by line of the joined cells, which the parent turns into cells.
    display = None if plan.get("source") is not None else os.path.basename(plan["path"])
    return Recorder(plan["path"], list(targets.values()), display) if targets else None


def _entry_budget(plan: dict) -> float:
    from .recording import ENTRY_BUDGET_S

    return min(ENTRY_BUDGET_S, float(plan.get("timeout", 60)) / 4)


def _raised(error: BaseException | None, units) -> list[BaseException]:
    """Every exception an import raised: the skipped statements', then the one that ended it."""
    raised = [failure.error for failure in units.failures] if units is not None else []
    return raised + ([error] if error is not None else [])


#: The planner's prefix for a file that cannot be imported by name (`train.old.py`, `01_intro.py`).
BY_PATH_PREFIX = "__jaxlint_path__."


def _load(plan: dict):
    """(module or None, the exception that ended the import or None, the UnitRun or None)."""
    name, path = plan["module"], plan["path"]
    if plan.get("source") is not None:
        return _load_source(name, path, plan["source"])
    try:
        if name.startswith(BY_PATH_PREFIX):
            return _load_units(name, path)
        top = name.split(".")[0]
        clash = sys.modules.get(top)
        if clash is not None and not _under(getattr(clash, "__file__", None), plan["roots"]):
            # The name is taken in this process (a standard-library module, or jaxlint's own
            # dependencies): load the file under a private name; relative imports then fail.
            return _load_units(f"__jaxlint_subject__.{name}", path)
        parent, _, child = name.rpartition(".")
        if parent:
            importlib.import_module(parent)  # its packages, as an import runs them (a failure ends it)
        module = sys.modules.get(name)
        if module is not None:  # its package imported it already
            units = None
        else:
            spec = importlib.util.find_spec(name)
            if spec is None or not spec.origin or os.path.realpath(spec.origin) != os.path.realpath(path):
                return _load_units(f"__jaxlint_subject__.{name}", path)  # another module shadows it
            module, error, units = _run_module(name, spec, path)
            if error is not None:
                return None, error, units
            if parent:
                setattr(sys.modules[parent], child, module)
        file = getattr(module, "__file__", None)
        if file is None or os.path.realpath(file) != os.path.realpath(path):
            return _load_units(f"__jaxlint_subject__.{name}", path)  # another module shadows it
        return module, None, units
    except BaseException as exc:  # noqa: B036 - SystemExit and KeyboardInterrupt at import too
        return None, exc, None


def _load_units(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    return _run_module(name, spec, path)


def _run_module(name: str, spec, path: str):
    """Make the module from its spec and run its code unit by unit, as its loader would run it whole."""
    from .units import run_units

    with open(path, "rb") as handle:
        source = importlib.util.decode_source(handle.read())
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    units = run_units(module.__dict__, source, path)
    if units.fatal is not None:
        sys.modules.pop(name, None)  # as a failed import leaves it
        return None, units.fatal, units
    return sys.modules.get(name, module), None, units


def _load_source(name: str, path: str, source: str):
    """A notebook: its joined code cells run as a module, with the notebook's path as file name
    (so tracebacks name it) and the joined text registered as its lines."""
    import linecache

    from .units import run_units

    linecache.cache[path] = (len(source), None, source.splitlines(keepends=True), path)
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    units = run_units(module.__dict__, source, path)
    if units.fatal is not None:
        return None, units.fatal, units
    return module, None, units


def _load_file(name: str, path: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _under(file: str | None, roots: list[str]) -> bool:
    if not file:
        return False
    real = os.path.realpath(file)
    return any(real.startswith(os.path.realpath(root) + os.sep) for root in roots[:1])


def _error_record(error: BaseException, path: str) -> dict:
    from .tracebacks import frames_in

    record = {"type": type(error).__name__, "message": _one_line(str(error))[:300],
              "lines": [line for line, _ in frames_in(error, path)]}
    if isinstance(error, SystemExit):
        # As the interpreter would exit: None is 0, an integer itself, anything else 1 (and printed).
        code = error.code
        record["status"] = 0 if code is None else code if isinstance(code, int) else 1
    return record


def _examples(plan: dict) -> tuple[dict, str | None]:
    """Declared examples for this module: pyproject's (from the plan), then `jaxlint_examples.py`."""
    examples = dict(plan.get("examples", {}))
    beside = Path(plan["path"]).parent / "jaxlint_examples.py"
    if not beside.is_file():
        return examples, None
    try:
        module = _load_file("__jaxlint_examples__", str(beside))
    except BaseException as exc:  # noqa: B036
        return examples, f"{beside.name} could not be imported: {type(exc).__name__}: {exc}"
    declared = getattr(module, "EXAMPLES", None)
    if not isinstance(declared, dict):
        return examples, f"{beside.name} has no EXAMPLES dict"
    here = Path(plan["path"]).resolve()
    for key, value in declared.items():
        where, _, qualname = str(key).rpartition(":")
        if where.endswith(".py"):
            matches = (beside.parent / where).resolve() == here
        else:
            matches = where == plan["module"] or where == here.stem
        if matches:
            examples.setdefault(qualname, {"value": value, "source": beside.name})
    return examples, None


# -- one finding ----------------------------------------------------------------------------------
def _check(entry: dict, plan: dict, state: State) -> tuple[str, str]:
    try:
        outcome = _outcome(entry, plan, state)
    except BaseException as exc:  # noqa: B036 - one failing check must not cost the others
        return "inconclusive", f"the {entry['code']} check failed: {type(exc).__name__}: {exc}"
    if outcome.verdict == "inconclusive" and entry["function"] is not None:
        needed = _needed_failure(entry["function"], plan, state)
        if needed is not None:
            return "inconclusive", needed
        return "inconclusive", _with_advice(outcome.evidence, entry["function"], state)
    return outcome.verdict, outcome.evidence


#: Evidence of an inconclusive check whose inputs were guessed and did not fit the function.
_GUESSED = re.compile(r"^(no input set reached|the call raised)|did not run with these inputs")


def _with_advice(evidence: str, facts: dict, state: State) -> str:
    """What the user can do when guessed inputs did not fit: declare an example."""
    qualname = facts["qualname"]
    if not _GUESSED.search(evidence) or qualname in state.get("examples", {}):
        return evidence
    recorder = state.get("recorder")
    if recorder is not None and recorder.records.get(qualname):
        return evidence  # the program's own inputs: no guess to replace
    return (f"{evidence}; declare example inputs for `{qualname}` (pyproject.toml "
            f"[tool.jaxlint.runtime.examples] or jaxlint_examples.py) to check it")


def _needed_failure(facts: dict, plan: dict, state: State) -> str | None:
    """Why an inconclusive finding could not be checked, when its function reads a name that a
    skipped top-level statement left undefined (a package that is not installed, most often)."""
    from .missing import needs_package
    from .units import global_reads

    units = state.get("units")
    if units is None or not units.unbound:
        return None
    _compiled(plan, state)
    reads: set[str] = set()
    for function in (facts, facts.get("outer")):  # the outer one: called to reach a nested one
        if function:
            lines = {function["first_line"], function["def_line"]}
            code = next((c for c in state["codes"] if c.co_name == function["name"] and c.co_firstlineno in lines),
                        None)
            reads |= global_reads(code, state.get("module_code")) if code is not None else set()
            reads.add(function["qualname"].split(".")[0])  # a class or def that itself failed
    hits = sorted(((units.unbound[name], name) for name in reads if name in units.unbound),
                  key=lambda hit: (hit[0].root.line, hit[1]))
    if not hits:
        return None
    failure, name = hits[0]
    while failure.cause is not None:  # the name that the first failure of the chain left undefined
        name, failure = failure.error.name, failure.cause
    root = failure
    error = f"{type(root.error).__name__} at line {root.line}"
    if root.package is not None:
        return needs_package(root.package, name, error)
    return (f"needs `{name}`, which the module does not define: line {root.line} raised "
            f"{type(root.error).__name__}: {_one_line(str(root.error))[:160]} and was skipped while importing it")


def _outcome(entry: dict, plan: dict, state: State):
    """What the finding's rule predicts (`entry["check"]`, from its catalogue entry), tried."""
    from . import errors, keys
    from .subject import Outcome

    check = entry["check"]
    if state.get("examples_error"):
        return Outcome("inconclusive", state["examples_error"])
    if entry["function"] is None:
        return _module_level(entry, plan, state)
    if state["module"] is None:
        return Outcome("inconclusive", _import_failure(state))
    subject, reason = _subject(entry, plan, state)
    if subject is None:
        through = _through_callers(entry, plan, state) if check["check"] == "raises" else None
        return through or Outcome("inconclusive", reason)
    if check["check"] == "raises":
        outcome = errors.confirm(subject, check["raises"], state["cache"])
        if outcome.verdict != "confirmed" and not subject.extra.get("recorded"):
            return _through_callers(entry, plan, state) or outcome
        return outcome
    if check["check"] == "key-reuse-checker":
        mine = keys.confirm(subject)
        if mine.verdict == "confirmed":
            return mine
        fallback = _behaviour(check, subject, state)
        if fallback is None or (fallback.verdict != "confirmed" and mine.verdict == "not-reproduced"):
            return mine
        if fallback.verdict != "confirmed" and keys.UNSEEN_CONSUMER in mine.evidence:
            return mine  # the draws compared are jax.random's: the library's consumption is as unseen there
        if fallback.verdict == "not-reproduced" and subject.inputs is not None and not subject.inputs.from_caller:
            return Outcome("inconclusive", f"{fallback.evidence}, but these inputs are guesses: declare example "
                                           f"inputs for `{subject.qualname}`, or call it from the module, its "
                                           f"`__main__` block or a test, to settle it")
        return fallback
    return _behaviour(check, subject, state) or Outcome("inconclusive", "no runtime check for this rule yet")


def _through_callers(entry: dict, plan: dict, state: State):
    """A helper traced because traced functions call it, run through one of them: the caller
    gets its own inputs, and the helper the arguments the code really builds. The outcome only
    when it confirms the finding (at the flagged line, inside the helper)."""
    from . import errors

    helper = entry["function"] or {}
    for caller in helper.get("via", ()):
        through, _reason = _subject({**entry, "function": caller}, plan, state)
        if through is None:
            continue
        # The error must be raised inside the helper, at the flagged line.
        through.function_lines = (helper["first_line"], helper["end_line"])
        through.extra["inner_qualname"] = helper["qualname"]
        through.extra["through_caller"] = True
        outcome = errors.confirm(through, entry["check"]["raises"], state["cache"])
        if outcome.verdict == "confirmed":
            return outcome
    return None


def _behaviour(check: dict, subject, state: State):
    """The outcome of the behaviour check the rule names, if the behaviour package provides it."""
    from .subject import Outcome

    if "confirmers" not in state:
        try:
            from .behaviour import CONFIRMERS
            state["confirmers"] = dict(CONFIRMERS)
        except ImportError:
            state["confirmers"] = {}
        except Exception as exc:  # noqa: BLE001 - a broken package must not take down the others
            state["confirmers"] = {}
            state["confirmers_error"] = f"{type(exc).__name__}: {exc}"
    code = subject.code
    confirmer = state["confirmers"].get(check.get("behaviour"))
    if confirmer is None:
        if state.get("confirmers_error"):
            return Outcome("inconclusive", f"the behaviour checks could not be loaded: {state['confirmers_error']}")
        return None
    try:
        outcome = confirmer(subject)
    except BaseException as exc:  # noqa: B036
        return Outcome("inconclusive", f"the {code} check failed: {type(exc).__name__}: {exc}")
    if not isinstance(outcome, Outcome) or outcome.verdict not in ("confirmed", "not-reproduced", "inconclusive"):
        return Outcome("inconclusive", f"the {code} check returned {outcome!r}")
    return outcome


def _import_failure(state: State) -> str:
    """Why the module is not there to check: it raised, or it called `sys.exit` while imported."""
    record = state["import_error"] or {}
    if record.get("type") == "SystemExit":
        where = f" at line {record['lines'][-1]}" if record.get("lines") else ""
        return f"the module exited with status {record['status']} (sys.exit){where} while being imported"
    return f"the module could not be imported: {_import_reason(state)}"


def _import_reason(state: State) -> str:
    record = state["import_error"] or {}
    where = f" at line {record['lines'][-1]}" if record.get("lines") else ""
    message = f": {record['message']}" if record.get("message") else ""
    if record.get("type") == "MemoryError" and state.get("memory_limit"):
        message += f" (memory limit {state['memory_limit']} MiB)"
    return f"{record.get('type', 'error')}{where}{message}"


def _module_level(entry: dict, plan: dict, state: State):
    """A finding outside any function: judged by what importing the module did."""
    from . import errors
    from .subject import Outcome
    from .tracebacks import frames_in, raised_on

    check, span = entry["check"], (entry["line"], max(entry["end_line"], entry["line"]))
    keyed = check["check"] == "key-reuse-checker"
    if check["check"] == "raises" or keyed:
        fatal = state.get("fatal_import_error")
        raised = (state["checked_errors"] if keyed else []) or _raised(fatal, state["units"])
        checker = " with jax.debug_key_reuse on" if keyed else ""
        here = [error for error in raised if raised_on(error, plan["path"], span, module_level=True)]
        for error in here:
            expected = type(error).__name__ == "KeyReuseError" if keyed else errors.predicted(check["raises"], error)
            if expected:
                return Outcome("confirmed", f"{type(error).__name__} at line {entry['line']} "
                                            f"while importing the module{checker}")
        handled = [] if keyed else [error for error in state.get("caught_errors", ())
                                    if raised_on(error, plan["path"], span, module_level=True)
                                    and errors.predicted(check["raises"], error)]
        if handled:
            return Outcome("confirmed", f"{type(handled[0]).__name__} at line {entry['line']}, caught by the code, "
                                        "while importing the module")
        if here:
            error = here[0]
            return Outcome("inconclusive", f"line {entry['line']} raised another error while importing the module: "
                                           f"{type(error).__name__}: {_one_line(str(error))[:200]}")
        stopped = frames_in(fatal, plan["path"], module_level=True) if fatal is not None else []
        if fatal is not None and (not stopped or stopped[-1][0] < entry["line"]):
            return Outcome("inconclusive", f"the import failed elsewhere: {_import_reason(state)}")
        ran = state.get("module_lines")
        if ran is not None and not any(line in ran for line in range(span[0], span[1] + 1)):
            return Outcome("inconclusive", f"line {entry['line']} did not run while importing the module "
                                           "(a branch or a loop the import does not take)")
        # The flagged statement ran and raised nothing.
        if keyed:
            # The checker saw nothing; legacy keys escape it, so compare the draws themselves.
            compared = _behaviour(check, _module_subject(entry, plan, state), state)
            if compared is not None and compared.verdict == "confirmed":
                return compared
            if "PRNGKey" in _source(plan, state):
                return Outcome("inconclusive", "the module imported cleanly, but it makes legacy jax.random.PRNGKey "
                                               "keys, which JAX's key-reuse checker does not track")
        if not raised:
            return Outcome("not-reproduced", f"the module imported cleanly{checker}")
        return Outcome("not-reproduced", f"line {entry['line']} ran without error while importing the module{checker}")
    return _behaviour(check, _module_subject(entry, plan, state), state) or Outcome(
        "inconclusive", "no runtime check for this rule yet")


def _module_subject(entry: dict, plan: dict, state: State):
    from .subject import Subject

    return Subject(code=entry["code"], line=entry["line"], path=plan["path"], message=entry["message"],
                   module=state["module"], function=None, python_function=None, qualname=None, inputs=None,
                   source=_source(plan, state), end_line=entry["end_line"], device=state.get("device", ""),
                   extra={"import_error": state["import_error"], "modes": [], "transforms": [], "traced_params": []})


def _source(plan: dict, state: State) -> str:
    if "source" not in state and plan.get("source") is not None:
        state["source"] = plan["source"]  # a notebook's joined cells
    if "source" not in state:
        try:
            state["source"] = Path(plan["path"]).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            state["source"] = ""
    return state["source"]


# -- the function and its inputs ----------------------------------------------------------------
def _subject(entry: dict, plan: dict, state: State):
    from . import inputs as inputs_module
    from .subject import Subject

    facts = entry["function"]
    example = state["examples"].get(facts["qualname"])
    exposed, plain, reason = _locate(facts, plan, state, _init(example))
    inner = None
    if reason and facts.get("outer") and example is None:
        # Not callable on its own (it uses the enclosing function's variables): call the
        # enclosing module-level function, which defines it and runs it the way the code does.
        outer = facts["outer"]
        outer_example = state["examples"].get(outer["qualname"])
        exposed, plain, outer_reason = _locate(outer, plan, state, _init(outer_example))
        if outer_reason is None:
            inner, facts, example, reason = facts["qualname"], outer, outer_example, None
    if reason:
        return None, reason
    params = facts["params"]
    if facts["kind"] in ("method", "classmethod") and params:
        params = params[1:]  # bound: self / cls is supplied
    traced = set(facts["traced_params"]) if facts["modes"] else None
    static = tuple(p["name"] for p in params if traced is not None and p["name"] not in traced
                   and p["default"] is None and p["kind"] not in ("var_positional", "var_keyword"))
    if example is not None:
        try:
            declared, _ = inputs_module.example_inputs(example["value"], example["source"], static)
        except Exception as exc:  # noqa: BLE001 - a bad example is the user's to fix: say what is wrong
            return None, f"the declared example for {facts['qualname']} is not usable: {type(exc).__name__}: {exc}"
        candidates = [declared]
        recorded = [declared]  # the user's word: as authoritative as a recorded call
    else:
        abstract = not (set(facts["modes"]) <= {"grad"})  # untransformed, or traced abstractly
        recorder = state.get("recorder")
        recorded = recorder.inputs(facts["qualname"], abstract and traced is not None,
                                   transformed=bool(facts["modes"])) if recorder else []
        # The program's own calls say what the function takes: they come first, and one that runs
        # cleanly settles the finding (a probe that confirms what no call does proves nothing).
        # Guesses follow, for recorded calls that fail some other way.
        guesses = inputs_module.candidates(params, traced, abstract=abstract, calls=facts.get("calls"))
        candidates = [*recorded, *_with_structures(guesses, params, state)]
    modes = facts["modes"]
    subject = Subject(
        code=entry["code"], line=entry["line"], path=plan["path"], message=entry["message"],
        module=state["module"], function=exposed, python_function=plain, qualname=facts["qualname"],
        inputs=candidates[0] if candidates else None, trace_mode=",".join(modes) or None,
        source=_source(plan, state), end_line=entry["end_line"],
        function_lines=(facts["first_line"], facts["end_line"]), candidates=candidates,
        device=state.get("device", ""),
        extra={"modes": list(modes), "transforms": facts["transforms"], "traced_params": facts["traced_params"]},
    )
    subject.extra["recorded"] = bool(recorded)
    if inner is not None:
        subject.extra["inner_qualname"] = inner  # the flagged function, defined inside `qualname`
    return subject, None


def _with_structures(guesses: list, params: list[dict], state: State) -> list:
    """The guesses, with one before the first probes in which the parameters annotated with a
    dataclass or NamedTuple get an instance of it (structured.py)."""
    from .structured import structured_inputs

    first = next((i for i, g in enumerate(guesses) if g.description.startswith(("annotations:", "probes:"))), None)
    if first is None or state.get("module") is None:
        return guesses
    built = structured_inputs(params, guesses[first], state["module"].__dict__)
    return guesses if built is None else [*guesses[:first], built, *guesses[first:]]


def _init(example: dict | None) -> list | None:
    """The constructor arguments an example declares for a method's class (`init`)."""
    if example is None:
        return None
    value = example["value"]() if callable(example["value"]) else example["value"]
    return value.get("init") if isinstance(value, dict) else None


def _locate(facts: dict, plan: dict, state: State, init) -> tuple[Any, Any, str | None]:
    """(as the module exposes it, the plain function, None) or (None, None, why not)."""
    module = state["module"]
    qualname, kind = facts["qualname"], facts["kind"]
    if kind == "property":
        return None, None, f"{qualname} is a property: runtime mode does not call properties"
    if facts["nested"]:
        if kind in ("method", "classmethod"):
            return None, None, (f"{qualname} is a method of a class defined inside a function: "
                                "move it to module level to check it")
        plain, reason = _rebuild(facts, plan, state)
        return plain, plain, reason
    owner: Any = module
    for part in qualname.split(".")[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return None, None, f"{qualname} is not reachable from the imported module"
    name = qualname.rsplit(".", 1)[-1]
    if kind == "method":
        from .inputs import from_example

        try:
            instance = owner(*(from_example(v) for v in (init or [])))
        except BaseException as exc:  # noqa: B036
            return None, None, (f"method of {facts['class']}: {facts['class']}({'...' if init else ''}) raised "
                                f"{type(exc).__name__}: {_one_line(str(exc))[:120]}; declare an example input "
                                f"with `init` (the constructor's arguments)")
        owner = instance
    exposed = getattr(owner, name, None)
    if exposed is None:
        plain, reason = _rebuild(facts, plan, state) if kind == "function" else (None, "not found")
        if reason:
            return None, None, f"{qualname} is not an attribute of the imported module ({reason})"
        return plain, plain, None
    plain = _unwrap(exposed, plan["path"], facts)
    if plain is not None and kind in ("method", "classmethod") and isinstance(plain, types.FunctionType):
        plain = types.MethodType(plain, owner)  # a wrapped method (`@jax.jit def step(self, x)`): bind it
    if plain is None:
        if kind != "function":
            return None, None, f"{qualname} is wrapped by something runtime mode cannot see through"
        plain, reason = _rebuild(facts, plan, state)  # rebound to something else: use the def itself
        if reason:
            return None, None, reason
        return plain, plain, None
    return exposed, plain, None


def _code_of(obj: Any):
    obj = getattr(obj, "__func__", obj)
    return getattr(obj, "__code__", None)


def _unwrap(obj: Any, path: str, facts: dict) -> Any:
    """The plain function under wrappers (`__wrapped__`, `functools.partial`), if it is this def."""
    from .tracebacks import same_file

    lines = {facts["first_line"], facts["def_line"]}
    for _ in range(12):
        code = _code_of(obj)
        if code is not None and same_file(code.co_filename, path) and code.co_firstlineno in lines:
            return obj
        following = getattr(obj, "__wrapped__", None) or getattr(obj, "func", None)
        if following is None or following is obj:
            return None
        obj = following
    return None


def _compiled(plan: dict, state: State) -> None:
    """The module's source compiled once: every code object in it (`codes`), and the module's own."""
    if "codes" not in state:
        try:
            state["module_code"] = compile(_source(plan, state), plan["path"], "exec")
            state["codes"] = list(_all_codes(state["module_code"]))
        except (SyntaxError, ValueError) as exc:
            state["codes"] = []
            state["codes_error"] = str(exc)


def _rebuild(facts: dict, plan: dict, state: State) -> tuple[Any, str | None]:
    """A nested function or lambda rebuilt from the module's compiled code, if it is self-contained."""
    _compiled(plan, state)
    lines = {facts["first_line"], facts["def_line"]}
    name = facts["name"]
    code = next((c for c in state["codes"] if c.co_name == name and c.co_firstlineno in lines), None)
    if code is None:
        return None, f"{facts['qualname']} could not be found in the module's code"
    outer = facts["qualname"].rsplit(".<locals>.", 1)[0]
    if code.co_freevars:
        return None, (f"{facts['qualname']} uses variables of {outer}() ({', '.join(code.co_freevars)}): it cannot be "
                      f"called on its own; move it to module level or declare it in a module-level function")
    namespace = state["module"].__dict__
    positional, keyword = [], {}
    try:
        for param in facts["params"]:
            if param["default"] is None:
                if positional and param["kind"] in ("positional_only", "positional"):
                    raise ValueError(param["name"])
                continue
            value = eval(param["default"], namespace)  # noqa: S307 - the user's own default, in the worker
            if param["kind"] == "keyword_only":
                keyword[param["name"]] = value
            else:
                positional.append(value)
    except Exception:  # noqa: BLE001
        return None, f"the defaults of {facts['qualname']} depend on {outer}(): it cannot be called on its own"
    function = types.FunctionType(code, namespace, name, tuple(positional) or None)
    function.__kwdefaults__ = keyword or None
    return function, None


def _all_codes(code):
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield const
            yield from _all_codes(const)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
