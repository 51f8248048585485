"""An f-string as the `str.format` template that shows the same text (`jax.debug.print` formats its
first argument with `str.format`): literal braces doubled, each field's format spec kept."""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst


@dataclass(frozen=True)
class FormatField:
    """One replacement field of an f-string: its expression and its format spec (`:.3f`, or "")."""

    expression: cst.BaseExpression
    spec: str


def format_escaped(text: str) -> str:
    """Text as a `str.format` template shows it: its braces doubled."""
    return text.replace("{", "{{").replace("}", "}}")


def format_pieces(value: cst.FormattedString) -> list[str | FormatField] | None:
    """The f-string as template text (escaped for `str.format`) and fields, in order; None where the
    rewrite would not be exact: a `!r`/`!s`/`!a` conversion, a self-documenting `=`, a format spec
    with a field of its own, or a backslash escape (kept raw in the tree)."""
    pieces: list[str | FormatField] = []
    for part in value.parts:
        if isinstance(part, cst.FormattedStringText):
            if "\\" in part.value:
                return None
            pieces.append(format_escaped(part.value.replace("{{", "{").replace("}}", "}")))
            continue
        if part.conversion is not None or part.equal is not None:
            return None
        spec = ""
        if part.format_spec:
            if not all(isinstance(p, cst.FormattedStringText) for p in part.format_spec):
                return None
            spec = ":" + "".join(p.value for p in part.format_spec)
        pieces.append(FormatField(part.expression, spec))
    return pieces
