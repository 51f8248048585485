"""What must hold for every input the analyzer is given, fuzzed or not, checked through `lint_file`
(the engine behind the command line, the cache and `--fix`), every rule enabled:

* no exception escapes and no rule fails (an internal error);
* JAX000 (cannot parse) only for a file CPython's `compile()` rejects;
* every finding and every edit of its fix lies inside the file (its cell, for a notebook);
* each fix, applied alone, leaves code that compiles;
* `--fix` is not refused, the fixed file compiles, the findings it reports are those of the fixed
  file, and fixing the fixed file again changes nothing.

`python_violations` and `notebook_violations` return what broke, each as a `Violation` whose
`kind` names the invariant, so a long fuzz run can count failures by class.
"""
from __future__ import annotations

import json
import re
import tokenize
import traceback
import warnings
from dataclasses import dataclass

from jaxlint.api import PARSE_ERROR, encode_like, lint_file
from jaxlint.engine import notebook as nb
from jaxlint.model.finding import Applicability, Finding, Position
from jaxlint.model.settings import Settings

SETTINGS = Settings()
#: settings that change what the rules report and fix: the oldest JAX supported (which renames are
#: offered), x64 on, more key names, extra traced decorators, a low unrolling threshold
SETTINGS_VARIANTS = (
    SETTINGS,
    Settings(target_jax_version=(0, 4, 20)),
    Settings(target_jax_version=(0, 4, 30), enable_x64=True),
    Settings(key_names=("*",), unknown_calls_consume_keys=False),
    Settings(extra_traced_decorators=("helper", "step", "nn.compact", "jax.named_call"), loop_unroll_threshold=2),
)
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Violation:
    #: which invariant broke: "exception", "internal-error", "parse-error-on-valid-code",
    #: "position-outside-file", "fix-does-not-compile", "fix-refused", "fixed-file-does-not-compile",
    #: "fix-findings-differ", "fix-not-idempotent"
    kind: str
    #: what tells this failure from another of the same kind (the rule, the exception and where it
    #: was raised), without the positions and names of one program: failures are counted by it
    signature: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} [{self.signature}]: {self.detail}"


def compiles(source: bytes | str) -> bool:
    """Whether CPython compiles the module (the parser and the symbol table both accept it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning / DeprecationWarning for odd literals
        try:
            compile(source, "<fuzzed>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return False
    return True


def decoded(data: bytes) -> str | None:
    """The text positions refer to: decoded as its coding cookie says, without a byte-order mark."""
    lines = iter(data.splitlines(keepends=True))  # at \r\n, \r and \n, as CPython reads a cookie
    try:
        encoding, _ = tokenize.detect_encoding(lambda: next(lines, b""))
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None
    return text[1:] if text.startswith("\ufeff") else text


def _lines(text: str) -> list[str]:
    """Lines as the analyzer numbers them (split at `\\r\\n`, `\\r` and `\\n`), without their ends."""
    return _LINE_END.split(text)


def _inside(lines: list[str], position: Position) -> bool:
    return 1 <= position.line <= len(lines) and 1 <= position.column <= len(lines[position.line - 1]) + 1


def _outside(finding: Finding, lines: list[str], cells: dict[int, list[str]] | None = None) -> list[Violation]:
    """Positions of `finding` and its fix outside the text (`lines`), or for a notebook
    (`cells`: the lines of each code cell) outside the cell they name."""
    spans = [("finding", finding.cell, finding.start, finding.end)]
    if finding.fix is not None:
        spans += [("fix edit", edit.cell, edit.start, edit.end) for edit in finding.fix.edits]
    found = []
    for what, cell, start, end in spans:
        if cells is not None:
            if cell not in cells:
                found.append(Violation("position-outside-file", f"{finding.code} {what} cell",
                                       f"{finding.code} {what} in cell {cell}, not a code cell"))
                continue
            lines = cells[cell]
        if not (_inside(lines, start) and _inside(lines, end) and start <= end):
            found.append(Violation("position-outside-file", f"{finding.code} {what}",
                                   f"{finding.code} {what} {start}-{end} (the text has {len(lines)} lines)"))
    return found


def _offset(lines: list[str], ends: list[str], position: Position) -> int:
    return sum(len(line) + len(end) for line, end in zip(lines[: position.line - 1], ends)) + position.column - 1


def with_fix(text: str, finding: Finding) -> str:
    """`text` with the edits of one finding's fix applied."""
    lines, ends = _lines(text), _LINE_END.findall(text)
    spans = sorted(((_offset(lines, ends, e.start), _offset(lines, ends, e.end), e.content) for e in finding.fix.edits),
                   reverse=True)
    for start, end, content in spans:
        text = text[:start] + content + text[end:]
    return text


def _crash(stage: str, exc: BaseException) -> Violation:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    where = f"{frame.filename.rsplit('/src/', 1)[-1]}:{frame.lineno} in {frame.name}"
    return Violation("exception", f"{type(exc).__name__} at {where}", f"{stage}: {type(exc).__name__} at {where}: {exc}")


def _lint(path: str, data: bytes, fix: bool, stage: str, found: list[Violation], settings: Settings):
    try:
        result = lint_file(path, settings, fix=fix, data=data)
    except Exception as exc:  # the invariant is precisely that nothing escapes
        found.append(_crash(stage, exc))
        return None
    if result.internal_error:
        signature = re.sub(r"(\w+Error|\w+Exception):.*", r"\1", result.internal_error.split(";")[0])
        found.append(Violation("internal-error", signature, f"{stage}: {result.internal_error}"))
    return result


def _fixed_by(findings: list[Finding]) -> str:
    """The rules whose safe fixes `--fix` applies, e.g. `JAX301+JAX601`."""
    return "+".join(sorted({f.code for f in findings if f.fix is not None
                            and f.fix.applicability is Applicability.SAFE})) or "no safe fix"


def _messages(findings: list[Finding]) -> list[tuple]:
    return sorted((f.code, f.cell or 0, f.start, f.end, f.message) for f in findings)


# -- Python files ------------------------------------------------------------------------------
def python_violations(data: bytes, path: str = "fuzzed.py", settings: Settings = SETTINGS) -> list[Violation]:
    found: list[Violation] = []
    valid = compiles(data)
    text = decoded(data)
    checked = _lint(path, data, False, "check", found, settings)
    if checked is None:
        return found
    if valid:
        found += [Violation("parse-error-on-valid-code", f.message, f"{f.start}: {f.message}")
                  for f in checked.findings if f.code == PARSE_ERROR]
    if text is None:
        return found
    lines = _lines(text)
    for finding in checked.findings:
        found += _outside(finding, lines)
    if found or not valid:
        return found
    for finding in checked.findings:
        if finding.fix is not None and finding.fix.applicability is not Applicability.DISPLAY_ONLY \
                and not compiles(with_fix(text, finding)):
            what = f"{finding.code} {finding.fix.applicability.value} fix"
            found.append(Violation("fix-does-not-compile", what, f"{what} at {finding.start}: {finding.fix.edits}"))
    fixed = _lint(path, data, True, "fix", found, settings)
    if fixed is None or found:
        return found
    if fixed.fix_refused:
        found.append(Violation("fix-refused", fixed.fix_refused.split("(")[0].strip(), fixed.fix_refused))
    if fixed.fixed_text is None:
        return found
    fixed_data = encode_like(data, fixed.fixed_text, path)
    if not compiles(fixed_data):
        found.append(Violation("fixed-file-does-not-compile", _fixed_by(checked.findings), fixed.fixed_text[:2000]))
        return found
    again = _lint(path, fixed_data, True, "fix of the fixed file", found, settings)
    if again is None:
        return found
    found += _second_fix_violations(checked, fixed, again, "file")
    fixed_lines = _lines(fixed.fixed_text)
    for finding in again.findings:
        found += _outside(finding, fixed_lines)
    return found


def with_jax_import(source: str) -> str | None:
    """A generic program made to mention JAX (files that do not are only syntax-checked), or None
    when the import cannot be added without changing whether it compiles."""
    text = source + ("" if source.endswith(("\n", "\r")) or not source else "\n") + "import jax\n"
    return text if compiles(text) == compiles(source) else None


# -- notebooks ---------------------------------------------------------------------------------
def _cell_sources(text: str) -> dict[int, str] | None:
    try:
        return {cell.index: cell.source for cell in nb.read_notebook(text)}
    except nb.NotebookError:
        return None


def _joined_compiles(sources: dict[int, str]) -> bool:
    return compiles("".join(s if s.endswith("\n") or not s else s + "\n" for s in sources.values()))


def notebook_violations(text: str, path: str = "fuzzed.ipynb", settings: Settings = SETTINGS) -> list[Violation]:
    """The invariants for a notebook; "valid" means its code cells, IPython lines masked, compile
    as one module."""
    found: list[Violation] = []
    data = text.encode("utf-8")
    sources = _cell_sources(text)
    checked = _lint(path, data, False, "check", found, settings)
    if checked is None or sources is None:
        return found
    valid = _joined_compiles(sources)
    if valid:
        found += [Violation("parse-error-on-valid-code", f.message, f"cell {f.cell} {f.start}: {f.message}")
                  for f in checked.findings if f.code == PARSE_ERROR]
    cells = {index: _lines(source) for index, source in sources.items()}
    for finding in checked.findings:
        found += _outside(finding, [], cells)
    if found or not valid:
        return found
    fixed = _lint(path, data, True, "fix", found, settings)
    if fixed is None or found:
        return found
    if fixed.fix_refused:
        found.append(Violation("fix-refused", fixed.fix_refused.split("(")[0].strip(), fixed.fix_refused))
    if fixed.fixed_text is None:
        return found
    fixed_sources = _cell_sources(fixed.fixed_text)
    if fixed_sources is None or not _joined_compiles(fixed_sources):
        found.append(Violation("fixed-file-does-not-compile", _fixed_by(checked.findings), fixed.fixed_text[:2000]))
        return found
    json.loads(fixed.fixed_text)
    again = _lint(path, fixed.fixed_text.encode("utf-8"), True, "fix of the fixed file", found, settings)
    if again is None:
        return found
    found += _second_fix_violations(checked, fixed, again, "notebook")
    return found


def _second_fix_violations(checked, fixed, again, what: str) -> list[Violation]:
    """A re-check of the fixed text must report what --fix reported for it, and fix nothing more."""
    found = []
    if _messages(again.findings) != _messages(fixed.fixed_findings):
        found.append(Violation("fix-findings-differ", _fixed_by(checked.findings),
                               "the findings reported after --fix are not those of the fixed file"))
    if again.fixed_text is not None or again.fix_refused:
        found.append(Violation("fix-not-idempotent", _fixed_by(checked.findings),
                               again.fix_refused or f"a second --fix changes the {what} again"))
    return found
