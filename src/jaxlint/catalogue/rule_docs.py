"""The rule catalogue: one TOML file per rule under `rules/`, read at run time.

Each entry's `[runtime]` table is the one place that says what `jaxlint check --runtime` does with
the rule's findings (`RuntimeCheck`). Besides its page's `bad` and `good` example, an entry may hold
more examples, each run by the tests (`tests/test_catalogue_examples.py`) and shown on its page:

    [[invalid]]                 # code the rule must report (at least once)
    note = "one line: what the case is"        # optional
    code = \"\"\"...\"\"\"
    lines = [4]                 # optional: exactly the lines the rule reports, counted from the
                                # first line of `code`

    [[valid]]                   # code the rule must not report
    note = "..."                # optional
    code = \"\"\"...\"\"\"
"""
from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..model.finding import Severity
from ..model.settings import PARSE_ERROR_CODE, UNUSED_NOQA_CODE

#: The fields every entry has.
FIELDS = ("code", "name", "severity", "summary", "why", "bad", "good", "fix", "references", "runtime")
#: Arrays of tables an entry may have: more examples of code the rule reports (`invalid`) and of
#: code it leaves alone (`valid`), beyond the page's `bad` and `good`.
EXAMPLE_FIELDS = ("invalid", "valid")
#: What runtime mode does with a rule's findings (the `check` of its `[runtime]` table):
#: `raises`: JAX raises one of the `raises` exceptions at the flagged line;
#: `key-reuse-checker`: JAX's key-reuse checker raises there, else the `behaviour` check decides;
#: `behaviour`: the named behaviour check of runtime mode decides;
#: `static`: nothing to run (the code works; it is slow, deprecated or unclear).
RUNTIME_CHECKS = ("raises", "key-reuse-checker", "behaviour", "static")


#: Where the docs/ directory of the repository is published (ending in `/`), so that a report can
#: link each rule's page; None while the project has no public address (docs/pre-commit.md still
#: says `<url of the jaxlint repository>`). Set it here and every link follows (`RuleDoc.help_uri`).
DOCUMENTATION_URL: str | None = None
#: A rule's page, relative to docs/ (the rule index links the pages the same way, relative to it).
RULE_PAGE = "rules/{code}-{name}.md"


class CatalogueError(Exception):
    pass


@dataclass(frozen=True)
class RuntimeCheck:
    check: str  # one of RUNTIME_CHECKS
    #: (exception class name, anywhere in the raised exception's MRO; regular expression its
    #: message must match, or None)
    raises: tuple[tuple[str, str | None], ...] = ()
    behaviour: str | None = None  # the name of a behaviour check of runtime mode

    @property
    def runs(self) -> bool:
        return self.check != "static"

    def as_plan(self) -> dict:
        """What the runtime worker is told (JSON-ready)."""
        return {"check": self.check, "raises": [list(r) for r in self.raises], "behaviour": self.behaviour}


@dataclass(frozen=True)
class Example:
    """Code the rule reports (`reported`) or leaves alone; `lines`, where given, are exactly the
    lines it reports, counted from the first line of `code`."""
    reported: bool
    code: str
    note: str = ""
    lines: tuple[int, ...] | None = None

    @property
    def source(self) -> str:
        """The code as a file to check."""
        return self.code + "\n"


@dataclass(frozen=True)
class RuleDoc:
    code: str
    name: str
    severity: Severity
    summary: str
    why: str
    bad: str
    good: str
    fix: str
    references: tuple[str, ...]
    runtime: RuntimeCheck
    path: Path
    #: the `[[invalid]]` and `[[valid]]` tables, in the order written
    invalid: tuple[Example, ...] = ()
    valid: tuple[Example, ...] = ()

    def examples(self) -> tuple[Example, ...]:
        """Every example the entry gives: the page's `bad` and `good` first, then the others."""
        return (Example(True, self.bad, "the page's example"), Example(False, self.good, "the page's fix"),
                *self.invalid, *self.valid)

    @property
    def page(self) -> str:
        """The rule's page, relative to docs/."""
        return RULE_PAGE.format(code=self.code, name=self.name)

    @property
    def help_uri(self) -> str | None:
        """The published page of the rule; its main reference while the docs have no address."""
        if DOCUMENTATION_URL:
            return DOCUMENTATION_URL + self.page
        return self.references[0] if self.references else None

    @property
    def help_markdown(self) -> str:
        return render_text(self)

    @property
    def help_text(self) -> str:
        return render_plain(self)


def rule_page_uri(doc: RuleDoc) -> str | None:
    """The link to a rule's documentation: the published page once the docs have an address, else
    its page under docs/ where a source checkout has it, else the rule's first reference (the link
    SARIF output gives each rule)."""
    if not DOCUMENTATION_URL:
        page = Path(__file__).resolve().parents[3] / "docs" / doc.page
        if page.is_file():
            return page.as_uri()
    return doc.help_uri


def catalogue_dir() -> Path:
    """`jaxlint/catalogue/rules` inside an installed wheel, else `rules/` of a source checkout."""
    packaged = Path(__file__).resolve().parent / "rules"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[3] / "rules"
    if checkout.is_dir():
        return checkout
    raise CatalogueError(f"rule catalogue not found (looked in {packaged} and {checkout})")


def read_entry(path: Path) -> RuleDoc:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogueError(f"{path}: {exc}") from exc
    missing = [f for f in FIELDS if f not in data]
    unknown = sorted(set(data) - set(FIELDS) - set(EXAMPLE_FIELDS))
    if missing or unknown:
        raise CatalogueError(f"{path}: missing fields {missing}, unknown fields {unknown}")
    try:
        severity = Severity(data["severity"])
    except ValueError as exc:
        raise CatalogueError(f"{path}: bad severity {data['severity']!r}") from exc
    return RuleDoc(
        code=data["code"],
        name=data["name"],
        severity=severity,
        summary=data["summary"].strip(),
        why=data["why"].strip(),
        bad=data["bad"].strip("\n"),
        good=data["good"].strip("\n"),
        fix=data["fix"].strip(),
        references=tuple(data["references"]),
        runtime=_runtime_check(data["runtime"], path),
        path=path,
        invalid=_examples(data.get("invalid", []), True, path),
        valid=_examples(data.get("valid", []), False, path),
    )


def _examples(tables: object, reported: bool, path: Path) -> tuple[Example, ...]:
    field = "invalid" if reported else "valid"

    def bad(index: int, why: str) -> CatalogueError:
        return CatalogueError(f"{path}: [[{field}]] number {index + 1}: {why}")

    if not isinstance(tables, list):
        raise CatalogueError(f"{path}: `{field}` must be an array of tables ([[{field}]])")
    examples = []
    allowed = {"code", "note", "lines"} if reported else {"code", "note"}
    for index, table in enumerate(tables):
        if not isinstance(table, dict):
            raise bad(index, "must be a table")
        unknown = sorted(set(table) - allowed)
        if unknown:
            raise bad(index, f"unknown fields {unknown}")
        code = table.get("code")
        if not isinstance(code, str) or not code.strip():
            raise bad(index, "`code` must be a non-empty string")
        note = table.get("note", "")
        if not isinstance(note, str) or "\n" in note.strip():
            raise bad(index, "`note` must be one line of text")
        # only trailing newlines go: `lines` count from the first line as written
        code = code.rstrip("\n")
        lines = table.get("lines")
        if lines is not None:
            count = len(code.splitlines())
            if (not isinstance(lines, list) or not lines
                    or not all(type(n) is int and 1 <= n <= count for n in lines)):
                raise bad(index, f"`lines` must be a non-empty list of line numbers of `code` (1 to {count})")
            lines = tuple(sorted(set(lines)))
        examples.append(Example(reported, code, note.strip(), lines))
    return tuple(examples)


def _runtime_check(table: object, path: Path) -> RuntimeCheck:
    def bad(why: str) -> CatalogueError:
        return CatalogueError(f"{path}: [runtime] {why}")

    if not isinstance(table, dict):
        raise bad("must be a table")
    unknown = sorted(set(table) - {"check", "raises", "behaviour"})
    if unknown:
        raise bad(f"unknown fields {unknown}")
    check = table.get("check")
    if check not in RUNTIME_CHECKS:
        raise bad(f"check must be one of {list(RUNTIME_CHECKS)}, not {check!r}")
    raises = table.get("raises")
    if (raises is not None) != (check == "raises"):
        raise bad("`raises` is required with check = \"raises\" and only there")
    exceptions = []
    for item in raises or []:
        if not isinstance(item, dict) or set(item) - {"exception", "message"} \
                or not isinstance(item.get("exception"), str) or not item["exception"].isidentifier():
            raise bad(f"each of `raises` is {{ exception = \"ClassName\", message = 'regex' }}, not {item!r}")
        message = item.get("message")
        if message is not None:
            try:
                re.compile(message)
            except (re.error, TypeError) as exc:
                raise bad(f"message {message!r} is not a regular expression: {exc}") from exc
        exceptions.append((item["exception"], message))
    if check == "raises" and not exceptions:
        raise bad("`raises` names no exception")
    behaviour = table.get("behaviour")
    if (behaviour is not None) != (check in ("behaviour", "key-reuse-checker")):
        raise bad("`behaviour` is required with check = \"behaviour\" or \"key-reuse-checker\" and only there")
    if behaviour is not None and (not isinstance(behaviour, str) or not behaviour):
        raise bad(f"behaviour must be a name, not {behaviour!r}")
    return RuntimeCheck(check, tuple(exceptions), behaviour)


@lru_cache(maxsize=None)
def load_catalogue() -> dict[str, RuleDoc]:
    docs = {}
    for path in sorted(catalogue_dir().glob("JAX*.toml")):
        doc = read_entry(path)
        if not path.name.startswith(doc.code):
            raise CatalogueError(f"{path}: file name does not start with its code {doc.code}")
        docs[doc.code] = doc
    return docs


def catalogue_codes() -> list[str]:
    """Every code a user may name: each rule's and JAX000, which the engine reports itself. The
    same as the registry's `known_codes` (it refuses a rule without an entry), read from the
    entries' file names (`JAX101-prng-key-reuse.toml`: `load_catalogue` holds each entry's code
    to its name), without parsing them or importing the rules."""
    return sorted({path.name.partition("-")[0] for path in catalogue_dir().glob("JAX*.toml")})


def rule_entries() -> dict[str, RuleDoc]:
    """The entries of the rules, by code: every entry but those of the codes the engine reports
    itself, JAX000 and JAX001 (the registry's rules each with its `doc`, read without importing them)."""
    return {code: doc for code, doc in load_catalogue().items() if code not in (PARSE_ERROR_CODE, UNUSED_NOQA_CODE)}


class RuleEntries(Mapping):
    """The whole catalogue (JAX000's entry too), read when first looked into and then kept: a
    report that names no rule's entry (any but GitHub's, JUnit's and SARIF) parses none of them."""

    def __init__(self) -> None:
        self._docs: dict[str, RuleDoc] | None = None

    def _entries(self) -> dict[str, RuleDoc]:
        if self._docs is None:
            self._docs = load_catalogue()
        return self._docs

    def __getitem__(self, code: str) -> RuleDoc:
        return self._entries()[code]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())


def render_text(doc: RuleDoc) -> str:
    """The rule's page as `jaxlint rule CODE` prints it (Markdown, readable as plain text)."""
    refs = "\n".join(f"- {ref}" for ref in doc.references) or "- (none)"
    return (
        f"# {doc.code} {doc.name}\n\n"
        f"Severity: {doc.severity.value}\n\n"
        f"## What it does\n\n{doc.summary}\n\n"
        f"## Why is this bad\n\n{doc.why}\n\n"
        f"## Example\n\n```python\n{doc.bad}\n```\n\n"
        f"## Use instead\n\n```python\n{doc.good}\n```\n\n"
        f"{render_more_examples(doc)}"
        f"## Fix\n\n{doc.fix}\n\n"
        f"## Runtime mode\n\n{render_runtime(doc.runtime)}\n\n"
        f"## References\n\n{refs}\n"
    )


def render_more_examples(doc: RuleDoc) -> str:
    """The `[[invalid]]` and `[[valid]]` examples as a section of the page ("" when there are none):
    the edges of the rule that `why` describes, each checked by the tests."""
    if not doc.invalid and not doc.valid:
        return ""
    parts = ["## More examples\n\n"]
    for heading, examples in (("Reported", doc.invalid), ("Not reported", doc.valid)):
        if not examples:
            continue
        parts.append(f"### {heading}\n\n")
        for example in examples:
            where = ""
            if example.lines:
                numbers = ", ".join(map(str, example.lines))
                where = f"(line{'s' if len(example.lines) > 1 else ''} {numbers})"
            caption = " ".join(part for part in (example.note, where) if part)
            if caption:
                parts.append(f"{caption}\n\n")
            parts.append(f"```python\n{example.code}\n```\n\n")
    return "".join(parts)


def render_plain(doc: RuleDoc) -> str:
    """What the rule finds, why it matters and how to write it instead, as plain text (for tools
    that show help without Markdown)."""
    def indented(code: str) -> str:
        return "\n".join(f"    {line}" if line else "" for line in code.splitlines())

    return (f"{doc.summary}\n\n{doc.why}\n\nExample:\n\n{indented(doc.bad)}\n\n"
            f"Use instead:\n\n{indented(doc.good)}\n\nFix: {doc.fix}\n")


def render_runtime(runtime: RuntimeCheck) -> str:
    """What `jaxlint check --runtime` does with the rule's findings, in a sentence."""
    if runtime.check == "static":
        return ("Not run: the code works (it is slow, deprecated or unclear), so running it proves nothing. "
                "Findings keep the static verdict and get no `runtime` object.")
    if runtime.check == "key-reuse-checker":
        return ("Confirmed when JAX's key-reuse checker (`jax.debug_key_reuse`) raises `KeyReuseError` at the "
                f"flagged line; otherwise the `{runtime.behaviour}` behaviour check decides.")
    if runtime.check == "behaviour":
        return f"Decided by the `{runtime.behaviour}` behaviour check (see docs/runtime.md)."
    names = [f"`{name}`" + (f" (message matching `{message}`)" if message else "") for name, message in runtime.raises]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"Confirmed when JAX raises {listed} at the flagged line."


def render_pages(docs: dict[str, RuleDoc]) -> dict[str, str]:
    """The docs/rules/ pages generated from the catalogue: file name -> content."""
    pages = {_index_link(doc): render_text(doc) for doc in docs.values()}
    rows = "\n".join(
        f"| [{doc.code}]({_index_link(doc)}) | {doc.name} | {doc.severity.value} | {doc.summary} |"
        for doc in docs.values()
    )
    runtime_rows = "\n".join(
        f"| [{doc.code}]({_index_link(doc)}) | {doc.name} | {render_runtime_short(doc.runtime)} |"
        for doc in docs.values()
    )
    pages["index.md"] = (
        "# Rules\n\n"
        "Generated from the catalogue in `rules/` by `scripts/generate_docs.py`; do not edit by hand.\n"
        "`jaxlint rule CODE` prints the same page in a terminal.\n\n"
        "| code | name | severity | summary |\n|---|---|---|---|\n" + rows + "\n\n"
        "## Runtime mode\n\n"
        "What `jaxlint check --runtime` does with each rule's findings (its entry's `[runtime]` table; "
        "[runtime.md](../runtime.md) explains each kind of check). A rule marked \"not run\" keeps its "
        "static verdict.\n\n"
        "| code | name | runtime check |\n|---|---|---|\n" + runtime_rows + "\n"
    )
    return pages


def render_runtime_short(runtime: RuntimeCheck) -> str:
    """What runtime mode does with a rule's findings, in a table cell."""
    if runtime.check == "static":
        return "not run"
    if runtime.check == "key-reuse-checker":
        return f"JAX's key-reuse checker, then the `{runtime.behaviour}` behaviour"
    if runtime.check == "behaviour":
        return f"the `{runtime.behaviour}` behaviour"
    return "raises " + ", ".join(f"`{name}`" for name, _ in runtime.raises)


def _index_link(doc: RuleDoc) -> str:
    """The rule's page as docs/rules/index.md links it (both are in docs/rules/)."""
    return doc.page.split("/", 1)[1]
