"""The values every part of jaxlint passes around: positions, edits, fixes and findings."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from .message import MessageParts, message_parts


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, Enum):
    """How far a fix can be trusted: `safe` ones are applied by --fix, the others only shown."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True, order=True)
class Position:
    """A place in a source text: line 1-based, column 1-based (in characters)."""

    line: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between `start` (inclusive) and `end` (exclusive) with `content`."""

    start: Position
    end: Position
    content: str
    #: in a notebook, the cell the positions are in: one fix can change several cells (renaming a
    #: name wherever it is used); None in a plain file
    cell: int | None = None

    def to_json(self) -> dict:
        data = {"line": self.start.line, "column": self.start.column, "end_line": self.end.line,
                "end_column": self.end.column, "content": self.content}
        if self.cell is not None:
            data["cell"] = self.cell
        return data


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE

    def to_json(self) -> dict:
        return {
            "title": self.title,
            "applicability": self.applicability.value,
            "edits": [e.to_json() for e in self.edits],
        }


@dataclass(frozen=True)
class TraceLocation:
    """A place that explains a finding made elsewhere: the call, in another module, that makes the
    reported function traced (`train.py:6`: `train_step` calls it under `jax.jit`)."""

    path: str
    line: int
    message: str
    #: in a notebook, the cell (counted from 0, as `Finding.cell`) that `line` is in
    cell: int | None = None

    def to_json(self) -> dict:
        data = {"path": self.path, "line": self.line, "message": self.message}
        if self.cell is not None:
            data["cell"] = self.cell
        return data


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: Severity
    message: str
    path: str
    start: Position
    end: Position
    fix: Fix | None = None
    cell: int | None = None
    runtime: dict | None = field(default=None, compare=False)
    #: why the code is traced when a caller in another module traces it, outermost call first
    trace: tuple[TraceLocation, ...] = ()
    #: the short first line a rule declared when its message's own first part is long; None: the
    #: message's first part is the headline (model/message.py)
    headline: str | None = field(default=None, compare=False)

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.cell if self.cell is not None else -1, self.start, self.code)

    def with_path(self, path: str) -> "Finding":
        return replace(self, path=path)

    @property
    def parts(self) -> MessageParts:
        """The message as a headline, notes and help (model/message.py)."""
        return message_parts(self.message, self.headline)

    def to_json(self) -> dict:
        data = {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "headline": self.parts.headline,
            "path": self.path,
            "line": self.start.line,
            "column": self.start.column,
            "end_line": self.end.line,
            "end_column": self.end.column,
            "fix": self.fix.to_json() if self.fix else None,
            "cell": self.cell,
        }
        if self.runtime is not None:
            data["runtime"] = self.runtime
        if self.trace:
            data["trace"] = [step.to_json() for step in self.trace]
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Finding":
        fix = None
        if data.get("fix"):
            f = data["fix"]
            fix = Fix(
                title=f["title"],
                applicability=Applicability(f["applicability"]),
                edits=tuple(
                    Edit(Position(e["line"], e["column"]), Position(e["end_line"], e["end_column"]), e["content"],
                         e.get("cell"))
                    for e in f["edits"]
                ),
            )
        return cls(
            code=data["code"],
            name=data["name"],
            severity=Severity(data["severity"]),
            message=data["message"],
            path=data["path"],
            start=Position(data["line"], data["column"]),
            end=Position(data["end_line"], data["end_column"]),
            fix=fix,
            cell=data.get("cell"),
            trace=tuple(TraceLocation(t["path"], t["line"], t["message"], t.get("cell"))
                        for t in data.get("trace", ())),
            headline=data.get("headline"),
        )
