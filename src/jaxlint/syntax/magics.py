"""IPython magics as a notebook's cells are analysed: the comment that marks the line a magic stood on.

The notebook reader (`engine/notebook.py`) gives the analysis Python on every line of a cell. A line
that runs no Python (`%matplotlib inline`, `!pip install …`) becomes a placeholder `pass`; a line
magic that runs a Python statement (`%time y = f(x)`) becomes that statement, at the same line. Both
end in a comment naming the line of the cell they stand for, and for a magic the magic itself:

    y = f(x)  # jaxlint-masked:3 %time timed
    pass  # jaxlint-masked:0 %%time timed

`timed` says that the magic prints the wall-clock time of one run (or of a few runs) of what it
executes: with JAX's asynchronous dispatch that figure is the time to queue the work unless the
statement waits for it. `%timeit`, which repeats its statement until the dispatch queue is full,
is not `timed` unless it is told a small loop count (see `engine/notebook.py`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

#: `%timeit -n N` (or `timeit.timeit(..., number=N)`) with N at most this reports the time to
#: dispatch the work, not to do it: the calls of so few runs all fit in JAX's dispatch queue
#: (measured in `engine/magic_lines.py`).
FEW_LOOPS = 10
#: The word every marker comment starts with; a cell whose text already holds `MASK_MARKER:` gets
#: `jaxlint-masked1`, and so on (`engine.notebook.marker_for`).
MASK_MARKER = "jaxlint-masked"
_MAGIC_COMMENT = re.compile(r"# jaxlint-masked\d*:\d+ (%%?[\w.]+)( timed)?\s*$")


@dataclass(frozen=True)
class Magic:
    """The magic a line of a notebook cell was."""

    #: as written, with its `%` or `%%`: `%time`, `%%timeit`
    name: str
    #: it prints the wall-clock time of a run of its statement (or cell), taken once it returns
    timed: bool
    #: the marker comment: a node of the line that stands for the magic, and of nothing else
    comment: cst.Comment = field(compare=False, repr=False, default=None)

    @property
    def whole_cell(self) -> bool:
        return self.name.startswith("%%")


def magic_comment(marker: str, number: int, name: str | None = None, timed: bool = False) -> str:
    """The comment that ends the line standing for line `number` of a cell (and for `name`, a magic)."""
    text = f"# {marker}:{number}"
    if name is not None:
        text += f" {name}" + (" timed" if timed else "")
    return text


def magic_of(statement: cst.CSTNode) -> Magic | None:
    """The magic whose line `statement` stands on: a statement of one line (`y = f(x)`, `pass`, or a
    compound statement with its body on the same line) ending in a magic's marker comment; None for
    any other statement."""
    kind = type(statement)
    if kind is cst.SimpleStatementLine:
        whitespace = statement.trailing_whitespace
    else:
        body = getattr(statement, "body", None)
        if type(body) is not cst.SimpleStatementSuite or kind is cst.SimpleStatementSuite:
            return None
        whitespace = body.trailing_whitespace
    comment = whitespace.comment
    if comment is None or MASK_MARKER not in comment.value:
        return None
    match = _MAGIC_COMMENT.search(comment.value)
    return Magic(match.group(1), match.group(2) is not None, comment) if match else None


def starts_cell(statement: cst.CSTNode, boundary: str) -> bool:
    """Whether a statement of a notebook's joined cells is the first of a cell after another: the
    line `boundary` between two cells stands among the lines before it."""
    for line in getattr(statement, "leading_lines", ()):
        if line.comment is not None and line.comment.value == boundary:
            return True
    return False
