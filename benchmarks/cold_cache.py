"""What writing the cache costs a run that finds nothing in it: `jaxlint check` with an empty cache
against `jaxlint check --no-cache`, over generated projects (a chain of modules, each importing the
next, the first jitted so that every module is traced through the chain).

Both runs are timed in the same round, in turn, and the figure worth reading is their ratio (CPU
seconds of jaxlint and its workers; on a busy machine wall-clock seconds move more):

    .venv/bin/python benchmarks/cold_cache.py                 # chains of 150 and 300 modules
    .venv/bin/python benchmarks/cold_cache.py --modules 300 600 --repeat 5
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


def make_chain(root: Path, modules: int) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.jaxlint]\n", encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    for index in range(modules):
        last = index + 1 == modules
        imported = "" if last else f"from pkg.m{index + 1} import f{index + 1}\n"
        call = "    y = x\n" if last else f"    y = f{index + 1}(x)\n"
        jitted = "@jax.jit\n" if index == 0 else ""
        (root / "pkg" / f"m{index}.py").write_text(
            f"import jax\n{imported}\n\n{jitted}def f{index}(x):\n{call}    if y > 0:\n        return y\n    return -y\n",
            encoding="utf-8")


def cpu_seconds(args: list[str], cwd: Path) -> float:
    """CPU time (user and system) of one jaxlint run and the workers it started."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "jaxlint", "check", "--quiet", *args, "."], cwd=cwd,
                   stdout=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modules", type=int, nargs="+", default=[150, 300])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    env_src = str(Path(__file__).resolve().parents[1] / "src")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [env_src, os.environ.get("PYTHONPATH")]))
    print(f"{'modules':>8} {'--no-cache s':>13} {'cold cache s':>13} {'ratio':>6}")
    for modules in options.modules:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch) / "chain"
            make_chain(root, modules)
            without, cold = [], []
            for _ in range(options.repeat):
                shutil.rmtree(root / ".jaxlint_cache", ignore_errors=True)
                without.append(cpu_seconds(["--no-cache"], root))
                shutil.rmtree(root / ".jaxlint_cache", ignore_errors=True)
                cold.append(cpu_seconds([], root))
            ratios = [c / w for c, w in zip(cold, without)]
            print(f"{modules:>8} {statistics.median(without):>13.2f} {statistics.median(cold):>13.2f}"
                  f" {statistics.median(ratios):>6.2f}")


if __name__ == "__main__":
    main()
