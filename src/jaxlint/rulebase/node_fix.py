"""A fix as a rule states it: replace these nodes with this text (positions come later, only for
the findings reported)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import libcst as cst

from ..model.finding import Applicability


@dataclass(frozen=True)
class Replace:
    """Replace the source of `node` with `text`."""

    node: cst.CSTNode
    text: str


@dataclass(frozen=True)
class NodeFix:
    title: str
    replacements: Sequence[Replace]
    applicability: Applicability = Applicability.SAFE
