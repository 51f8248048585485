"""Named values a domain keeps beside its own (`READ`, `UNTRACKED`): compared by identity, shown by name."""
from __future__ import annotations


class Marker:
    """A value of a domain that stands for a case rather than holding data."""

    __slots__ = ("label",)

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return self.label
