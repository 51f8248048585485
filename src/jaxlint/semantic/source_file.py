"""One file under analysis: what every fact about it starts from, and the facts computed about it."""
from __future__ import annotations

import bisect
from typing import Any, Callable, TypeVar

import libcst as cst

from ..model.settings import Settings
from .names import NameResolver
from .scopes import Scope, file_recorder

#: a per-file fact (`SourceFile.fact`)
T = TypeVar("T")

#: The line between two code cells of a notebook checked as one module: a comment, so it changes
#: nothing, and a line to split the fixed text on.
CELL_BOUNDARY = "# jaxlint: cell boundary"


class SourceFile:
    """A parsed file with its settings, its module scope and name resolver, and a memo of the facts
    asked about it: each fact is built once per file (`kind(source_file)`) and shared by every
    rule and fact that asks. Knows nothing of where a walk is (that is `WalkState`)."""

    @staticmethod
    def line_label(line: int) -> str:
        """How a message names another line of the file (a notebook replaces this per file)."""
        return f"line {line}"

    @staticmethod
    def place(line: int) -> tuple[int | None, int]:
        """A line of the text as (notebook cell, line in it): the cell is None in a plain file (a
        notebook replaces this per file)."""
        return None, line

    #: builds the file's semantic model, whose walk records the bindings of its scopes: set by
    #: `semantic.model`, which is built on this module
    record_bindings: Callable[["SourceFile"], object]

    def __init__(self, path: str, source: str, module: cst.Module, settings: Settings,
                 project: object | None = None, package: str | None = None) -> None:
        self.path = path
        #: the project the file is analysed in (a `jaxmodel.external.ProjectView`), or None when it
        #: is analysed alone
        self.project = project
        self.source = source
        self.module = module
        self.settings = settings
        self.names = NameResolver()
        self.module_scope = Scope(module, None)
        #: the package relative imports start from (`pkg.sub` for `pkg/sub/mod.py`); None: unknown,
        #: and names a relative import binds are the module's own
        self.module_scope.package = package
        # the scopes' bindings are recorded by the semantic model's walk, run when first asked
        self.module_scope.recorder = file_recorder(self, SourceFile.record_bindings)
        self._facts: dict[type, Any] = {}
        self._cell_starts: list[int] | None = None
        self._displayed: frozenset[int] | None = None

    def cell_position(self, line: int) -> int:
        """Which code cell of a notebook (joined as one module) a line is in, counted from 0 over
        the code cells; 0 throughout a plain file."""
        if self._cell_starts is None:
            self._cell_starts = [number + 1 for number, text in enumerate(self.source.splitlines(), start=1)
                                 if text == CELL_BOUNDARY] if CELL_BOUNDARY in self.source else []
        return bisect.bisect_right(self._cell_starts, line)

    def displayed(self, statement: cst.BaseSmallStatement) -> bool:
        """Whether a notebook shows the value of this expression statement: the last statement of a
        cell, at its top level, not ended by `;` (IPython displays it, so it is not thrown away). The
        cells are joined with `CELL_BOUNDARY` lines between them; a cell checked on its own has none."""
        if type(statement) is not cst.Expr or (CELL_BOUNDARY not in self.source and not self.path.endswith(".ipynb")):
            return False
        if self._displayed is None:
            shown: set[int] = set()
            body = self.module.body
            for index, line in enumerate(body):
                last_of_cell = index + 1 == len(body) or any(
                    empty.comment is not None and empty.comment.value == CELL_BOUNDARY
                    for empty in body[index + 1].leading_lines)
                if last_of_cell and type(line) is cst.SimpleStatementLine and type(line.body[-1]) is cst.Expr \
                        and not isinstance(line.body[-1].semicolon, cst.Semicolon):
                    shown.add(id(line.body[-1]))
            self._displayed = frozenset(shown)
        return id(statement) in self._displayed

    def fact(self, kind: type[T], build: Callable[[], T] | None = None) -> T:
        """The per-file fact `kind` (`kind(self)` unless `build` is given), computed on first use."""
        found = self._facts.get(kind)
        if found is None:
            found = self._facts[kind] = build() if build is not None else kind(self)
        return found

    def release(self) -> None:
        """Drop the facts once the file's findings are made.

        Facts point back at the file and at each other, so without this the tree they hold lives
        until the cycle collector finds it, and that collector's pass over every node of the tree
        costs a sizeable share of a whole check. Emptying the facts breaks the cycles: reference
        counting frees the tree at once."""
        facts = list(self._facts.values())
        self._facts.clear()
        # a recorded binding points back at its scope, whose record holds it: emptied here
        records = self.module_scope.records
        for bindings, _, _ in records.values():
            bindings.clear()
        records.clear()
        for fact in facts:
            state = getattr(fact, "__dict__", None)
            if state is not None:
                state.clear()
