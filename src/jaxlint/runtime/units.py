"""Running a module's top-level code one statement at a time, inside the worker process.

Python stops a module at its first failing statement, and then nothing of the module exists. For
runtime mode that would make one bad line (an `import` of a package that is not installed, a data
file that is not there, a failing notebook cell) cost every finding of the module. So the worker
runs the module's top-level statements one by one in the module's namespace, the way the import
would run them (same file name and line numbers, the module's `__future__` flags), and a statement
that raises an `Exception` is recorded and skipped: the statements after it still run.

What a skipped statement would have bound (`import optax`, `data = load()`, `class Model(nn.Module)`)
is missing from the namespace; `Unbound` records why. A finding whose function reads such a name
(itself or through the module's functions it calls) is explained by that failure, and a missing
package becomes "install `optax` to confirm this finding".

Some failures still end the import, as they ended it before: `SystemExit` and the other
`BaseException`s (the module asked to stop), and `MemoryError` (the worker is at its memory limit:
what runs after it would not be trustworthy).
"""
from __future__ import annotations

import __future__
import ast
import importlib.util
import types
from dataclasses import dataclass, field

#: Exceptions that end the import instead of skipping the statement.
FATAL = (MemoryError,)


@dataclass
class Failure:
    """A top-level statement that raised and was skipped."""

    line: int  # the statement's first line
    end_line: int  # and its last
    error: BaseException
    names: tuple[str, ...]  # what it would have bound and left unbound
    package: str | None = None  # the top-level package whose import failed, if that is why
    cause: "Failure | None" = None  # the earlier failure it follows from (a name it needed was missing)

    @property
    def root(self) -> "Failure":
        failure = self
        while failure.cause is not None:
            failure = failure.cause
        return failure


@dataclass
class UnitRun:
    failures: list[Failure] = field(default_factory=list)
    fatal: BaseException | None = None  # what ended the import early (None: every statement was run)
    #: name -> the failure that left it unbound
    unbound: dict[str, Failure] = field(default_factory=dict)


def run_units(namespace: dict, source: str, path: str) -> UnitRun:
    """Run `source` in `namespace` statement by statement (see the module docstring). A syntax
    error is fatal, as it is for an import."""
    result = UnitRun()
    try:
        tree = ast.parse(source, path)
    except (SyntaxError, ValueError) as exc:
        result.fatal = exc
        return result
    flags = future_flags(tree)
    for statement in tree.body:
        try:
            code = compile(ast.Module(body=[statement], type_ignores=[]), path, "exec", flags=flags, dont_inherit=True)
            exec(code, namespace)  # noqa: S102 - the user's module, in the worker
        except FATAL as exc:
            result.fatal = exc
            return result
        except Exception as exc:  # noqa: BLE001 - skipped, and recorded: the next statement still runs
            _record(result, statement, exc, namespace)
        except BaseException as exc:  # noqa: B036 - sys.exit and the like end the import, as in Python
            result.fatal = exc
            return result
    return result


def _record(result: UnitRun, statement: ast.stmt, exc: Exception, namespace: dict) -> None:
    names = tuple(name for name in bound_names(statement) if name not in namespace)
    package = _missing_package(exc) if isinstance(statement, (ast.Import, ast.ImportFrom)) else None
    cause = None
    if isinstance(exc, NameError) and getattr(exc, "name", None) in result.unbound:
        cause = result.unbound[exc.name]  # `class Model(nn.Module)` after `import flax.linen as nn` failed
    failure = Failure(statement.lineno, statement.end_lineno or statement.lineno, exc, names, package, cause)
    result.failures.append(failure)
    for name in names:
        result.unbound.setdefault(name, failure)


def _missing_package(exc: Exception) -> str | None:
    """The top-level package an import failed for want of, when it is not installed at all (not
    `from jax import api`, a name a package no longer has, nor a missing submodule of one)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        found = None
    return top if found is None else None


def bound_names(statement: ast.stmt) -> list[str]:
    """The names a top-level statement binds in the module (not those of the functions, classes
    and comprehensions it defines, which have scopes of their own)."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node.name)
            for child in (*node.decorator_list, *getattr(node, "bases", ()), *getattr(node, "keywords", ())):
                visit(child)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    found.append(alias.asname or alias.name.split(".")[0])
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.append(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.append(node.name)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(statement)
    return list(dict.fromkeys(found))


def future_flags(tree: ast.Module) -> int:
    """The compiler flags of the module's `from __future__ import` statements, for compiling its
    statements one by one as the module would."""
    flags = 0
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            for alias in statement.names:
                feature = getattr(__future__, alias.name, None)
                flags |= getattr(feature, "compiler_flag", 0)
    return flags


# -- which findings a failure explains --------------------------------------------------------
def global_reads(code: types.CodeType, module_code: types.CodeType | None) -> set[str]:
    """The global names `code` may read, and those read by the module-level functions and classes
    it names, transitively (from the module's compiled code, so a def that never ran counts too).
    Attribute names count as well: a superset, used only to explain a verdict that is inconclusive."""
    top = {}
    if module_code is not None:
        for const in module_code.co_consts:
            if isinstance(const, types.CodeType):
                top.setdefault(const.co_name, []).append(const)
    names: set[str] = set()
    pending = [code]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for name in current.co_names:
            if name not in names:
                names.add(name)
                pending.extend(top.get(name, ()))
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return names
