"""What a rule reports (`Report`), and the `Reporter` that collects a file's reports, adding to a
finding the chain of calls from another module that traces its code."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import libcst as cst

from ..analysis import FileAnalysis
from ..semantic.walk_state import WalkState
from .node_fix import NodeFix

if TYPE_CHECKING:
    from ..jaxmodel.external import TraceStep


@dataclass(frozen=True)
class Report:
    """One finding as a rule reports it, before positions are computed."""

    #: the rule that reported (its code and catalogue entry name the finding)
    rule: Any
    node: cst.CSTNode
    message: str
    fix: NodeFix | None = None
    #: (line, note) for the other lines of the file the message names (a reused key's first use)
    related: tuple[tuple[int, str], ...] = ()
    #: the calls from other modules that trace the code reported, outermost first
    chain: tuple["TraceStep", ...] = ()
    #: a short first line when the message's own first part is long (model/message.py)
    headline: str | None = None


class RuleContext(NamedTuple):
    """What a rule is made with: where the walk is, the file's facts, and where it reports."""

    walk: WalkState
    analysis: FileAnalysis
    reporter: "Reporter"


class Reporter:
    """The reports of one file's check, in the order the rules made them."""

    def __init__(self, walk: WalkState, analysis: FileAnalysis) -> None:
        self.walk = walk
        self.analysis = analysis
        self.reports: list[Report] = []

    def add(self, rule: Any, node: cst.CSTNode, message: str, fix: NodeFix | None,
            related: tuple[tuple[int, str], ...] = (), headline: str | None = None) -> None:
        chain = self._foreign_trace() if rule.explains_trace and self.analysis.traced.project else ()
        if chain:
            message = f"{message}; traced because {_because(chain)}"
        self.reports.append(Report(rule, node, message, fix, related, chain, headline))

    def _foreign_trace(self) -> tuple["TraceStep", ...]:
        """The chain of calls from another module that traces the function around the walk's
        position, when that is why it is traced (not a transform or a caller in this module)."""
        traced = self.analysis.traced
        for function in self.walk.enclosing_functions():
            info = traced.info(function)
            if info is not None:
                return info.chain
        return ()


def _because(chain: tuple["TraceStep", ...]) -> str:
    """`train_step` (train.py:6) calls it under `jax.jit`; through a longer chain, the direct
    caller and where the trace starts."""
    last = chain[-1]
    if len(chain) == 1:
        return last.describe()
    first = chain[0]
    origin = f"`{first.caller}` ({first.where})" if first.caller else first.where
    return f"`{last.caller}` ({last.where}) calls it, traced by `{first.transform}` from {origin}"
