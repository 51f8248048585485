"""How jaxlint's cost grows with its input: a large file with findings in every function, a notebook
of many cells, a project whose modules import each other in a chain, each at one size and at twice it.

    PYTHONPATH=src python benchmarks/scale.py                  # the sizes of the figures in README.md
    PYTHONPATH=src python benchmarks/scale.py --only file --functions 1333
    PYTHONPATH=src python benchmarks/scale.py --memory         # plus the peak of traced memory per source byte

The inputs come from `tests/scale_inputs.py` (the scale tests use the same at smaller sizes). Each
measurement is the CPU time of this process (`time.process_time`), the analysis in this process: a
file with `check_source`, a notebook with `check_notebook_file`, a project with `runner.run` and its
worker's part run here, no cache. What compares across machines and loads is the ratio of the two
sizes, measured one after the other in the same run: about 2 where the cost is linear.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from scale_inputs import LINES_PER_FUNCTION, import_chain, jitted_functions, notebook  # noqa: E402


def _cpu(work) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def _peak_per_byte(work, size: int) -> float:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1] / size
    finally:
        tracemalloc.stop()


def file_work(functions: int):
    from jaxlint.engine.checker import check_source, enabled_rules
    from jaxlint.model.settings import Settings

    settings = Settings()
    source = jitted_functions(functions)
    return (lambda: check_source(source, "big.py", settings, enabled_rules(settings, "big.py"))), len(source)


def notebook_work(cells: int):
    from jaxlint.engine.checker import enabled_rules
    from jaxlint.engine.notebook_check import check_notebook_file
    from jaxlint.model.settings import Settings

    settings = Settings()
    text = notebook(cells)
    return (lambda: check_notebook_file(text, "big.ipynb", settings, enabled_rules(settings, "big.ipynb"), False)), len(text)


def project_work(modules: int, directory: Path):
    from jaxlint.frontends import pool, runner

    project = directory / f"chain-{modules}"
    project.mkdir(parents=True)
    files = import_chain(project, modules)
    pool.start_method = lambda jobs: None  # the worker's part in this process, where it is timed

    def work():
        previous = os.getcwd()
        os.chdir(project)
        try:
            runner._drop_sessions()
            runner.run(runner.RunOptions(paths=["."], use_cache=False, jobs=1))
            runner._drop_sessions()
        finally:
            os.chdir(previous)
    return work, sum(f.stat().st_size for f in files)


def measure(name: str, label: str, make, size: int, memory: bool) -> None:
    work_small, bytes_small = make(size)
    work_large, bytes_large = make(2 * size)
    make(max(1, size // 50))[0]()  # imports and first-use caches out of the figures
    small, large = _cpu(work_small), _cpu(work_large)
    line = f"{name:<9} {label.format(size):>22} {small:8.2f} s   {label.format(2 * size):>22} {large:8.2f} s   ratio {large / small:5.2f}"
    if memory:
        line += (f"   peak traced memory {_peak_per_byte(work_small, bytes_small):6.0f} / "
                 f"{_peak_per_byte(work_large, bytes_large):6.0f} B per source byte")
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("file", "notebook", "project"), action="append")
    parser.add_argument("--functions", type=int, default=24_000 // LINES_PER_FUNCTION,
                        help="jitted functions of the smaller file (default: about 24k lines)")
    parser.add_argument("--cells", type=int, default=250, help="cells of the smaller notebook")
    parser.add_argument("--modules", type=int, default=750, help="modules of the smaller project")
    parser.add_argument("--memory", action="store_true", help="also the peak of traced memory (slower)")
    args = parser.parse_args()
    chosen = args.only or ["file", "notebook", "project"]
    threading.stack_size(1 << 30)  # the project's chain is settled recursively, as in jaxlint's own thread
    with tempfile.TemporaryDirectory() as directory:
        runs = {
            "file": lambda: measure("file", "{} functions", file_work, args.functions, args.memory),
            "notebook": lambda: measure("notebook", "{} cells", notebook_work, args.cells, args.memory),
            "project": lambda: measure("project", "{} modules", lambda n: project_work(n, Path(directory) / str(n)),
                                       args.modules, False),
        }
        failures = []

        def run(name: str) -> None:
            try:
                runs[name]()
            except Exception as exc:  # reported once the other measurements are done
                failures.append(f"{name}: {type(exc).__name__}: {exc}")

        for name in chosen:
            thread = threading.Thread(target=run, args=(name,))
            thread.start()
            thread.join()
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
