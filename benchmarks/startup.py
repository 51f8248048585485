"""CPU time of jaxlint's start-up: what one short command costs, against the interpreter's own.

    python benchmarks/startup.py [--repeat N]

Each measurement is one `python -m jaxlint ...` process (or `python -c pass`), its CPU time (user
and system, its worker processes included) read from `resource.getrusage(RUSAGE_CHILDREN)`.
Rounds are interleaved, so that a slow spell of a shared machine hits every measurement alike, and
each is reported as its minimum and median and as a ratio to `python -c pass`:

  python -c pass      the interpreter alone, for reference;
  --version           `jaxlint --version`;
  check, cold         `jaxlint check --no-cache FILE`: one file analysed (the analysis imported);
  check, cached       `jaxlint check FILE` again, unchanged: its findings come from the cache;
  project, cold       `jaxlint check --no-cache examples/training.py` in a copy of `examples/`,
                      a project of several modules (analysed together);
  project, cached     the same with the cache, nothing changed.

The file is `examples/training.py` (11 findings); both run in copies made in a temporary directory.
Python writes its bytecode caches as an installed package has them: PYTHONDONTWRITEBYTECODE is
removed from the processes' environment, and one untimed round runs first. The tree measured is the
one Python finds: run it with `PYTHONPATH=src` from a checkout.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
FILE = "training.py"


def cpu_of(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """User plus system CPU seconds of one process and the children it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {result.returncode}: {result.stderr.decode(errors='replace')}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="rounds of every measurement (default 10)")
    args = parser.parse_args()

    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("CI", None)
    python = sys.executable
    jaxlint = [python, "-m", "jaxlint"]
    with tempfile.TemporaryDirectory() as scratch:
        alone = Path(scratch) / "alone"
        alone.mkdir()
        shutil.copy(EXAMPLES / FILE, alone / FILE)
        project = Path(scratch) / "project"
        shutil.copytree(EXAMPLES, project / "examples")
        measurements = {
            "python -c pass": ([python, "-c", "pass"], alone),
            "jaxlint --version": ([*jaxlint, "--version"], alone),
            "check, cold": ([*jaxlint, "check", "--no-cache", FILE], alone),
            "check, cached": ([*jaxlint, "check", FILE], alone),
            "project, cold": ([*jaxlint, "check", "--no-cache", f"examples/{FILE}"], project),
            "project, cached": ([*jaxlint, "check", f"examples/{FILE}"], project),
        }
        for command, cwd in measurements.values():  # bytecode written, caches filled
            cpu_of(command, cwd, env)
        times: dict[str, list[float]] = {name: [] for name in measurements}
        for _ in range(args.repeat):
            for name, (command, cwd) in measurements.items():
                times[name].append(cpu_of(command, cwd, env))

    reference = min(times["python -c pass"])
    print(f"Python {sys.version.split()[0]}, {args.repeat} rounds, CPU seconds (user + system, children included)\n")
    print("| measurement | min s | median s | min / python min |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {min(values):.3f} | {statistics.median(values):.3f} | {min(values) / reference:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
