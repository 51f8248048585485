"""Start a new rule: its module, its catalogue entry and a fixture stub, and nothing else to edit.

    python scripts/add_rule.py JAX701 sharding-mismatch --severity warning

writes

    src/jaxlint/rules/sharding_mismatch.py    a `Rule` subclass that reports nothing yet
    rules/JAX701-sharding-mismatch.toml       every field of an entry, the texts marked TODO
    tests/fixtures/JAX701_sharding_mismatch.py  a positive to replace and a place for hard negatives

The registry finds the module and the catalogue finds the entry by themselves, so `jaxlint check`
runs the rule at once. The TODO texts are valid for the loader (a rule half written can be run);
tests/test_catalogue.py fails on them, and the fixture's and the entry's examples fail until the
rule reports them. Nothing is overwritten: the script refuses a code or a name already used, and a
file that already exists.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEVERITIES = ("error", "warning", "info")
CODE = re.compile(r"JAX\d{3}")
NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


class Refused(Exception):
    pass


def class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def module_text(code: str, name: str) -> str:
    return f'''"""{code}: TODO say in one line what the rule finds."""
from __future__ import annotations

import libcst as cst

from ..rulebase.rule import Rule


class {class_name(name)}(Rule):
    code = "{code}"

    def visit_Call(self, node: cst.Call) -> None:
        # TODO: decide from `self.walk` (where the walk is) and `self.analysis` (the file's facts:
        # `value(expr, at=self.walk)`, `trace_info(at=self.walk)`, ...), and report with
        # `self.report(node, message)`; see "What a rule reads" in docs/architecture.md.
        return
'''


def entry_text(code: str, name: str, severity: str) -> str:
    return f'''code = "{code}"
name = "{name}"
severity = "{severity}"
summary = "TODO: one sentence: what the rule finds."
why = """
TODO: why the code is a mistake (what JAX does with it), and which cases are reported and which
are not; each case named here makes a good [[invalid]] or [[valid]] example below.
"""
bad = """
# TODO: a short program that {code} reports
import jax
"""
good = """
# TODO: the same program written as {code} recommends
import jax
"""
fix = """
TODO: what to write instead, and whether `jaxlint check --fix` does it.
"""
references = ["https://docs.jax.dev/TODO"]

[runtime]
# "static" (not run) until runtime mode has a way to confirm the findings: "raises" with the
# exceptions JAX raises, or a behaviour check (src/jaxlint/catalogue/rule_docs.py says which).
check = "static"

# More examples: each is checked by tests/test_catalogue_examples.py and shown on the rule's page.
# [[invalid]]
# note = "what the case is, in one line"
# code = """..."""
# lines = [4]          (optional: exactly the lines reported)
# [[valid]]
# code = """..."""
'''


def fixture_text(code: str, name: str) -> str:
    return f'''# {code} {name}: TODO say what the positives have in common.
# Each reported line carries an `expect` comment naming {code}; every other line must stay silent.
import jax


@jax.jit
def reported(x):
    return x  # TODO: code that {code} reports  # expect: {code}


# -- hard negatives: code close to the positives that {code} must not report ---------------------
def not_reported(x):
    return x
'''


def plan(root: Path, code: str, name: str, severity: str) -> dict[Path, str]:
    """The files to write, by path; raises Refused when the code, the name or a file is taken."""
    if not CODE.fullmatch(code):
        raise Refused(f"{code!r} is not a rule code (JAX followed by three digits)")
    if not NAME.fullmatch(name):
        raise Refused(f"{name!r} is not a rule name (lower-case words joined by hyphens)")
    if severity not in SEVERITIES:
        raise Refused(f"severity must be one of {', '.join(SEVERITIES)}, not {severity!r}")
    catalogue = root / "rules"
    rules_package = root / "src" / "jaxlint" / "rules"
    if not catalogue.is_dir() or not rules_package.is_dir():
        raise Refused(f"{root} holds no rules/ and src/jaxlint/rules/")
    for entry in catalogue.glob("JAX*.toml"):
        taken_code, _, taken_name = entry.stem.partition("-")
        if taken_code == code:
            raise Refused(f"{code} is taken: {entry}")
        if taken_name == name:
            raise Refused(f"the name {name} is taken: {entry}")
    # a rule class may hold a code whose entry is not written yet
    declared = re.compile(rf"^\s+code\s*=\s*[\"']{code}[\"']", re.M)
    for module in rules_package.glob("*.py"):
        if declared.search(module.read_text(encoding="utf-8")):
            raise Refused(f"{code} is taken: {module}")
    stem = name.replace("-", "_")
    files = {
        rules_package / f"{stem}.py": module_text(code, name),
        catalogue / f"{code}-{name}.toml": entry_text(code, name, severity),
        root / "tests" / "fixtures" / f"{code}_{stem}.py": fixture_text(code, name),
    }
    existing = [str(path) for path in files if path.exists()]
    if existing:
        raise Refused(f"would overwrite {', '.join(existing)}")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("code", help="the new rule's code, e.g. JAX701")
    parser.add_argument("name", help="its name, lower-case words joined by hyphens, e.g. sharding-mismatch")
    parser.add_argument("--severity", default="warning", help=f"one of {', '.join(SEVERITIES)} (default: warning)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the tree to write into (default: this repository)")
    args = parser.parse_args(argv)
    try:
        files = plan(args.root, args.code, args.name, args.severity)
    except Refused as exc:
        print(f"add_rule: {exc}", file=sys.stderr)
        return 1
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        # "x": a file that appeared since the check is still not overwritten
        with open(path, "x", encoding="utf-8") as handle:
            handle.write(text)
        print(f"wrote {path}")
    print("next: write the rule and fill in the TODOs, then run `python scripts/generate_docs.py` and "
          "show the rule in examples/ (tests/test_examples.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
