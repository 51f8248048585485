"""The parent side of runtime mode: which findings to run, and what the worker needs to know.

Nothing here imports JAX or the user's code. For each module with findings to check, the planner
re-parses the file with jaxlint's own engine facts, finds the innermost function or lambda around
each finding (its qualified name, its parameters, how the static analysis says it is traced), and
works out the module name the user's code would import it under. The result is a JSON-ready plan
that the worker (`worker.py`) executes in its own process.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..catalogue.rule_docs import RuntimeCheck, load_catalogue
from ..model.settings import Settings
from ..model.finding import Finding
from ..syntax.arguments import Passing

def runtime_check(code: str) -> RuntimeCheck | None:
    """What runtime mode does with findings of `code`, as its catalogue entry says (None: not run)."""
    doc = load_catalogue().get(code)
    return doc.runtime if doc is not None and doc.runtime.runs else None


def runs_at_runtime(code: str) -> bool:
    return runtime_check(code) is not None


@dataclass
class ModulePlan:
    """One module's work for one worker process, or the reason it cannot be run at all."""

    path: str
    #: (position in the caller's finding list, finding)
    findings: list[tuple[int, Finding]] = field(default_factory=list)
    payload: dict[str, Any] | None = None
    reason: str | None = None  # set when the module is not run: every finding gets it
    notebook: Any = None  # a notebook's joined cells, to translate the evidence's line numbers
    #: a notebook's code cells that do not parse, left out of the run: (where, the error)
    unparsed: list[tuple[str, str]] = field(default_factory=list)


def plan_module(path: str, findings: list[tuple[int, Finding]], settings: Settings,
                examples: dict[str, Any], python_path: tuple[str, ...], project=None) -> ModulePlan:
    plan = ModulePlan(path, findings)
    if path.endswith(".pyi"):
        plan.reason = "a stub file has no code to run"
        return plan
    notebook = None
    kind = "notebook" if path.endswith(".ipynb") else "module"
    try:
        if path.endswith(".ipynb"):
            notebook = _Notebook(Path(path).read_text(encoding="utf-8"))
            plan.unparsed = notebook.blank_unparsed()
            source = notebook.text
        else:
            source = Path(path).read_text(encoding="utf-8-sig")
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        line, message = _syntax_error(source, exc)
        where = notebook.cell_line(line) if notebook is not None else f"line {line}"
        plan.reason = f"the {kind} does not parse ({where}: {message}): fix it to check this finding"
        return plan
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        plan.reason = f"cannot read the {kind}: {type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
        return plan
    functions = _functions(module, source, path, settings, project)
    name, roots = module_identity(path, settings.root, python_path)
    entries = []
    for index, finding in findings:
        if notebook is not None:
            finding = notebook.joined(finding)
        function = _innermost(functions, finding)
        entries.append({
            "index": index, "code": finding.code, "message": finding.message,
            "line": finding.start.line, "end_line": finding.end.line, "column": finding.start.column,
            "function": function, "check": runtime_check(finding.code).as_plan(),
        })
    plan.payload = {
        "path": str(Path(path).resolve()), "module": name, "roots": roots, "findings": entries,
        "project": str(Path(settings.root).resolve()),
        "examples": examples_for(name, path, settings.root, examples),
    }
    if notebook is not None:
        # Not importable: the worker runs the joined code cells as a module of this name.
        plan.payload["module"] = "__jaxlint_notebook__"
        plan.payload["source"] = notebook.text
        plan.notebook = notebook
    return plan


def _syntax_error(source: str, exc: cst.ParserSyntaxError) -> tuple[int, str]:
    """The line and message of a parse error, in Python's words where Python rejects the code too."""
    try:
        compile(source, "<module>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return error.lineno or exc.raw_line, f"SyntaxError: {error.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    return exc.raw_line, " ".join(exc.message.split())[:120]


class _Notebook:
    """A notebook's code cells joined into one module, as the static check reads them (IPython
    lines masked), and the way back from lines of that module to cells."""

    def __init__(self, text: str) -> None:
        from ..engine.notebook import NotebookError, read_notebook
        from ..engine.notebook_check import JoinedCells

        try:
            self.cells = read_notebook(text)
        except NotebookError as exc:
            raise ValueError(str(exc)) from None
        self._joined = JoinedCells(self.cells)
        self.text = self._joined.text
        self.first_lines = self._joined.first_lines

    def blank_unparsed(self) -> list[tuple[str, str]]:
        """Blank the code cells that do not parse (a placeholder such as `data = <your data>`),
        keeping every line number, so the others still run; where each was and why."""
        lines = self.text.splitlines(keepends=True)
        ends = [*self.first_lines[1:], len(lines) + 1]
        unparsed = []
        for first, end in zip(self.first_lines, ends):
            cell = "".join(lines[first - 1:end - 1])
            try:
                compile(cell, "<cell>", "exec", dont_inherit=True)
            except SyntaxError as exc:
                line = first + max(1, exc.lineno or 1) - 1
                unparsed.append((self.cell_line(line), f"SyntaxError: {exc.msg}"))
                lines[first - 1:end - 1] = ["\n"] * (end - first)
            except (ValueError, RecursionError, MemoryError) as exc:
                unparsed.append((self.cell_line(first), type(exc).__name__))
                lines[first - 1:end - 1] = ["\n"] * (end - first)
        self.text = "".join(lines)
        return unparsed

    def joined(self, finding: Finding) -> Finding:
        """The finding with its position in the joined module (findings come per cell; on a line
        magic's line, columns in the joined module are its statement's)."""
        return replace(finding, start=self._joined.joined_position(finding.cell, finding.start),
                       end=self._joined.joined_position(finding.cell, finding.end), cell=None)

    def cell_line(self, line: int, last: int | None = None) -> str:
        """`cell 3 (counted from 1), line 2` (markdown cells included) for a line of the joined module,
        or `cell 3 (counted from 1), lines 2-4` for a range: as static messages name cells."""
        from ..engine.notebook import cell_name

        position = max((i for i, first in enumerate(self.first_lines) if first <= line), default=0)
        offset = self.first_lines[position] - 1
        if last is None:
            return f"{cell_name(self.cells[position].index)}, line {line - offset}"
        return f"{cell_name(self.cells[position].index)}, lines {line - offset}-{last - offset}"

    def translate(self, evidence: str) -> str:
        """Evidence from the worker speaks of lines of the joined module: name cells instead."""
        return re.sub(r"\blines? (\d+)(?:-(\d+))?", lambda m: self.cell_line(
            int(m.group(1)), int(m.group(2)) if m.group(2) else None), evidence)


# -- the module name the user's code imports ----------------------------------------------------
def module_identity(path: str, project_root: str, python_path: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """The dotted module name of `path` and the import roots to put first on `sys.path`.

    A file under a configured `python-path` root is named relative to it (the longest such root);
    otherwise the name follows the packages (`__init__.py`) the file sits in, and the directory
    above the top package is the root. The project root and its `src/` are added after it, so
    absolute imports of the project's other top-level packages work as they do for the user.
    """
    file = Path(path).resolve()
    project = Path(project_root).resolve()
    configured = [(project / p).resolve() for p in python_path]
    root = None
    for candidate in sorted(configured, key=lambda p: len(p.parts), reverse=True):
        if candidate in file.parents:
            root = candidate
            break
    if root is None:
        root = file.parent
        while (root / "__init__.py").is_file() and root.parent != root:
            root = root.parent
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts and parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    roots = []
    for directory in (root, *configured, project, project / "src"):
        if directory.is_dir() and str(directory) not in roots:
            roots.append(str(directory))
    if not all(part.isidentifier() for part in parts):
        # `train.old.py`, `01_intro.py`: no import statement names it, so the worker runs it by path
        return "__jaxlint_path__." + "_".join(re.sub(r"\W", "_", part) for part in parts), roots
    return ".".join(parts), roots


def examples_for(module_name: str, path: str, project_root: str, examples: dict[str, Any]) -> dict[str, Any]:
    """The declared examples that name functions of this module: {qualname: example}.

    Keys are `"package.module:Qual.name"` or `"path/to/file.py:Qual.name"` (relative to the
    directory of the configuration file).
    """
    found = {}
    file = Path(path).resolve()
    for key, value in examples.items():
        where, _, qualname = key.rpartition(":")
        if where.endswith((".py", ".pyi")) or "/" in where or "\\" in where:
            if (Path(project_root) / where).resolve() != file:
                continue
        elif where != module_name:
            continue
        found[qualname] = {"value": value, "source": "pyproject.toml"}
    return found


# -- functions and the findings inside them -----------------------------------------------------
def _functions(module: cst.Module, source: str, path: str, settings: Settings, project=None) -> list[dict]:
    """Every def and lambda of the module with what the worker needs to find and call it (in a
    project, how callers in other modules trace its functions)."""
    from ..jaxmodel.traced import TracedFunctions
    from ..semantic.source_file import SourceFile
    from ..syntax.walk import walk

    context = ()
    if project is not None:
        project.settle([path])
        context = project.context(path)
    traced = SourceFile(path, source, module, settings, *context).fact(TracedFunctions)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    uses = _NameUses()
    found: list[dict] = []
    nodes: list[cst.CSTNode] = []
    # (node, qualified-name prefix for what is defined inside it, class name or None)
    stack: list[tuple[cst.CSTNode, str, str | None]] = []

    def prefix() -> str:
        return stack[-1][1] if stack else ""

    def enter(node: cst.CSTNode, _field: str) -> bool:
        uses.enter(node, _field)
        if isinstance(node, cst.ClassDef):
            stack.append((node, f"{prefix()}{node.name.value}.", node.name.value))
        elif isinstance(node, (cst.FunctionDef, cst.Lambda)):
            name = node.name.value if isinstance(node, cst.FunctionDef) else "<lambda>"
            owner = stack[-1] if stack else None
            in_class = owner is not None and isinstance(owner[0], cst.ClassDef)
            qualname = f"{prefix()}{name}"
            record = _describe(node, qualname, owner[2] if in_class else None, traced, positions)
            nodes.append(node)
            if record["nested"]:
                # The outermost def around it: called instead when this one cannot be called alone.
                outer = next((r for r in reversed(found) if not r["nested"] and
                              r["first_line"] <= record["first_line"] and record["end_line"] <= r["end_line"]), None)
                record["outer"] = outer and {k: v for k, v in outer.items() if k != "outer"}
            found.append(record)
            stack.append((node, f"{qualname}.<locals>.", None))
        return True

    def leave(node: cst.CSTNode) -> None:
        if stack and stack[-1][0] is node:
            stack.pop()

    walk(module, enter, leave)
    for record, node in zip(found, nodes):  # once every use of every name is counted
        record["calls"] = call_facts(node, traced, positions, uses, _place_name(path))
    by_node = {id(node): record for record, node in zip(found, nodes)}
    for record, node in zip(found, nodes):
        record["via"] = _traced_callers(node, traced, by_node)
        if record.get("outer"):
            outer = next(r for r in found if r["qualname"] == record["outer"]["qualname"] and not r["nested"])
            record["outer"]["calls"] = outer["calls"]  # an outer def comes before what it holds
    return found


class _NameUses:
    """How often each name is read, called and defined in the module: a function whose name is
    read other than to call it (passed to a transform, stored, returned) may be called from
    anywhere, so its call sites are not all known."""

    def __init__(self) -> None:
        self.read: Counter[str] = Counter()
        self.called: Counter[str] = Counter()
        self.defined: Counter[str] = Counter()

    def enter(self, node: cst.CSTNode, _field: str) -> bool:
        if isinstance(node, cst.Name):
            self.read[node.value] += 1
        elif isinstance(node, cst.Call):
            name = called_name(node)
            if name is not None:
                self.called[name] += 1
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Param)):
            self.defined[node.name.value] += 1  # a parameter of the same name is no use of it either
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            self.defined[node.keyword.value] += 1  # `f(scale=2)` names a parameter, not `scale`
        return True

    def only_called(self, name: str, wrapped: int, resolved: int) -> bool:
        """Every read of `name` calls it (and each such call was resolved to the function), or gives
        it to a transform whose wrapper's calls are known."""
        return self.read[name] - self.called[name] - self.defined[name] <= wrapped and self.called[name] == resolved


def called_name(call: cst.Call) -> str | None:
    """`f` of `f(…)` and of `obj.f(…)`."""
    func = call.func
    name = func if isinstance(func, cst.Name) else func.attr if isinstance(func, cst.Attribute) else None
    return name.value if name is not None else None


def _place_name(path: str) -> str | None:
    """How evidence names a line of this file: `train.py:12`; None for a notebook, whose lines the
    parent turns into cells ("line 12")."""
    return None if path.endswith(".ipynb") else Path(path).name


def call_facts(node, traced, positions, uses: _NameUses, file_name: str | None = None) -> dict:
    """What the module's call sites pass to a function: for each call (when every call of it is
    known), the literal source of each argument it names, or None where an argument is not a
    literal; the parameters with a default that no call passes; the parameters every call passes a
    literal for. Empty when the function has no call site here, or may be called from elsewhere."""
    import ast

    if isinstance(node, cst.Lambda):
        return {}
    info = traced.info(node)
    if info is not None and info.chain:
        return {}  # traced because of a caller in another module: its calls are not all here
    sites = traced.call_sites.get(id(node), [])
    applications = traced.applications.get(id(node), [])
    wrapped = sum(1 for use in applications if use.sites is not None)
    name = node.name.value
    resolved = sum(1 for site in sites if called_name(site.call) == name)
    if not sites or not uses.only_called(name, wrapped, resolved) or \
            any(use.all_params or use.traced_positions is not None for use in applications):
        return {}
    described, passed, literal_everywhere = [], set(), None
    for site in sites:
        bound = site.bind()
        arguments: dict[str, str | None] = {}
        for name, given in bound.items():
            passed.add(name)
            if given.how is Passing.RECEIVER:
                continue
            text = _text(given.values[0]) if given.how is Passing.ARGUMENT and len(given.values) == 1 else None
            if text is not None:
                try:
                    ast.literal_eval(text)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    text = None
            arguments[name] = text
        literal_names = {name for name, text in arguments.items() if text is not None}
        literal_everywhere = literal_names if literal_everywhere is None else literal_everywhere & literal_names
        line = positions[site.call].start.line
        described.append((f"{file_name}:{line}" if file_name else f"line {line}", arguments))
    defaults = {p["name"] for p in _params(node) if p["default"] is not None}
    first = dict(described[0][1])
    return {
        "sites": [{"where": where, "args": args} for where, args in described
                  if all(text is not None for text in args.values())],
        "unpassed": sorted(defaults - passed),
        "literals": {name: first[name] for name in sorted(literal_everywhere or ())},
    }


#: Callers tried, at most, to reach a function whose own inputs do not confirm its finding, and
#: how many calls up from it they may be.
VIA_CALLERS = 3
VIA_DEPTH = 3


def _traced_callers(node, traced, by_node: dict[int, dict]) -> list[dict]:
    """The traced functions that call `node` (a helper traced because they call it), nearest
    first, up the chain of calls: running one of them with its inputs calls the helper with the
    arguments the code really builds (`first_positive(y)`, `scale_updates(grads, lr=lr,
    momentum=0.9)`, `NFWPotential(m, r_s)` running its `__init__`)."""
    info = traced.info(node)
    if info is None or info.depth == 0:
        return []
    found: list[dict] = []
    seen = {id(node)}
    level = [node]
    for _ in range(VIA_DEPTH):
        following = []
        for callee in level:
            for site in traced.call_sites.get(id(callee), []):
                caller = traced.function_of_call(site.call)
                if caller is None or id(caller) in seen:
                    continue
                seen.add(id(caller))
                record, caller_info = by_node.get(id(caller)), traced.info(caller)
                if record is None or caller_info is None or not caller_info.modes:
                    continue
                following.append(caller)
                if not record["nested"] and len(found) < VIA_CALLERS:
                    found.append({k: v for k, v in record.items() if k not in ("outer", "via")})
        level = following
    return found


def _describe(node, qualname: str, class_name: str | None, traced, positions) -> dict:
    span = positions[node]
    # What runs when the function is called: after its parameters (defaults and annotations run at
    # definition time) to its end. Not the body's own range: libcst starts it at the first
    # statement's `def`, after that statement's decorators.
    if isinstance(node, cst.FunctionDef):
        header = positions[node.returns] if node.returns is not None else positions[node.params]
        body_start = header.end
    else:
        body_start = positions[node.body].start
    info = traced.info(node)
    decorators = [] if isinstance(node, cst.Lambda) else [_text(d.decorator) for d in node.decorators]
    kind = "function"
    if class_name is not None:
        last = [d.rsplit(".", 1)[-1] for d in decorators]
        kind = ("staticmethod" if "staticmethod" in last else "classmethod" if "classmethod" in last
                else "property" if "property" in last else "method")
    def_line = positions[node.name].start.line if isinstance(node, cst.FunctionDef) else span.start.line
    first_line = span.start.line  # libcst's range of a def starts at `def`; Python's at the first decorator
    if isinstance(node, cst.FunctionDef) and node.decorators:
        first_line = min(first_line, positions[node.decorators[0]].start.line)
    return {
        "qualname": qualname,
        "name": qualname.rsplit(".", 1)[-1],
        "kind": kind,
        "class": class_name,
        "nested": "<locals>" in qualname or qualname.endswith("<lambda>"),
        "first_line": first_line,
        "def_line": def_line,
        "end_line": span.end.line,
        "body": [body_start.line, body_start.column + 1, span.end.line, span.end.column + 1],
        "params": _params(node),
        "decorators": decorators,
        "modes": sorted(info.modes) if info else [],
        "transforms": list(dict.fromkeys(info.transforms)) if info else [],
        "traced_params": sorted(info.traced_params) if info else [],
    }


def _params(node: cst.FunctionDef | cst.Lambda) -> list[dict]:
    p = node.params
    out = []
    for kind, params in (("positional_only", p.posonly_params), ("positional", p.params),
                         ("keyword_only", p.kwonly_params)):
        for param in params:
            out.append({
                "name": param.name.value, "kind": kind,
                "default": _text(param.default) if param.default is not None else None,
                "annotation": _text(param.annotation.annotation) if param.annotation is not None else None,
            })
    for kind, star in (("var_positional", p.star_arg), ("var_keyword", p.star_kwarg)):
        if isinstance(star, cst.Param):
            out.append({"name": star.name.value, "kind": kind, "default": None, "annotation": None})
    return out


def _text(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _innermost(functions: list[dict], finding: Finding) -> dict | None:
    """The innermost def or lambda whose body holds the finding (decorators and defaults are outside)."""
    here = (finding.start.line, finding.start.column)
    best = None
    for function in functions:
        start_line, start_col, end_line, end_col = function["body"]
        if (start_line, start_col) <= here < (end_line, end_col):
            if best is None or (start_line, start_col) >= tuple(best["body"][:2]):
                best = function
    return best
