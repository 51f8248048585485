"""Fuzz jaxlint's analysis and `--fix` for as long as asked, in parallel, and keep what breaks.

The same programs and checks as the CI fuzz test (tests/reliability/test_fuzz.py), but with fresh
seeds and no bound. Generators: `grammar` and `nodes`, generic programs from hypothesmith (its
grammar, its libcst nodes) with `import jax` added; `jax`, JAX-shaped programs drawn from scratch;
`spliced`, the fixtures' and examples' code cut up, recombined and mutated; `notebook`, JAX-shaped
notebooks (all in tests/reliability/fuzz_programs.py). Each program is checked with one of the
settings variants, under the invariants of tests/reliability/fuzz_checks.py, within a time limit.
Every class of failure (the invariant, and the rule or exception and where it was raised) is
counted, and its first program is cut down line by line to a smaller one that fails the same way,
written to the output folder with a note saying how it failed.

    python scripts/fuzz.py --minutes 10
    python scripts/fuzz.py --examples 2000 --seed 7 --jobs 2 --out /tmp/jaxlint-fuzz
    python scripts/fuzz.py --generators jax,notebook --minutes 5

Programs are drawn in batches of 20, and a batch depends only on its seed (derived from `--seed`
and its number, and named in each failure's note): the same `--seed` and `--examples` draw the
same programs whatever `--jobs` is. Exit status: 0 nothing broke, 1 something did (see the table
and the output folder), 2 bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]
#: Hypothesis's caches, out of the current directory
HYPOTHESIS_HOME = Path(tempfile.gettempdir()) / "jaxlint-hypothesis"

GENERATORS = ("grammar", "nodes", "jax", "spliced", "notebook")
#: the order batches are handed out in: JAX-shaped programs (drawn and spliced) get most of the time
ROTATION = ("jax", "spliced", "grammar", "jax", "notebook", "spliced", "jax", "nodes", "spliced", "grammar")
BATCH = 20


class TooSlow(BaseException):
    """Raised by the timer inside the analysis; a BaseException so no `except Exception` there takes it."""


@dataclass
class Failure:
    generator: str
    kind: str
    signature: str
    detail: str
    program: bytes | str
    seed: int
    #: the index of the settings in `SETTINGS_VARIANTS`
    variant: int


@dataclass
class BatchResult:
    generator: str
    programs: int = 0
    skipped: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)


# -- one program --------------------------------------------------------------------------------
def violations_of(generator: str, program: bytes | str, variant: int) -> list | None:
    """The violations for one drawn program, checked with the settings `SETTINGS_VARIANTS[variant]`;
    None when it is skipped (a generic program that cannot be made to mention JAX without changing
    whether it compiles)."""
    from reliability.fuzz_checks import (SETTINGS_VARIANTS, Violation, compiles, notebook_violations,
                                         python_violations, with_jax_import)

    settings = SETTINGS_VARIANTS[variant]
    if generator in ("grammar", "nodes"):
        text = with_jax_import(program)
        return None if text is None else python_violations(text.encode("utf-8"), settings=settings)
    if generator == "notebook":
        return notebook_violations(program, settings=settings)
    if not compiles(program):
        return [Violation("generator-invalid", "program CPython rejects", "the generator drew invalid Python")]
    return python_violations(program, settings=settings)


def _timed(seconds: float, check: Callable[[], list | None]) -> list | None:
    from reliability.fuzz_checks import Violation

    def expire(signum, frame):
        raise TooSlow

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return check()
    except TooSlow:
        return [Violation("slow", f"over {seconds:g} s", f"the checks took more than {seconds:g} s")]
    except Exception as exc:  # in the checks themselves (the analysis's own are caught there): keep going
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return [Violation("checker-error", f"{type(exc).__name__} at {where}", f"{type(exc).__name__}: {exc}")]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _strategy(generator: str):
    import hypothesmith
    from reliability.fuzz_programs import jax_notebooks, jax_program_bytes, spliced_program_bytes

    return {"grammar": hypothesmith.from_grammar, "nodes": hypothesmith.from_node, "jax": jax_program_bytes,
            "spliced": spliced_program_bytes, "notebook": jax_notebooks}[generator]()


def run_batch(task: tuple[str, int, int, float]) -> BatchResult:
    """Draw `examples` programs of one generator from `seed` and check each (in a worker process)."""
    import warnings

    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies as st
    from hypothesis.configuration import set_hypothesis_home_dir
    from reliability.fuzz_checks import SETTINGS_VARIANTS

    generator, batch_seed, examples, limit = task
    set_hypothesis_home_dir(HYPOTHESIS_HOME)
    result = BatchResult(generator)
    started = time.perf_counter()

    @seed(batch_seed)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(_strategy(generator), st.integers(0, len(SETTINGS_VARIANTS) - 1))
    def check(program, variant):
        found = _timed(limit, lambda: violations_of(generator, program, variant))
        if found is None:
            result.skipped += 1
            return
        result.programs += 1
        result.failures.extend(Failure(generator, v.kind, v.signature, v.detail, program, batch_seed, variant)
                               for v in found)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check()
    result.seconds = time.perf_counter() - started
    return result


# -- reducing a failing program -----------------------------------------------------------------
def _reduce_lines(lines: list, fails: Callable[[list], bool]) -> list:
    """A smaller list of lines that still fails: chunks removed while it does, halving the chunk
    size down to single lines."""
    chunk = max(1, len(lines) // 2)
    while True:
        start, removed = 0, False
        while start < len(lines):
            candidate = lines[:start] + lines[start + chunk:]
            if candidate and fails(candidate):
                lines, removed = candidate, True
            else:
                start += chunk
        if chunk == 1 and not removed:
            return lines
        chunk = max(1, chunk // 2) if not removed else chunk


def _notebook_from_lines(parts: list[tuple[int, str]]) -> str:
    cells: dict[int, list[str]] = defaultdict(list)
    for cell, line in parts:
        cells[cell].append(line)
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                           "source": "".join(lines)} for _, lines in sorted(cells.items())],
                "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "nbformat": 4,
                "nbformat_minor": 5}
    return json.dumps(notebook, indent=1) + "\n"


def reduced(failure: Failure, limit: float) -> bytes | str:
    """The failing program cut down to lines that still fail the same way (same kind and signature,
    and still compiling if it compiled)."""
    from reliability.fuzz_checks import (SETTINGS_VARIANTS, compiles, notebook_violations, python_violations,
                                         with_jax_import)

    settings = SETTINGS_VARIANTS[failure.variant]

    def same(check: Callable[[], list]) -> bool:
        found = _timed(limit, check)
        return any(v.kind == failure.kind and v.signature == failure.signature for v in found or ())

    program = failure.program
    if failure.kind in ("slow", "generator-invalid", "worker-lost", "checker-error"):
        return program
    if failure.generator == "notebook":
        try:
            cells = json.loads(program)["cells"]
        except (ValueError, KeyError, TypeError):
            return program
        parts = [(index, line) for index, cell in enumerate(cells) if cell.get("cell_type") == "code"
                 for line in "".join(cell.get("source", "")).splitlines(keepends=True)]
        kept = _reduce_lines(parts, lambda kept: same(
            lambda: notebook_violations(_notebook_from_lines(kept), settings=settings)))
        return _notebook_from_lines(kept)
    if isinstance(program, str):  # a generic program, checked with `import jax` added
        program = (with_jax_import(program) or program).encode("utf-8")
    valid = compiles(program)

    def fails(lines: list[bytes]) -> bool:
        candidate = b"".join(lines)
        return (not valid or compiles(candidate)) and same(lambda: python_violations(candidate, settings=settings))

    return b"".join(_reduce_lines(program.splitlines(keepends=True), fails))


def _reduce_task(task: tuple[Failure, float]) -> tuple[Failure, bytes | str]:
    failure, limit = task
    return failure, reduced(failure, limit)


# -- the run ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, help="stop handing out programs after this long")
    parser.add_argument("--examples", type=int, help="stop after about this many programs in all")
    parser.add_argument("--seed", type=int, default=0, help="draws are reproducible from it (default 0)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: all cores)")
    parser.add_argument("--generators", default=",".join(GENERATORS),
                        help=f"comma-separated, from {', '.join(GENERATORS)} (default: all)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds one program may take (default 20)")
    parser.add_argument("--out", help="folder for the reduced failing programs (default: a new temporary one)")
    args = parser.parse_args(argv)
    generators = [g for g in args.generators.split(",") if g]
    if not generators or set(generators) - set(GENERATORS) or args.jobs < 1:
        parser.error(f"--generators takes names from {', '.join(GENERATORS)}; --jobs at least 1")
    if args.minutes is None and args.examples is None:
        args.minutes = 1.0
    rotation = [g for g in ROTATION if g in generators] or generators
    deadline = time.monotonic() + args.minutes * 60 if args.minutes is not None else None
    budget = args.examples

    totals = {g: BatchResult(g) for g in generators}
    failures: list[Failure] = []
    started = time.monotonic()
    print(f"jaxlint fuzz: seed {args.seed}, {args.jobs} jobs, generators {', '.join(generators)}, "
          f"{'%g minutes' % args.minutes if args.minutes is not None else ''}"
          f"{' ' if args.minutes is not None and budget else ''}{f'{budget} programs' if budget else ''}", flush=True)
    # A worker that dies (a crash in native code) loses its task for good: a batch not back within
    # this long is counted as lost instead of waited for.
    lost_after = args.timeout * BATCH + 120
    with get_context("fork").Pool(args.jobs) as pool:
        handed, pending = 0, []

        def more() -> bool:
            within_time = deadline is None or time.monotonic() < deadline
            within_budget = budget is None or handed * BATCH < budget
            return within_time and within_budget

        while True:
            while more() and len(pending) < 2 * args.jobs:
                generator = rotation[handed % len(rotation)]
                task = (generator, args.seed * 1_000_003 + handed, BATCH, args.timeout)
                pending.append((task, time.monotonic(), pool.apply_async(run_batch, (task,))))
                handed += 1
            if not pending:
                break
            time.sleep(0.2)
            for entry in list(pending):
                (generator, batch_seed, _, _), submitted, outcome = entry
                if outcome.ready():
                    pending.remove(entry)
                    result = outcome.get()
                    total = totals[result.generator]
                    total.programs += result.programs
                    total.skipped += result.skipped
                    total.seconds += result.seconds
                    failures.extend(result.failures)
                elif time.monotonic() - submitted > lost_after:
                    pending.remove(entry)
                    failures.append(Failure(generator, "worker-lost", "no result", f"batch seed {batch_seed} never "
                                            f"came back (a worker died?)", b"", batch_seed, 0))
        elapsed = time.monotonic() - started

        classes: dict[tuple[str, str], list[Failure]] = defaultdict(list)
        for failure in failures:
            classes[(failure.kind, failure.signature)].append(failure)
        out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="jaxlint-fuzz-"))
        written: dict[tuple[str, str], Path] = {}
        if classes:
            out.mkdir(parents=True, exist_ok=True)
            reductions = [(found[0], pool.apply_async(_reduce_task, ((found[0], args.timeout),)))
                          for found in classes.values()]
            for number, (failure, outcome) in enumerate(reductions, start=1):
                try:
                    program = outcome.get(timeout=lost_after)[1]
                except Exception:  # the reduction crashed or hung: the program as drawn
                    program = failure.program
                written[(failure.kind, failure.signature)] = _write(out, number, failure, program)

    programs = sum(t.programs for t in totals.values())
    print(f"\n{programs} programs checked in {elapsed / 60:.1f} minutes ({programs / elapsed:.1f}/s)")
    print(f"{'generator':<10} {'programs':>9} {'skipped':>8} {'failing':>8} {'cpu s':>8}")
    failing = Counter(f.generator for f in failures)
    for g, t in totals.items():
        print(f"{g:<10} {t.programs:>9} {t.skipped:>8} {failing[g]:>8} {t.seconds:>8.0f}")
    if not classes:
        print("\nno failures")
        return 0
    print(f"\n{len(failures)} failures in {len(classes)} classes (reduced programs in {out}):")
    for (kind, signature), found in sorted(classes.items(), key=lambda item: -len(item[1])):
        by_generator = ", ".join(f"{g} {n}" for g, n in Counter(f.generator for f in found).most_common())
        print(f"{len(found):>6}  {kind} [{signature}]  ({by_generator})  {written[(kind, signature)].name}")
    return 1


def _write(out: Path, number: int, failure: Failure, program: bytes | str) -> Path:
    suffix = ".ipynb" if failure.generator == "notebook" else ".py"
    path = out / f"{number:02d}-{failure.kind}{suffix}"
    path.write_bytes(program if isinstance(program, bytes) else program.encode("utf-8"))
    path.with_suffix(".txt").write_text(
        f"{failure.kind} [{failure.signature}]\ngenerator {failure.generator}, batch seed {failure.seed}, "
        f"settings SETTINGS_VARIANTS[{failure.variant}] of tests/reliability/fuzz_checks.py\n\n"
        f"{failure.detail}\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    sys.exit(main())
