"""The base every rule derives from: a rule names its code and the nodes it looks at."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Container

import libcst as cst

from .report import RuleContext
from .node_fix import NodeFix

if TYPE_CHECKING:
    from ..catalogue.rule_docs import RuleDoc


class Rule:
    """One rule: `visit_<Node>`/`leave_<Node>` methods are called during the shared walk of a file.

    A rule reads where the walk is from `self.walk` (scope, parent, enclosing function and loop,
    names as written there) and every fact about the file from `self.analysis` (`FileAnalysis`),
    and reports with `self.report`. Its name, severity and documentation come from its catalogue entry.
    """

    code: ClassVar[str]
    doc: ClassVar["RuleDoc"]
    #: whether some of its findings carry a fix (shown by `jaxlint rules`)
    fixable: ClassVar[bool] = False
    #: its findings exist because the code is traced: one inside a function that a caller in
    #: another module traces says which call does
    explains_trace: ClassVar[bool] = False

    def __init__(self, context: RuleContext) -> None:
        self.walk = context.walk
        self.analysis = context.analysis
        self._reporter = context.reporter

    def report(self, node: cst.CSTNode, message: str, fix: NodeFix | None = None,
               related: tuple[tuple[int, str], ...] = (), headline: str | None = None) -> None:
        """`message`: what is wrong, why it bites, what to write instead (the grammar of
        model/message.py). `related`: other lines of this file the message names, each with a note
        (the first use of a reused key), which front ends show beside the finding. `headline`: a
        short first line, for a message whose own first part is long (it names another place)."""
        self._reporter.add(self, node, message, fix, related, headline)

    def names_wanted(self) -> Container[str] | None:
        """The spellings of the Names `visit_Name` does anything with (None: every Name), asked once
        before the rules' replay of the walk, which then calls `visit_Name` on those only: a third
        of a file's nodes are Names, and most rules that visit them look for a few spellings."""
        return None

    def finish(self) -> None:
        """Called once after the walk; rules that decide at the end of the file report here."""
