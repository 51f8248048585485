"""Runtime mode (`jaxlint check --runtime`): confirm static findings by running JAX on them.

Nothing here imports JAX or the user's code: each module with findings to check is imported in
its own worker process (`worker.py`), under a time and a memory limit, and the findings come
back with a `runtime` verdict. See docs/runtime.md.
"""
from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Sequence

from ..model.settings import Settings
from ..model.finding import Finding

VERDICTS = ("confirmed", "not-reproduced", "inconclusive")
#: Worker processes at once, at most: each one imports JAX and may use several cores.
MAX_JOBS = 4


class RuntimeUnavailable(Exception):
    """Runtime mode cannot run at all here (JAX is not installed)."""


@dataclass
class RuntimeOptions:
    device: str | None = None  # "cpu", "gpu", "tpu"; None: JAX's default backend
    jobs: int = 1
    progress: bool = False


def jax_available() -> bool:
    return importlib.util.find_spec("jax") is not None


def confirm(findings: Sequence[Finding], settings: Settings, options: RuntimeOptions,
            project=None, notes: list[str] | None = None) -> list[Finding]:
    """The findings, in the same order, those of the runtime families with `runtime` set.
    `project`: the `ProjectSession` they were found in: a function traced by a caller in another
    module is planned as traced, with the parameters that caller traces. `notes`, when given,
    gets a line for each top-level statement (notebook: cell) that failed and was skipped."""
    from .launcher import RuntimeRun, allow_runs, stop_all
    from .planner import plan_module, runs_at_runtime

    if not jax_available():
        raise RuntimeUnavailable("runtime mode needs JAX: install JAX where jaxlint runs (`pip install jax`, or the `runtime` extra: `pip install '.[runtime]'` from a checkout)")
    runtime = settings.runtime
    examples = dict(runtime.examples)
    by_path: dict[str, list[tuple[int, Finding]]] = {}
    for index, finding in enumerate(findings):
        if runs_at_runtime(finding.code):
            by_path.setdefault(finding.path, []).append((index, finding))
    plans = [plan_module(path, items, settings, examples, runtime.python_path, project)
             for path, items in by_path.items()]
    verdicts: dict[int, dict] = {}
    fallback_device = ""  # no worker ran: no device was used
    for plan in plans:
        if notes is not None:
            notes.extend(f"{plan.path}: {where} does not parse ({error}) and was skipped; the rest of the notebook "
                         f"was still run" for where, error in plan.unparsed)
        if plan.reason:
            for index, _ in plan.findings:
                verdicts[index] = _runtime("inconclusive", plan.reason, fallback_device)
    runnable = [plan for plan in plans if plan.payload is not None]
    if options.device and runnable:
        from .launcher import missing_device

        why = missing_device(options.device)
        if why is not None:
            raise RuntimeUnavailable(f"--device {options.device}: JAX finds no {options.device} device here ({why}); "
                                     f"leave out --device to run on JAX's default backend")
    allow_runs()
    run = RuntimeRun(runtime, options.device, settings_x64(settings))
    progress = _Progress(len(runnable)) if options.progress and runnable else None

    def one(plan):
        result = run.check_module(plan.payload)
        if plan.notebook is not None:
            result.verdicts = {i: (v, plan.notebook.translate(e)) for i, (v, e) in result.verdicts.items()}
        return plan, result

    not_isolated: set[str] = set()
    scrubbed: set[str] = set()
    jobs = max(1, min(options.jobs, MAX_JOBS, len(runnable) or 1))
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            try:
                for plan, result in pool.map(one, runnable):
                    device = result.device or fallback_device
                    for index, (verdict, evidence) in result.verdicts.items():
                        verdicts[index] = _runtime(verdict, evidence, device)
                    not_isolated.update(result.not_isolated)
                    scrubbed.update(result.scrubbed)
                    if notes is not None:
                        confirmed = {finding.start.line for index, finding in plan.findings
                                     if result.verdicts.get(index, ("",))[0] == "confirmed"}
                        notes.extend(_skipped_notes(plan, [(line, error) for line, error in result.skipped
                                                           if line not in confirmed or plan.notebook is not None]))
                    if progress:
                        progress.step()
            except BaseException:  # Ctrl-C: the workers are in their own sessions and would run on
                pool.shutdown(wait=False, cancel_futures=True)
                stop_all()
                raise
    finally:
        run.close()
    if progress:
        progress.done()
    if notes is not None:
        notes.extend(isolation_notes(sorted(not_isolated)))
        if scrubbed:
            notes.append(f"{_LEFT_OUT} ({', '.join(sorted(scrubbed))}); `pass-env` in [tool.jaxlint.runtime] "
                         f"keeps the ones it needs")
    return [replace(f, runtime=verdicts[i]) if i in verdicts else f for i, f in enumerate(findings)]


def _skipped_notes(plan, skipped: list[tuple[int, str]]) -> list[str]:
    """`m.py: line 4 raised ...` for each failed statement (`cell 3, line 2` in a notebook)."""
    lines = []
    for line, error in skipped:
        where = plan.notebook.cell_line(line) if plan.notebook is not None else f"line {line}"
        rest = "notebook" if plan.notebook is not None else "module"
        error = error if len(error) <= 120 else error[:117] + "..."
        lines.append(f"{plan.path}: {where} raised {error} and was skipped; the rest of the {rest} was still run")
    return lines


#: Skipped statements listed by `note_lines` without `--verbose`.
SHOWN_SKIPPED = 3
_SKIPPED = " and was skipped; "
#: The note naming the credentials left out of the workers' environment: `--verbose` only.
_LEFT_OUT = "environment variables that look like credentials were left out of the checked code's environment"


def note_lines(notes: Sequence[str], verbose: bool = False) -> list[str]:
    """The notes to print: every one with `verbose`; otherwise the first few skipped statements
    and a count of the others (a tutorial notebook may skip a hundred), and not the names of the
    credentials left out of the workers' environment."""
    if verbose:
        return list(notes)
    notes = [note for note in notes if not note.startswith(_LEFT_OUT)]
    skipped = [note for note in notes if _SKIPPED in note]
    if len(skipped) <= SHOWN_SKIPPED:
        return list(notes)
    shown = set(skipped[:SHOWN_SKIPPED])
    rest = len(skipped) - SHOWN_SKIPPED
    kept = [note for note in notes if _SKIPPED not in note or note in shown]
    kept.append(f"{len(skipped)} top-level statements raised and were skipped in all ({rest} more than the "
                f"{SHOWN_SKIPPED} above; `--verbose` lists them)")
    return kept


def isolation_notes(missing: Sequence[str]) -> list[str]:
    """A line for what the workers ran without (sandbox.py): the network, a private /dev/shm."""
    lines = []
    for entry in missing:
        what, _, why = entry.partition(": ")
        reach = "the network" if what.startswith("network") else "the machine's /dev/shm"
        if what.startswith("network and"):
            reach += " and the machine's /dev/shm"
        lines.append(f"the checked code could reach {reach} ({why}); run `--runtime` on code you do not "
                     f"trust only inside a disposable container (docs/runtime.md#isolation)")
    return lines


def settings_x64(settings: Settings) -> bool:
    return bool(getattr(settings, "enable_x64", False))


def _runtime(verdict: str, evidence: str, device: str) -> dict:
    return {"verdict": verdict, "evidence": evidence, "device": device}


def drop_refuted(findings: Sequence[Finding]) -> list[Finding]:
    """`--runtime-drop-refuted`: without the findings JAX did not reproduce."""
    return [f for f in findings if not (f.runtime and f.runtime.get("verdict") == "not-reproduced")]


def summary_line(findings: Sequence[Finding], dropped: int = 0) -> str:
    """`Runtime on cpu:0: 5 confirmed, 1 not reproduced, 2 inconclusive; 3 findings of static-only rules.`,
    then a line per package that findings need and that is not installed."""
    from .missing import install_lines

    counts = Counter(f.runtime["verdict"] for f in findings if f.runtime)
    devices = sorted({f.runtime.get("device", "") for f in findings if f.runtime} - {""})
    parts = [f"{counts.get(v, 0)} {v.replace('-', ' ')}" for v in VERDICTS]
    static = sum(1 for f in findings if not f.runtime)
    line = f"Runtime{' on ' + ', '.join(devices) if devices else ''}: {', '.join(parts)}"
    if dropped:
        line += f" ({dropped} not reproduced dropped)"
    if static:
        line += f"; {static} finding{'s' if static != 1 else ''} of rules with no runtime check"
    lines = [line + "."]
    lines += [f"Runtime: {text}." for text in install_lines(f.runtime["evidence"] for f in findings
                                                           if f.runtime and f.runtime["verdict"] == "inconclusive")]
    return "\n".join(lines)


class _Progress:
    """`[n/N] modules` on a terminal's stderr, rewritten in place (the static run's style)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0
        self._write()

    def step(self) -> None:
        self.count += 1
        self._write()

    def _write(self) -> None:
        sys.stderr.write(f"\rjaxlint: runtime checks {self.count}/{self.total} modules")
        sys.stderr.flush()

    def done(self) -> None:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
