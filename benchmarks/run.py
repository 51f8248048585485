"""Time jaxlint over real JAX code bases against the bare libcst parse of the same files.

    python benchmarks/run.py [--corpus DIR] [--repeat N]

Without --corpus, pinned sdists of a few JAX libraries are downloaded from PyPI into
benchmarks/.corpus (ignored by benchmarks/.gitignore) once. Every figure printed comes from the same run, so the
ratios hold even on a noisy machine.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINNED = ["flax==0.12.8", "optax==0.2.8", "equinox==0.13.8", "chex==0.1.92"]


def fetch_corpus(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for requirement in PINNED:
        name, version = requirement.split("==")
        if any(directory.glob(f"{name}-{version}*/")):
            continue
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        requirement, "-d", str(directory)], check=True)
        for archive in directory.glob(f"{name}-{version}*.tar.gz"):
            with tarfile.open(archive) as tar:
                tar.extractall(directory, filter="data")
    return directory


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="a directory of Python code (default: download pinned sdists)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import libcst

    from jaxlint.config import Settings
    from jaxlint.engine import check_source, enabled_rules

    corpus = args.corpus or fetch_corpus(HERE / ".corpus")
    files = sorted(p for p in corpus.rglob("*.py") if p.is_file())
    sources = []
    for path in files:
        try:
            sources.append((str(path), path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    lines = sum(text.count("\n") for _, text in sources)
    settings = Settings()
    counts: Counter[str] = Counter()

    def parse_all() -> None:
        for _, text in sources:
            try:
                libcst.parse_module(text)
            except libcst.ParserSyntaxError:
                pass

    def check_all() -> None:
        counts.clear()
        for path, text in sources:
            for finding in check_source(text, path, settings, enabled_rules(settings, path)):
                counts[finding.code] += 1

    def cli(jobs: list[str]):
        return lambda: subprocess.run([sys.executable, "-m", "jaxlint", "check", "--no-cache", "--quiet", "--exit-zero",
                                       *jobs, str(corpus)], check=True, stdout=subprocess.DEVNULL)

    runs: dict[str, list[float]] = {"parse": [], "check": [], "cli --jobs 1": [], "cli (all cores)": []}
    for _ in range(args.repeat):  # interleaved, so a slow spell of the machine hits every measurement
        runs["parse"].append(timed(parse_all))
        runs["check"].append(timed(check_all))
        runs["cli --jobs 1"].append(timed(cli(["--jobs", "1"])))
        runs["cli (all cores)"].append(timed(cli([])))

    print(f"corpus: {corpus} ({len(sources)} files, {lines} lines)")
    print(f"{'measurement':<18} {'min s':>8} {'median s':>9} {'min / parse':>12}")
    base = min(runs["parse"])
    for name, values in runs.items():
        print(f"{name:<18} {min(values):>8.2f} {statistics.median(values):>9.2f} {min(values) / base:>12.2f}")
    print(f"check throughput: {lines / min(runs['check']):,.0f} lines/s (parse included)")
    print("findings per rule: " + (", ".join(f"{code} {n}" for code, n in sorted(counts.items())) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
