"""Checking and fixing Python source text: parse it once, walk it once, replay that walk to every enabled rule."""
from __future__ import annotations

import ast
import gc
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Protocol

import libcst as cst

from ..model.result import FileResult  # noqa: F401 (re-exported: the engine's callers import it from here)
from ..model.settings import PARSE_ERROR_CODE, UNUSED_NOQA_CODE, Settings, may_use_jax
from ..analysis import FileAnalysis
from ..rulebase.report import Report, Reporter, RuleContext
from ..semantic.model import SemanticModel
from ..semantic.source_file import SourceFile
from ..semantic.walk_state import Walker, WalkState
from ..syntax.positions import Span, node_spans, statement_spans
from ..model.finding import Edit, Finding, Fix, Position, TraceLocation
from ..syntax.fixes import applicable, apply_fixes
from ..syntax.noqa import file_suppressed, source_lines, suppressed, suppressed_in_file
from .deep_stack import call_with_deep_stack, stack_depth_available
from .parsing import (NotParsed, Parsed, could_nest_beyond, keeps_rewritten, libcst_parse, nesting_beyond,
                      python_accepts, python_tree)
from .registry import all_rules, known_codes
from .unused_noqa import unused_noqa

PARSE_ERROR = PARSE_ERROR_CODE
UNUSED_NOQA = UNUSED_NOQA_CODE


class ProjectFiles(Protocol):
    """The project a file is checked in (`project_check.ProjectSession`)."""

    def loaded(self, path: str, source: str) -> "tuple[SourceFile, Parsed] | None": ...

    def context(self, path: str) -> tuple: ...

    def analysed(self, path: str) -> bool: ...
#: Files that mention none of these cannot hold a finding; they are only syntax-checked.
MAX_FIX_ROUNDS = 10


class RuleFailure(Exception):
    """Some rules raised while checking a file; the findings of the others are kept."""

    def __init__(self, findings: list[Finding], failures: list[str]) -> None:
        super().__init__("; ".join(failures))
        self.findings = findings


class NotAnalysed(Exception):
    """Python that jaxlint could not analyse, all of it or with some rules: neither a finding (the
    file is valid) nor a bug in jaxlint. `reason` says what was skipped and why; `findings` are
    those of the analysis that did run."""

    def __init__(self, reason: str, findings: list[Finding] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.findings = findings or []


def parse_error(path: str, message: str, line: int = 1, column: int = 1, cell: int | None = None) -> Finding:
    from ..catalogue.rule_docs import load_catalogue

    doc = load_catalogue()[PARSE_ERROR]
    position = Position(line, column)
    return Finding(PARSE_ERROR, doc.name, doc.severity, message, path, position, position, cell=cell)


# -- checking -----------------------------------------------------------------------------------
def enabled_rules(settings: Settings, path: str) -> frozenset[str]:
    """The codes reported for `path`: the rules' and the engine's own (JAX000, JAX001)."""
    return settings.enabled_codes([PARSE_ERROR, UNUSED_NOQA, *all_rules()], path)


def check_source(source: str, path: str, settings: Settings, enabled: Iterable[str],
                 apply_noqa: bool = True, line_label: Callable[[int], str] | None = None,
                 project: "ProjectFiles | None" = None) -> list[Finding]:
    """Findings for Python source text, positions relative to that text.

    `line_label` names another line of the text in a message (a notebook's joined cells say
    `cell 3, line 2` rather than the line of the joined text). `project`: the file is a module of
    a project, analysed with what its other modules tell (the text already analysed there is not
    parsed again). Raises `NotAnalysed` for Python that jaxlint cannot analyse (all of it, or for
    some rules), `RuleFailure` when a rule breaks.
    """
    enabled = frozenset(enabled)
    if project is not None:
        loaded = project.loaded(path, source)
        if loaded is not None:
            file, parsed = loaded
            if line_label is not None:
                file.line_label = line_label
            return call_with_deep_stack(_check_loaded, file, parsed, enabled, apply_noqa)
    with cyclic_gc_paused():
        # CPython decides what is Python; its tree is only made where something needs it (a text
        # it may reject, or one long enough to be deeper than libcst's parser can go)
        tree = None if python_accepts(source, path) else python_tree(source, path)
        stack_bytes = stack_depth_available()
        deep = could_nest_beyond(source, stack_bytes)
        if tree is None and deep:
            tree = python_tree(source, path)
        if tree is not None and not isinstance(tree, ast.Module):
            message, line, column = tree
            return [parse_error(path, f"cannot parse: {message}", line, column)] if PARSE_ERROR in enabled else []
        # a module the project analysed may be traced by an importer even if it never names JAX
        if not may_use_jax(source) and not (project is not None and project.analysed(path)):
            # no rule can report here; a `# noqa: JAX...` comment still can be stale
            return _kept([], source, path, apply_noqa, enabled)
        if deep:
            depth = nesting_beyond(tree, source, stack_bytes)
            if depth is not None:
                raise NotAnalysed(f"nested {depth} levels deep, deeper than jaxlint's parser can go")
        # the thread takes CPython's tree (if made) out of the holder, and drops it once libcst has parsed
        holder = [tree]
        del tree
        return call_with_deep_stack(_check_parsed, source, path, settings, enabled, apply_noqa, line_label, holder,
                                    project)


def _check_parsed(source: str, path: str, settings: Settings, enabled: frozenset[str], apply_noqa: bool,
                  line_label: Callable[[int], str] | None, tree_holder: list[ast.Module | None],
                  project: "ProjectFiles | None" = None) -> list[Finding]:
    try:
        parsed = libcst_parse(source, tree_holder.pop(), path)
    except NotParsed as exc:
        raise NotAnalysed(str(exc)) from None
    file = SourceFile(path, source, parsed.module, settings, *(project.context(path) if project else ()))
    if line_label is not None:
        file.line_label = line_label
    return _check_file(file, parsed, enabled, apply_noqa)


def _check_loaded(file: SourceFile, parsed: Parsed, enabled: frozenset[str], apply_noqa: bool) -> list[Finding]:
    with cyclic_gc_paused():
        return _check_file(file, parsed, enabled, apply_noqa)


def _check_file(file: SourceFile, parsed: Parsed, enabled: frozenset[str], apply_noqa: bool) -> list[Finding]:
    source = file.source
    try:
        # the text libcst parsed is the file's own unless it was rewritten for libcst
        findings = _walk(file, enabled, None if parsed.rewritten else source)
    except (RuleFailure, NotAnalysed) as partial:
        # some rules did not run: what their codes would have suppressed is not known (no JAX001)
        partial.findings = _kept(_original_positions(partial.findings, parsed), source, file.path, apply_noqa, None)
        raise
    except RecursionError:
        # outside any one rule (positions, the walk's own bookkeeping): nothing of the file is kept
        raise NotAnalysed("nested too deeply for jaxlint's analysis") from None
    return _kept(_original_positions(findings, parsed), source, file.path, apply_noqa, enabled)


def _original_positions(findings: list[Finding], parsed: Parsed) -> list[Finding]:
    if parsed.rewritten:
        return [keeps_rewritten(f, parsed.rewritten) for f in findings]
    return findings


def _kept(findings: list[Finding], source: str, path: str, apply_noqa: bool,
          enabled: frozenset[str] | None) -> list[Finding]:
    """With `apply_noqa`, the findings that no `noqa` comment suppresses, and JAX001's about those
    comments when `enabled` (the codes enabled for the file) has it; `enabled` None: not every
    rule ran, so what a comment suppresses is not known."""
    if not apply_noqa:
        return findings  # the caller applies its own (the flake8 plugin: flake8's)
    if enabled is not None and UNUSED_NOQA in enabled:
        findings = findings + unused_noqa(source, path, findings, enabled, known_codes())
    return _unsuppressed(findings, source)


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cycle collector off while one file is parsed and analysed.

    libcst allocates several objects per token, and every few hundred allocations the collector
    runs and traverses the young objects, again and again as they age: about a sixth of a whole
    check, for nothing, since a libcst tree holds no reference cycles (nodes only point down).
    Reference counting frees what the analysis drops as it goes; the cycles it makes (a context
    and its rules and facts, which hold the tree) are collected in one pass after the file, when
    the collector is back on.
    """
    if not gc.isenabled():  # the program embedding jaxlint turned it off: leave that alone
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _unsuppressed(findings: list[Finding], source: str) -> list[Finding]:
    if not findings:
        return findings
    lines = source_lines(source)
    in_file = file_suppressed(lines)
    return [f for f in findings if not suppressed(f.code, lines, f.start.line)
            and not suppressed_in_file(f.code, in_file)]


def syntax_error(source: str, path: str) -> Finding | None:
    """JAX000 when CPython rejects the text, else None."""
    tree = python_tree(source, path)
    if isinstance(tree, ast.Module):
        return None
    message, line, column = tree
    return parse_error(path, f"cannot parse: {message}", line, column)


def _walk(file: SourceFile, enabled: frozenset[str], parsed_text: str | None = None) -> list[Finding]:
    rule_classes = [cls for code, cls in all_rules().items() if code in enabled]
    if not rule_classes:
        return []
    try:
        return _run_rules(file, file.module, file.path, rule_classes, parsed_text)
    finally:
        file.release()


def _run_rules(file: SourceFile, module: cst.Module, path: str, rule_classes: list[type],
               parsed_text: str | None = None) -> list[Finding]:
    walk = WalkState(file)
    analysis = FileAnalysis(file)
    reporter = Reporter(walk, analysis)
    context = RuleContext(walk, analysis, reporter)
    rules = [cls(context) for cls in rule_classes]
    walker = Walker(walk, rules)
    events = _recorded_walk(file)
    if events is not None:
        walker.replay(events)
    else:
        walker.run(module)
    failed = {id(rule) for rule, _ in walker.failures}
    for rule in rules:
        if id(rule) not in failed:
            try:
                rule.finish()
            except Exception as exc:
                walker.failures.append((rule, exc))
                failed.add(id(rule))
    reports = [report for report in reporter.reports if id(report.rule) not in failed]
    findings = _findings(file, reports, module, path, parsed_text)
    too_deep = sorted({rule.code for rule, exc in walker.failures if isinstance(exc, RecursionError)})
    if len(too_deep) < len(walker.failures):
        raise RuleFailure(findings, [f"{rule.code} failed: {type(exc).__name__}: {exc}" for rule, exc in walker.failures])
    if too_deep:
        them = "them" if len(too_deep) > 1 else "it"
        raise NotAnalysed(f"{', '.join(too_deep)} skipped: the code is nested too deeply for {them}", findings)
    return findings


def _recorded_walk(file: SourceFile) -> list | None:
    """The semantic model's walk of the file, which the rules' walk replays; None when the model
    cannot be built (the rules then walk the tree, and those asking for the model fail as before)."""
    try:
        return SemanticModel.of(file).events
    except Exception:  # noqa: BLE001 - reported by the rules that need the model, not here
        return None


def _findings(file: SourceFile, reports: list[Report], module: cst.Module, path: str,
              parsed_text: str | None = None) -> list[Finding]:
    if not reports:
        return []
    # Positions of the reported nodes and of the nodes their fixes replace, and of nothing else:
    # libcst's PositionProvider (every node's range, then a visit of the whole tree) was about a
    # sixth of a whole check. With the parsed text and the recorded walk at hand, only the code of
    # the statements holding those nodes is generated.
    nodes = [report.node for report in reports]
    nodes += [r.node for report in reports if report.fix is not None for r in report.fix.replacements]
    statement_of = _statements_holding(file, nodes) if parsed_text is not None else None
    if statement_of is not None:
        positions = statement_spans(module, nodes, parsed_text, statement_of)
    else:
        positions = node_spans(module, nodes)
    findings = []
    for report in reports:
        rule, node_fix = report.rule, report.fix
        start, end = _span(positions[id(report.node)])
        fix = None
        if node_fix is not None:
            edits = tuple(Edit(*_span(positions[id(r.node)]), r.text) for r in node_fix.replacements)
            fix = Fix(node_fix.title, edits, node_fix.applicability)
        doc = rule.doc
        trace = tuple(TraceLocation(step.path, step.line, step.action, step.cell) for step in report.chain)
        trace += tuple(TraceLocation(path, line, note) for line, note in report.related)
        findings.append(Finding(rule.code, doc.name, doc.severity, report.message, path, start, end, fix,
                                trace=trace, headline=report.headline))
    return findings


def _statements_holding(file: SourceFile, nodes: list[cst.CSTNode]) -> dict[int, cst.CSTNode] | None:
    try:
        model = SemanticModel.of(file)
    except Exception:  # noqa: BLE001 - no model, no recorded walk: the whole module's code is generated
        return None
    return model.statements_holding(nodes)


def _span(span: Span) -> tuple[Position, Position]:
    (start_line, start_column), (end_line, end_column) = span
    return Position(start_line, start_column + 1), Position(end_line, end_column + 1)


def has_safe_fix(findings: list[Finding], unsafe: bool = False) -> bool:
    """Whether `--fix` has something to apply (with `unsafe`: `--unsafe-fixes` too)."""
    return any(applicable(f, unsafe) for f in findings)


def fix_until_stable(text: str, findings: list[Finding], recheck, unsafe: bool = False) -> tuple[str, int]:
    total = 0
    for _ in range(MAX_FIX_ROUNDS):
        new_text, applied = apply_fixes(text, findings, unsafe)
        if not applied or new_text == text:
            break
        text, total = new_text, total + applied
        findings = recheck(text)
        if any(f.code == PARSE_ERROR for f in findings) or not has_safe_fix(findings, unsafe):
            break
    return text, total
