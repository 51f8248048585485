"""Time jaxlint over real JAX code bases against the bare libcst parse of the same files.

    python benchmarks/run.py [--corpus DIR] [--repeat N] [--samples N] [--profile]

Without --corpus, pinned sdists of a few JAX libraries are downloaded from PyPI into
benchmarks/.corpus once (the script writes a `.gitignore` holding `*` there, so git never sees them).
Every measurement runs in this one invocation, interleaved round by round, so the ratios printed
hold even on a noisy machine where the absolute seconds do not.

Measurements, all over the same list of `*.py` files:

  parse        read each file and `libcst.parse_module` it (the floor for any libcst linter);
  check        read each file and `jaxlint.engine.checker.check_source` it: jaxlint's whole per-file
               analysis, parse included, in this process, no cache;
  project      each package of the corpus checked as one project (its modules analysed together:
               `engine.project_check.ProjectSession`, then `check_source` of each file in it);
  project warm a run over every package (`frontends.runner.run`, as `jaxlint check` makes it) once a
               cold run has filled the findings cache and the project index (kept in a temporary
               directory);
  one file alone / one file, index   one file checked alone (`api.lint_file`), and a run over it
               in the project with the warm index and no findings cache;
  cli -j1      `python -m jaxlint check --no-cache --jobs 1 --quiet --exit-zero FILES...`, wall time;
  cli          the same with the default number of jobs (all cores).

The CLI is handed the file list itself, not the directory: walking the directory would honour the
corpus's `.gitignore` files (including the `*` one this script writes) and also pick up `.pyi` and
`.ipynb` files, so it would not be the same work.
"""
from __future__ import annotations

import argparse
import ast
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE / ".corpus"
PINNED = ("flax==0.12.8", "optax==0.2.8", "equinox==0.13.8", "chex==0.1.92")
# Above this many bytes of arguments the file list is not passed to the CLI (ARG_MAX is often 2 MiB).
MAX_ARGV_BYTES = 1_000_000


# --------------------------------------------------------------------------- corpus


def fetch_corpus(directory: Path) -> Path:
    """Download and unpack the pinned sdists into `directory`, skipping those already there."""
    directory.mkdir(parents=True, exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    for requirement in PINNED:
        name, version = requirement.split("==")
        unpacked = directory / f"{name}-{version}"
        if unpacked.is_dir():
            continue
        archive = directory / f"{name}-{version}.tar.gz"
        if not archive.exists():
            print(f"downloading {requirement} ...", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--no-binary", ":all:", requirement, "-d", str(directory)], check=True)
        if not archive.exists():
            sys.exit(f"pip did not leave {archive.name} in {directory}")
        with tarfile.open(archive) as tar:
            try:
                tar.extractall(directory, filter="data")
            except TypeError:  # Python without extraction filters
                tar.extractall(directory)
    return directory


def python_files(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.rglob("*.py") if p.is_file())


def versions(corpus: Path) -> str:
    names = sorted(p.name for p in corpus.iterdir() if p.is_dir())
    return ", ".join(names)


# --------------------------------------------------------------------------- measurements


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def summary(values: list[float]) -> tuple[float, float]:
    return min(values), statistics.median(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path,
                        help="an existing directory of Python code (default: download the pinned sdists "
                             f"into {DEFAULT_CORPUS.relative_to(HERE.parent)})")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of every measurement (default 3)")
    parser.add_argument("--samples", type=int, default=0,
                        help="print up to N findings, spread over the rules, for triage")
    parser.add_argument("--profile", action="store_true",
                        help="also run cProfile over one `check` pass and print the hotspots")
    parser.add_argument("--no-cli", action="store_true", help="skip the subprocess measurements")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    import libcst

    from jaxlint.engine import checker as engine
    from jaxlint.model.settings import Settings
    from jaxlint.engine.checker import RuleFailure, check_source, enabled_rules
    not_analysed = getattr(engine, "NotAnalysed", ())  # valid Python jaxlint could not analyse

    if args.corpus is not None:
        corpus = args.corpus.resolve()
        if not corpus.is_dir():
            parser.error(f"{args.corpus} is not a directory")
    else:
        corpus = fetch_corpus(DEFAULT_CORPUS)
    files = python_files(corpus)
    if not files:
        sys.exit(f"no .py files under {corpus}")
    paths = [str(p) for p in files]
    lines = 0
    for p in files:
        with open(p, "rb") as handle:
            lines += handle.read().count(b"\n")
    relevant_words = getattr(engine, "RELEVANT_WORDS", None)

    settings = Settings()
    counts: Counter[str] = Counter()
    findings: list = []
    problems: dict[str, list[str]] = {"parse": [], "check": []}

    def parse_all() -> None:
        problems["parse"].clear()
        for path in paths:
            with open(path, "rb") as handle:
                data = handle.read()
            try:
                libcst.parse_module(data.decode("utf-8"))
            except (libcst.ParserSyntaxError, UnicodeDecodeError, RecursionError) as exc:
                problems["parse"].append(f"{path}: {type(exc).__name__}")

    def python_parse_all() -> None:
        """CPython's own parse to an AST, which jaxlint runs before libcst's to decide what parses."""
        for path in paths:
            with open(path, "rb") as handle:
                data = handle.read()
            try:
                compile(data.decode("utf-8"), path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            except (SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError):
                pass

    def check_all() -> None:
        counts.clear()
        findings.clear()
        problems["check"].clear()
        for path in paths:
            with open(path, "rb") as handle:
                data = handle.read()
            try:
                source = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems["check"].append(f"{path}: {type(exc).__name__}")
                continue
            try:
                result = check_source(source, path, settings, enabled_rules(settings, path))
            except RuleFailure as failure:
                result = failure.findings
                problems["check"].append(f"{path}: {failure}")
            except not_analysed as partial:
                result = partial.findings
                problems["check"].append(f"{path}: not analysed: {partial.reason}")
            findings.extend(result)
            for finding in result:
                counts[finding.code] += 1

    project_counts: Counter[str] = Counter()

    def project_all() -> None:
        """Every package of the corpus checked as one project: its modules analysed together."""
        from jaxlint.engine.project_check import ProjectSession
        from jaxlint.project.layout import default_roots

        project_counts.clear()
        for package in sorted(p for p in corpus.iterdir() if p.is_dir()):
            members = [path for path in paths if path.startswith(str(package) + os.sep)]
            session = ProjectSession(settings, default_roots(str(package), [str(package)]), members)
            session.settle(members)
            for path in session.walk_order(members):
                with open(path, "rb") as handle:
                    data = handle.read()
                try:
                    result = check_source(data.decode("utf-8"), path, settings, enabled_rules(settings, path),
                                          project=session)
                except (RuleFailure, UnicodeDecodeError, *((not_analysed,) if not_analysed else ())) as exc:
                    result = getattr(exc, "findings", [])
                for finding in result:
                    project_counts[finding.code] += 1
            session.close()

    def cli_command(jobs: list[str], *extra: str) -> list[str]:
        targets = paths if sum(len(p) + 1 for p in paths) < MAX_ARGV_BYTES else [str(corpus)]
        return [sys.executable, "-m", "jaxlint", "check", "--no-cache", "--quiet", "--exit-zero",
                *jobs, *extra, *targets]

    def cli(jobs: list[str]):
        command = cli_command(jobs)
        return lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL)

    warm = WarmProject(corpus, paths)
    measurements = {"parse": parse_all, "ast": python_parse_all, "check": check_all, "project": project_all,
                    "project warm": warm.run_all, "one file alone": warm.check_one_alone,
                    "one file, index": warm.run_one}
    if not args.no_cli:
        measurements["cli -j1"] = cli(["--jobs", "1"])
        measurements[f"cli -j{os.cpu_count() or 1}"] = cli([])
    runs: dict[str, list[float]] = {name: [] for name in measurements}
    for round_number in range(1, args.repeat + 1):  # interleaved: a slow spell hits every measurement
        for name, function in measurements.items():
            runs[name].append(timed(function))
        print(f"round {round_number}/{args.repeat}: "
              + ", ".join(f"{name} {values[-1]:.2f}s" for name, values in runs.items()), file=sys.stderr)

    warm.close()

    # ------------------------------------------------------------------ report
    print(f"corpus: {corpus}")
    print(f"        {versions(corpus)}")
    print(f"files: {len(paths)} .py files, {lines:,} lines; rounds: {args.repeat}; "
          f"cores: {os.cpu_count()}; python {sys.version.split()[0]}; libcst {libcst_version()}")
    if relevant_words is not None:
        quick = sum(1 for path in paths if not any(w in _read(path) for w in relevant_words))
        print(f"files jaxlint skips without a libcst parse (none of {', '.join(relevant_words)}): {quick}")
    print()
    base = min(runs["parse"])
    print(f"| {'measurement':<15} | {'min s':>7} | {'median s':>8} | {'min / parse min':>15} |")
    print(f"|{'-' * 17}|{'-' * 9}|{'-' * 10}|{'-' * 17}|")
    for name, values in runs.items():
        low, middle = summary(values)
        print(f"| {name:<15} | {low:>7.2f} | {middle:>8.2f} | {low / base:>15.2f} |")
    print()
    print(f"parse throughput: {lines / base:,.0f} lines/s")
    print(f"check throughput: {lines / min(runs['check']):,.0f} lines/s (one process, parse included)")
    print(f"project warm: a run over every package with the project index and the findings cache made by "
          f"a cold run ({warm.cold_seconds:.1f}s, {warm.cold_files} files); one file: {warm.one_file}, "
          f"with the warm index adds {min(runs['one file, index']) - min(runs['one file alone']):+.2f}s "
          f"to it checked alone")
    gained = project_counts - counts
    lost = counts - project_counts
    print(f"project: findings only there {sum(gained.values())} {dict(gained)}, only alone {sum(lost.values())} {dict(lost)}")
    for name in ("parse", "check"):
        if problems[name]:
            print(f"{name}: {len(problems[name])} problem(s), e.g. {problems[name][0]}")

    print()
    total = sum(counts.values())
    print(f"findings per rule ({total} in all):")
    for code, number in sorted(counts.items()):
        print(f"  {code:<8} {number:>5}")

    if not args.no_cli:
        agreement = compare_with_cli(cli_command(["--jobs", "1"], "--output-format", "json"), counts)
        print(f"cli -j1 findings match the in-process check: {agreement}")

    if args.samples > 0 and findings:
        print()
        print(f"sample findings (up to {args.samples}, taken in turn from each rule):")
        for finding in spread(findings, args.samples):
            where = os.path.relpath(finding.path, corpus)
            print(f"  {where}:{finding.start.line}:{finding.start.column}: {finding.code} {finding.message}")

    if args.profile:
        profile_check(check_all)
    return 0


class WarmProject:
    """Runs over the corpus as one project, as `jaxlint check` makes them (`frontends.runner.run`), with
    the findings cache and the project index in a temporary directory (nothing is written in the
    corpus): a configuration file there names each package as a source root. A cold run, untimed,
    fills them; `run_all` is then a warm run over the unchanged corpus, `run_one` a run over one
    file with the warm index and no findings cache (what an editor or pre-commit asks after an
    edit), and `check_one_alone` the same file checked without the project."""

    #: the file `run_one` checks: one that imports much of its package (the largest file otherwise)
    ONE_FILE = ("flax-0.12.8/flax/linen/module.py", "optax-0.2.8/optax/_src/alias.py")

    def __init__(self, corpus: Path, paths: list[str]) -> None:
        import tempfile

        from jaxlint.frontends import runner

        self.runner = runner
        self.directory = tempfile.mkdtemp(prefix="jaxlint-bench-")
        self.packages = [str(p) for p in sorted(corpus.iterdir()) if p.is_dir()]
        config = Path(self.directory) / "pyproject.toml"
        config.write_text("[tool.jaxlint]\nsrc = [" + ", ".join(json.dumps(p) for p in self.packages) + "]\n",
                          encoding="utf-8")
        self.config = str(config)
        self.settings = runner.resolve_settings(runner.RunOptions(paths=self.packages, config=self.config))
        chosen = [str(corpus / name) for name in self.ONE_FILE if (corpus / name).is_file()]
        self.one_file = chosen[0] if chosen else max(paths, key=os.path.getsize)
        start = time.perf_counter()
        outcome = runner.run(runner.RunOptions(paths=self.packages, config=self.config))
        self.cold_seconds = time.perf_counter() - start
        self.cold_files = len(outcome.results)

    def run_all(self) -> None:
        self.runner.run(self.runner.RunOptions(paths=self.packages, config=self.config))

    def run_one(self) -> None:
        self.runner.run(self.runner.RunOptions(paths=[self.one_file], config=self.config, use_cache=False))

    def check_one_alone(self) -> None:
        from jaxlint.api import lint_file

        lint_file(self.one_file, self.settings)

    def close(self) -> None:
        import shutil

        self.runner._drop_sessions()
        shutil.rmtree(self.directory, ignore_errors=True)


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def libcst_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("libcst")
    except PackageNotFoundError:
        return "?"


def compare_with_cli(command: list[str], counts: Counter[str]) -> str:
    """Run the CLI once more (untimed) with JSON output and compare its findings per rule."""
    completed = subprocess.run(command, check=True, capture_output=True, text=True)
    try:
        reported = Counter(item["code"] for item in json.loads(completed.stdout or "[]"))
    except (ValueError, KeyError, TypeError):
        return "unknown (could not read the CLI's JSON output)"
    if reported == counts:
        return f"yes ({sum(reported.values())} findings)"
    differences = sorted(set(reported) | set(counts))
    return "NO: " + ", ".join(f"{code} cli {reported[code]} vs check {counts[code]}"
                              for code in differences if reported[code] != counts[code])


def spread(findings: list, limit: int) -> list:
    """Up to `limit` findings, taking them in turn from each rule so that rare rules show up too."""
    by_code: dict[str, list] = {}
    for finding in sorted(findings, key=lambda f: (f.code, f.path, f.start)):
        by_code.setdefault(finding.code, []).append(finding)
    chosen: list = []
    depth = 0
    while len(chosen) < limit and any(depth < len(group) for group in by_code.values()):
        for group in by_code.values():
            if depth < len(group) and len(chosen) < limit:
                chosen.append(group[depth])
        depth += 1
    return sorted(chosen, key=lambda f: (f.code, f.path, f.start))


def profile_check(check_all) -> None:
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(check_all)
    elapsed = time.perf_counter() - start
    print()
    print(f"profile of one check pass ({elapsed:.2f}s under cProfile), top 25 by cumulative time:")
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("cumulative").print_stats(25)
    print(trim_stats(text.getvalue()))

    package = str(Path(__import__("jaxlint").__file__).resolve().parent)
    print(f"jaxlint's own functions, top 25 by cumulative time (paths relative to {package}):")
    rows = []
    for (filename, line, function), (_, calls, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if filename.startswith(package):
            rows.append((cumulative, calls, f"{os.path.relpath(filename, package)}:{line}({function})"))
    rows.sort(reverse=True)
    print(f"  {'cumtime s':>9}  {'calls':>9}  function")
    for cumulative, calls, where in rows[:25]:
        print(f"  {cumulative:>9.2f}  {calls:>9}  {where}")


def trim_stats(text: str) -> str:
    """pstats output without its leading blank lines and the header about sorting."""
    kept = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("Ordered by")]
    return "\n".join(kept)


if __name__ == "__main__":
    sys.exit(main())
