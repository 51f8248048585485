"""The ecosystem check: jaxlint over the 40 real JAX projects of the corpus, and what a change moves.

    python scripts/ecosystem.py                      # run, write the snapshot, check the ledger
    python scripts/ecosystem.py --base main          # ... and show what appeared and disappeared
    python scripts/ecosystem.py --repo google+mipnerf --repo jax-ml+bonsai
    python scripts/ecosystem.py --todo               # ledger entries to fill in for new findings

Each repository of `../shared/corpus` (the rows of its MANIFEST.tsv) is checked as its own
project, the way a user runs `jaxlint check REPO`, several repositories at a time. The findings
go to a snapshot (`.ecosystem/<label>.json`). With `--base REV`, the revision REV is installed
from a temporary worktree into an environment of its own (kept under `.ecosystem/envs/`, keyed on
the commit) and run the same way; the difference is printed per rule, each finding with its
repository, location, message and source line.

The ledger (`tests/ecosystem/ledger.json`) holds a verdict for every behavioural finding
(JAX1xx to JAX5xx) and the known misses. The ledger check is the one the `ecosystem` test runs:
a finding without a verdict, a true positive no longer reported, a recorded miss now reported, or
a verdict for a finding that is gone, each fails it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"
LEDGER = ROOT / "tests" / "ecosystem" / "ledger.json"
WORK_DIR = ROOT / ".ecosystem"
LEDGER_KEYS = ("repo", "path", "cell", "line", "code", "verdict", "why")
#: verdicts of findings jaxlint reports; "FN" is a miss: a place where it should report
FINDING_VERDICTS = ("TP", "FP", "debatable")
VERDICTS = FINDING_VERDICTS + ("FN",)
#: a repository's run may take this long before the check gives up on it
REPO_TIMEOUT_S = 600


class EcosystemError(Exception):
    """A run that cannot go on; str(error) is one line."""


@dataclass(frozen=True, order=True)
class Finding:
    repo: str
    path: str
    cell: int | None
    line: int
    column: int
    code: str
    message: str

    @property
    def place(self) -> tuple:
        """What a ledger entry names: one verdict covers every finding of a code on one line."""
        return (self.repo, self.path, self.cell, self.line, self.code)

    @property
    def behavioural(self) -> bool:
        return is_behavioural(self.code)

    def location(self) -> str:
        cell = f"[cell {self.cell}]" if self.cell is not None else ""
        return f"{self.repo}/{self.path}{cell}:{self.line}:{self.column}"


def is_behavioural(code: str) -> bool:
    """JAX1xx to JAX5xx: what the code does when it runs, as opposed to parse errors and APIs."""
    return len(code) == 6 and code.startswith("JAX") and code[3] in "12345"


# -- the corpus ---------------------------------------------------------------------------------
def corpus_repos(corpus: Path, only: list[str] | None = None) -> list[str]:
    """The corpus's repository folders (`owner+name`), in MANIFEST order; `only` narrows them."""
    manifest = corpus / "MANIFEST.tsv"
    if not manifest.is_file():
        raise EcosystemError(f"no corpus at {corpus}: {manifest.name} is missing "
                             f"(the corpus lives in ../shared/corpus beside the checkout)")
    rows = manifest.read_text(encoding="utf-8").splitlines()[1:]
    repos = [row.split("\t")[0].replace("/", "+") for row in rows if row.strip()]
    missing = [repo for repo in repos if not (corpus / repo).is_dir()]
    if missing:
        raise EcosystemError(f"the corpus at {corpus} lacks {len(missing)} of its repositories: "
                             + ", ".join(missing[:3]) + (" ..." if len(missing) > 3 else ""))
    if only:
        unknown = [name for name in only if name not in repos]
        if unknown:
            raise EcosystemError(f"not a corpus repository: {', '.join(unknown)} "
                                 f"(names are folder names such as {repos[0]})")
        repos = [repo for repo in repos if repo in only]
    return repos


def source_line(corpus: Path, finding: Finding) -> str:
    """The text of the finding's line ('' when it cannot be read)."""
    path = corpus / finding.repo / finding.path
    try:
        text = path.read_text(encoding="utf-8")
        if finding.cell is not None:
            source = json.loads(text)["cells"][finding.cell]["source"]
            text = "".join(source) if isinstance(source, list) else source
        lines = text.splitlines()
        return lines[finding.line - 1] if 0 < finding.line <= len(lines) else ""
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return ""


# -- running jaxlint ----------------------------------------------------------------------------
def check_repo(command: list[str], corpus: Path, repo: str) -> list[Finding]:
    """All findings of `jaxlint check REPO` (every rule the defaults select), paths inside REPO."""
    root = (corpus / repo).resolve()
    with tempfile.TemporaryDirectory(prefix="jaxlint-ecosystem-") as cwd:
        # The cache would go to the working directory (the corpus is read-only): --no-cache
        # keeps every run a fresh analysis. One worker per repository: repositories run side by side.
        done = subprocess.run(
            [*command, "check", "--no-cache", "--output-format", "json", "--exit-zero", "-q", "-j", "1", str(root)],
            cwd=cwd, capture_output=True, text=True, timeout=REPO_TIMEOUT_S, env=_child_environment())
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise EcosystemError(f"{repo}: jaxlint exited {done.returncode}: {last}")
    try:
        reported = json.loads(done.stdout)
    except ValueError as exc:
        raise EcosystemError(f"{repo}: jaxlint did not print JSON ({exc})") from None
    findings = []
    for item in reported:
        path = Path(item["path"])
        inside = path.resolve().relative_to(root) if path.is_absolute() else path
        # Messages that name another file of the project name it by its absolute path: made
        # relative, they read the same wherever the corpus lies.
        message = item["message"].replace(f"{root}{os.sep}", "")
        findings.append(Finding(repo, inside.as_posix(), item.get("cell"), item["line"], item["column"],
                                item["code"], message))
    return sorted(findings)


def _child_environment() -> dict[str, str]:
    """This environment, with a relative PYTHONPATH (`PYTHONPATH=src`) made absolute: the runs
    start in a scratch directory."""
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(entry) for entry in env["PYTHONPATH"].split(os.pathsep)
                                            if entry)
    return env


def check_corpus(command: list[str], corpus: Path, repos: list[str], jobs: int,
                 label: str = "jaxlint") -> list[Finding]:
    """Every repository checked, `jobs` at a time, with a progress bar on a terminal."""
    import click  # a dependency of jaxlint: whoever runs this has it

    findings: list[Finding] = []
    failures: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, \
            click.progressbar(length=len(repos), label=f"{label}: {len(repos)} repositories",
                              file=sys.stderr, show_pos=True, item_show_func=lambda repo: repo) as bar:
        futures = {pool.submit(check_repo, command, corpus, repo): repo for repo in repos}
        for future in as_completed(futures):
            try:
                findings.extend(future.result())
            except (EcosystemError, subprocess.TimeoutExpired) as exc:
                failures.append(str(exc) if isinstance(exc, EcosystemError)
                                else f"{futures[future]}: over {REPO_TIMEOUT_S} s")
            bar.update(1, futures[future])
    if failures:
        raise EcosystemError("; ".join(sorted(failures)))
    return sorted(findings)


def head_command() -> list[str]:
    """jaxlint as installed in this interpreter's environment."""
    return [sys.executable, "-m", "jaxlint"]


def base_command(rev: str) -> list[str]:
    """jaxlint at revision `rev`, installed from a temporary worktree into its own environment."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
    except subprocess.CalledProcessError:
        raise EcosystemError(f"--base {rev}: not a revision of this repository") from None
    env = WORK_DIR / "envs" / sha
    python = env / "bin" / "python"
    if not (env / "installed").exists():
        shutil.rmtree(env, ignore_errors=True)
        with tempfile.TemporaryDirectory(prefix="jaxlint-base-") as scratch:
            tree = Path(scratch) / "tree"
            steps = [["git", "worktree", "add", "--detach", str(tree), sha],
                     [sys.executable, "-m", "venv", str(env)],
                     [str(python), "-m", "pip", "install", "--quiet", str(tree)]]
            try:
                for step in steps:
                    print(f"ecosystem: {' '.join(step[-3:])}", file=sys.stderr)
                    subprocess.run(step, cwd=ROOT, check=True, capture_output=True, text=True)
            except subprocess.CalledProcessError as exc:
                last = (exc.stderr.strip().splitlines() or ["no message"])[-1]
                raise EcosystemError(f"--base {rev}: could not install it: {last}") from None
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
        (env / "installed").write_text(sha + "\n")
    return [str(python), "-m", "jaxlint"]


# -- snapshots ----------------------------------------------------------------------------------
def write_snapshot(path: Path, label: str, findings: list[Finding]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"label": label, "findings": [asdict(f) for f in findings]}, indent=0) + "\n",
                    encoding="utf-8")


def read_snapshot(path: Path) -> list[Finding]:
    return [Finding(**item) for item in json.loads(path.read_text(encoding="utf-8"))["findings"]]


# -- the difference -----------------------------------------------------------------------------
@dataclass
class Difference:
    appeared: list[Finding]
    disappeared: list[Finding]
    #: (before, after): same place and code, another message
    reworded: list[tuple[Finding, Finding]]

    def __bool__(self) -> bool:
        return bool(self.appeared or self.disappeared or self.reworded)


def difference(base: list[Finding], head: list[Finding]) -> Difference:
    def keyed(findings):
        table = defaultdict(list)
        for finding in findings:
            table[(finding.repo, finding.path, finding.cell, finding.line, finding.column, finding.code)].append(finding)
        return table

    before, after = keyed(base), keyed(head)
    appeared, disappeared, reworded = [], [], []
    for key in sorted(set(before) | set(after), key=repr):
        old, new = Counter(f.message for f in before.get(key, [])), Counter(f.message for f in after.get(key, []))
        gone = [Finding(*key[:5], key[5], message) for message in (old - new).elements()]
        came = [Finding(*key[:5], key[5], message) for message in (new - old).elements()]
        for was, now in zip(gone, came):
            reworded.append((was, now))
        disappeared.extend(gone[len(came):])
        appeared.extend(came[len(gone):])
    return Difference(sorted(appeared), sorted(disappeared), reworded)


def render_difference(diff: Difference, corpus: Path, base_label: str, head_label: str) -> str:
    if not diff:
        return f"No change in findings between {base_label} and {head_label}."
    by_code: dict[str, list[tuple[str, Finding, Finding | None]]] = defaultdict(list)
    for finding in diff.appeared:
        by_code[finding.code].append(("+", finding, None))
    for finding in diff.disappeared:
        by_code[finding.code].append(("-", finding, None))
    for was, now in diff.reworded:
        by_code[now.code].append(("~", now, was))
    repos = {f.repo for f in diff.appeared + diff.disappeared} | {now.repo for _, now in diff.reworded}
    out = [f"{base_label} -> {head_label}: +{len(diff.appeared)} -{len(diff.disappeared)} findings, "
           f"{len(diff.reworded)} reworded, in {len(repos)} repositories", ""]
    for code in sorted(by_code):
        entries = sorted(by_code[code], key=lambda entry: (entry[1], entry[0]))
        counts = Counter(sign for sign, _, _ in entries)
        out.append(f"{code}  +{counts['+']} -{counts['-']} ~{counts['~']}")
        for sign, finding, was in entries:
            out.append(f"  {sign} {finding.location()}")
            if was is not None:
                out.append(f"      was: {was.message}")
            out.append(f"      {finding.message}")
            text = source_line(corpus, finding).strip()
            if text:
                out.append(f"      | {text}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


# -- the ledger ---------------------------------------------------------------------------------
def read_ledger(path: Path = LEDGER) -> list[dict]:
    """The ledger's entries, checked for shape; raises EcosystemError naming the first bad entry."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EcosystemError(f"cannot read the ledger {path}: {exc}") from None
    if not isinstance(entries, list):
        raise EcosystemError(f"{path}: the ledger is not a JSON list")
    seen = set()
    for number, entry in enumerate(entries):
        problem = ledger_entry_problem(entry)
        if problem:
            raise EcosystemError(f"{path}: entry {number}: {problem}")
        key = (entry["repo"], entry["path"], entry["cell"], entry["line"], entry["code"], entry["verdict"] == "FN")
        if key in seen:
            raise EcosystemError(f"{path}: entry {number}: a second verdict for {entry['repo']}/{entry['path']}"
                                 f":{entry['line']} {entry['code']}")
        seen.add(key)
    return entries


def ledger_entry_problem(entry: object) -> str | None:
    if not isinstance(entry, dict) or tuple(sorted(entry)) != tuple(sorted(LEDGER_KEYS)):
        return f"keys must be exactly {', '.join(LEDGER_KEYS)}"
    if entry["verdict"] not in VERDICTS:
        return f"verdict {entry['verdict']!r} is not one of {', '.join(VERDICTS)}"
    if not (isinstance(entry["line"], int) and entry["line"] > 0):
        return "line must be a positive integer"
    if entry["cell"] is not None and not (isinstance(entry["cell"], int) and entry["cell"] >= 0):
        return "cell must be null or a cell index"
    if not is_behavioural(entry["code"]):
        return f"{entry['code']} is not a behavioural code (JAX1xx to JAX5xx)"
    if not (isinstance(entry["why"], str) and entry["why"].strip() and "\n" not in entry["why"]):
        return "why must be one non-empty line"
    if not all(isinstance(entry[key], str) and entry[key] for key in ("repo", "path")):
        return "repo and path must be non-empty strings"
    return None


@dataclass
class LedgerCheck:
    unjudged: list[Finding]
    lost_true_positives: list[dict]
    reported_misses: list[dict]
    stale: list[dict]

    def problems(self) -> list[str]:
        lines = []
        if self.unjudged:
            lines.append(f"{len(self.unjudged)} behavioural findings have no verdict in the ledger "
                         "(read the code, add TP/FP/debatable; `scripts/ecosystem.py --todo` prints stubs):")
            lines += [f"  {f.location()} {f.code} {f.message[:100]}" for f in self.unjudged]
        if self.lost_true_positives:
            lines.append(f"{len(self.lost_true_positives)} findings the ledger calls true are no longer reported:")
            lines += [f"  {describe(e)} ({e['why']})" for e in self.lost_true_positives]
        if self.reported_misses:
            lines.append(f"{len(self.reported_misses)} misses in the ledger are now reported "
                         "(make them TP, or judge them again):")
            lines += [f"  {describe(e)} ({e['why']})" for e in self.reported_misses]
        if self.stale:
            lines.append(f"{len(self.stale)} ledger verdicts are for findings no longer reported "
                         "(remove them: the ledger describes what jaxlint reports now):")
            lines += [f"  {describe(e)} {e['verdict']} ({e['why']})" for e in self.stale]
        return lines


def describe(entry: dict) -> str:
    cell = f"[cell {entry['cell']}]" if entry["cell"] is not None else ""
    return f"{entry['repo']}/{entry['path']}{cell}:{entry['line']} {entry['code']}"


def place(entry: dict) -> tuple:
    return (entry["repo"], entry["path"], entry["cell"], entry["line"], entry["code"])


def check_ledger(findings: list[Finding], ledger: list[dict], repos: list[str] | None = None) -> LedgerCheck:
    """The ledger against a run's findings; `repos`: the repositories the run covered (default all)."""
    covered = set(repos) if repos is not None else None
    entries = [e for e in ledger if covered is None or e["repo"] in covered]
    reported = {f.place for f in findings if f.behavioural}
    judged = {place(e) for e in entries if e["verdict"] in FINDING_VERDICTS}
    unjudged, seen = [], set()
    for finding in findings:
        if finding.behavioural and finding.place not in judged and finding.place not in seen:
            seen.add(finding.place)
            unjudged.append(finding)
    lost = [e for e in entries if e["verdict"] == "TP" and place(e) not in reported]
    stale = [e for e in entries if e["verdict"] in ("FP", "debatable") and place(e) not in reported]
    misses = [e for e in entries if e["verdict"] == "FN" and place(e) in reported]
    return LedgerCheck(unjudged, lost, misses, stale)


def pruned(ledger: list[dict], check: LedgerCheck) -> list[dict]:
    """The ledger without the stale verdicts of `check` (FP and debatable whose findings are gone)."""
    stale = {place(entry) + (entry["verdict"],) for entry in check.stale}
    return [entry for entry in ledger if place(entry) + (entry["verdict"],) not in stale]


def todo_entries(unjudged: list[Finding], corpus: Path) -> list[dict]:
    """Ledger stubs for findings without a verdict, the source line in `why` to start from."""
    return [{"repo": f.repo, "path": f.path, "cell": f.cell, "line": f.line, "code": f.code,
             "verdict": "?", "why": f"{f.message[:80]} | {source_line(corpus, f).strip()[:80]}"}
            for f in unjudged]


def write_ledger(entries: list[dict], path: Path = LEDGER) -> None:
    """The ledger in its canonical order and layout: one entry a line, sorted by place."""
    ordered = sorted(entries, key=lambda e: (e["repo"], e["path"], e["cell"] if e["cell"] is not None else -1,
                                             e["line"], e["code"], e["verdict"]))
    body = ",\n".join(json.dumps({key: e[key] for key in LEDGER_KEYS}, ensure_ascii=False) for e in ordered)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[\n" + body + "\n]\n", encoding="utf-8")


# -- docs/precision.md -------------------------------------------------------------------------
PRECISION_DOC = ROOT / "docs" / "precision.md"


def manifest_rows(corpus: Path) -> list[dict]:
    lines = (corpus / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:] if line.strip()]


def rule_names(rules_dir: Path = ROOT / "rules") -> dict[str, str]:
    """code -> name, from the catalogue's file names (`JAX101-prng-key-reuse.toml`)."""
    return {path.stem[:6]: path.stem[7:] for path in sorted(rules_dir.glob("JAX*.toml"))}


def _ratio(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "–"


def _cell_text(text: str) -> str:
    return text.replace("|", "\\|")


def render_precision(ledger: list[dict], manifest: list[dict], names: dict[str, str]) -> str:
    """docs/precision.md: per rule, the verdicts on the corpus, its false alarms and known misses."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for entry in ledger:
        counts[entry["code"]][entry["verdict"]] += 1
    per_repo = Counter(entry["repo"] for entry in ledger if entry["verdict"] in FINDING_VERDICTS)
    codes = sorted(counts)
    total = sum((counts[code] for code in codes), Counter())

    def row(label: str, c: Counter) -> str:
        judged = c["TP"] + c["FP"] + c["debatable"]
        return (f"| {label} | {judged} | {c['TP']} | {c['FP']} | {c['debatable']} | "
                f"{_ratio(c['TP'], c['TP'] + c['FP'])} | {_ratio(c['TP'], judged)} | {c['FN']} |")

    out = [
        "# Precision on real code",
        "",
        "<!-- Generated by `python scripts/generate_docs.py` from tests/ecosystem/ledger.json; do not edit. -->",
        "",
        f"jaxlint is run over {len(manifest)} public repositories of user-level JAX code (the "
        "[corpus](#the-corpus) below: training scripts, research code, tutorials and notebooks in "
        "Flax, Equinox, Haiku, NumPyro and plain JAX), each checked as its own project, the way "
        "`jaxlint check REPO` runs. Every behavioural finding it reports there (JAX1xx to JAX5xx) "
        "has a verdict, reached by reading the code and, where JAX's behaviour was the question, by "
        "running it:",
        "",
        "- **TP**: a bug or a real performance problem the author would want to know about (a "
        "deliberate demonstration of the gotcha in teaching material counts, and says so);",
        "- **FP**: wrong, or an idiom written on purpose;",
        "- **debatable**: reasonable people differ;",
        "- **missed**: a real instance of a catalogued gotcha that jaxlint does not report, found by "
        "reading each repository's training, update and sampling steps and its key handling. Misses "
        "are the ones found that way, not all there are.",
        "",
        "The verdicts live in `tests/ecosystem/ledger.json`, one line each with its reason. The "
        "`ecosystem` test holds them: it fails when a finding appears without a verdict, when a "
        "true finding is no longer reported, when a recorded miss starts being reported, or when a "
        "verdict outlives its finding. So this page always describes what jaxlint reports today. "
        "A finding's place is its file, cell, line and code: several findings of one code on one "
        "line share a verdict.",
        "",
        "## Per rule",
        "",
        "Precision is TP / (TP + FP); *strict* counts the debatable ones as false too.",
        "",
        "| rule | findings | TP | FP | debatable | precision | strict | missed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for code in codes:
        out.append(row(f"[{code}](rules/{code}-{names[code]}.md) {names[code]}" if code in names else code,
                       counts[code]))
    out.append(row("**all behavioural rules**", total))
    out += ["", "Rules with no finding and no recorded miss on the corpus are not listed: "
            "the corpus says nothing about them yet.", ""]

    for code in codes:
        entries = [e for e in ledger if e["code"] == code]
        out += [f"## {code} {names.get(code, '')}".rstrip(), ""]
        for verdict, title in (("FP", "False alarms"), ("debatable", "Debatable"), ("FN", "Known misses")):
            chosen = [e for e in entries if e["verdict"] == verdict]
            if not chosen:
                continue
            out += [f"{title} ({len(chosen)}):", ""]
            out += [f"- `{describe(e).rsplit(' ', 1)[0]}`: {_cell_text(e['why'])}" for e in chosen]
            out.append("")
        true = sum(1 for e in entries if e["verdict"] == "TP")
        if true:
            out += [f"True findings: {true} (reasons in the ledger).", ""]

    out += ["## The corpus", "",
            "Pinned commits; only `.py` and `.ipynb` files are kept. Findings: behavioural findings with "
            "a verdict.", "",
            "| repository | commit | framework | kind | lines | findings |",
            "| --- | --- | --- | --- | ---: | ---: |"]
    for item in manifest:
        repo = item["repo"]
        out.append(f"| {repo} | `{item['commit'][:12]}` | {item['framework']} | {item['kind']} | "
                   f"{int(item['lines']):,} | {per_repo[repo.replace('/', '+')]} |")
    return "\n".join(out) + "\n"


# -- the command --------------------------------------------------------------------------------
def summary(findings: list[Finding]) -> str:
    counts = Counter(f.code for f in findings)
    behavioural = sum(n for code, n in counts.items() if is_behavioural(code))
    per_code = "  ".join(f"{code} {n}" for code, n in sorted(counts.items()))
    return f"{len(findings)} findings ({behavioural} behavioural) in {len({f.repo for f in findings})} repositories\n  {per_code}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the corpus folder (default: %(default)s)")
    parser.add_argument("--repo", action="append", metavar="NAME", help="only this repository (owner+name); repeatable")
    parser.add_argument("--base", metavar="REV", help="also run revision REV and print the difference")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="repositories at a time")
    parser.add_argument("--snapshot", type=Path, help="where to write the findings (default: .ecosystem/head.json)")
    parser.add_argument("--todo", action="store_true", help="print ledger stubs for findings without a verdict")
    parser.add_argument("--prune", action="store_true",
                        help="delete the FP and debatable verdicts whose findings are gone (never a TP or FN)")
    args = parser.parse_args(argv)
    try:
        repos = corpus_repos(args.corpus, args.repo)
        base = None
        if args.base:
            command = base_command(args.base)
            base = check_corpus(command, args.corpus, repos, args.jobs, label=args.base)
            write_snapshot(WORK_DIR / "base.json", args.base, base)
        head = check_corpus(head_command(), args.corpus, repos, args.jobs, label="this checkout")
        write_snapshot(args.snapshot or WORK_DIR / "head.json", "head", head)
        ledger = read_ledger()
    except EcosystemError as exc:
        print(f"ecosystem: {exc}", file=sys.stderr)
        return 2
    print(summary(head))
    if base is not None:
        print()
        print(render_difference(difference(base, head), args.corpus, args.base, "this checkout"), end="")
    result = check_ledger(head, ledger, repos)
    if args.prune and result.stale:
        write_ledger(pruned(ledger, result))
        print(f"\nDeleted {len(result.stale)} verdicts for false alarms no longer reported.")
        result = check_ledger(head, read_ledger(), repos)
    if args.todo:
        print(json.dumps(todo_entries(result.unjudged, args.corpus), indent=1))
        return 0
    problems = result.problems()
    print()
    print("\n".join(problems) if problems else "The ledger holds a verdict for every behavioural finding.")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
