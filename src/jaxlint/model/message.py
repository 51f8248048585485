"""The parts of a finding's message, for reports that show them on separate lines.

Every rule writes its message in one grammar:

    what is wrong[: why it bites][; what to write instead][; traced because how]

`what is wrong` is the headline (the first line of the `full` format, the whole of the `concise`
one); the explanation and the advice follow on `note:` and `help:` lines. Backticks quote code and
brackets hold asides, so a `:` or `;` inside either never separates parts. A rule whose headline
would be long (it names the place of a first use, a long API path) declares a short one of its own
(`Finding.headline`); the message's own first part then becomes the first note, so nothing of the
message is lost.
"""
from __future__ import annotations

from dataclasses import dataclass

#: the suffix the reporter adds when a caller in another module is why the code is traced
TRACED_BECAUSE = "; traced because "
#: the longest headline the grammar's own cuts aim for
HEADLINE_LENGTH = 100


@dataclass(frozen=True)
class MessageParts:
    """A message cut by its grammar, and the headline that reports show first."""

    what: str
    why: str
    instead: str
    #: the chain of calls from another module that traces the code ("" when there is none)
    traced: str
    headline: str

    @property
    def reasons(self) -> tuple[str, ...]:
        """The whole `what` when the headline is shorter, and why it bites."""
        return tuple(([self.what] if self.headline != self.what else []) + ([self.why] if self.why else []))

    @property
    def notes(self) -> tuple[str, ...]:
        """What explains the headline, a line each: the reasons, then why the code is traced."""
        return self.reasons + ((f"traced because {self.traced}",) if self.traced else ())

    @property
    def help(self) -> str:
        return self.instead

    @property
    def message(self) -> str:
        """The message the parts were cut from."""
        text = self.what + (f": {self.why}" if self.why else "") + (f"; {self.instead}" if self.instead else "")
        return text + (f"{TRACED_BECAUSE}{self.traced}" if self.traced else "")


def message_parts(message: str, headline: str | None = None) -> MessageParts:
    """Split `message` by the grammar above; `headline`: the short one a rule declared, if any."""
    body, _, traced = message.partition(TRACED_BECAUSE)
    colon = _top_level(body, ": ")
    semicolon = _top_level(body, "; ")
    what_end = min([i for i in (colon, semicolon) if i is not None], default=None)
    if what_end is None:
        what, why, instead = body, "", ""
    elif what_end == colon:
        what, rest = body[:colon], body[colon + 2:]
        advice = _top_level(rest, "; ")
        why, instead = (rest, "") if advice is None else (rest[:advice], rest[advice + 2:])
    else:
        what, why, instead = body[:semicolon], "", body[semicolon + 2:]
    return MessageParts(what, why, instead, traced, headline or _shortened(what))


def _shortened(what: str) -> str:
    """`what` as a headline of at most HEADLINE_LENGTH characters where its grammar allows: first
    without its bracketed asides, then up to the last `, ` that fits (an aside or a second clause
    follows a comma), else the last ` and ` that fits. The whole `what` is then the first note."""
    if len(what) <= HEADLINE_LENGTH:
        return what
    plain = " ".join(_without_asides(what).split())
    if len(plain) <= HEADLINE_LENGTH:
        return plain
    for separator in (", ", " and "):
        cuts = [i for i in _all_top_level(plain, separator) if i <= HEADLINE_LENGTH]
        if cuts:
            return plain[:cuts[-1]]
    return plain


def _without_asides(text: str) -> str:
    out = []
    depth = 0
    quoted = False
    for char in text:
        if char == "`" and depth == 0:
            quoted = not quoted
        if not quoted and char == "(":
            depth += 1
        if depth == 0:
            out.append(char)
        if not quoted and char == ")" and depth:
            depth -= 1
    return "".join(out).replace(" ,", ",")


def _all_top_level(text: str, separator: str) -> list[int]:
    found = []
    start = 0
    while True:
        index = _top_level(text[start:], separator)
        if index is None:
            return found
        found.append(start + index)
        start += index + len(separator)


def _top_level(text: str, separator: str) -> int | None:
    """Where `separator` first occurs outside backticks and brackets; None when it does not."""
    depth = 0
    quoted = False
    for index, char in enumerate(text):
        if char == "`":
            quoted = not quoted
        elif quoted:
            continue
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0 and text.startswith(separator, index):
            return index
    return None
