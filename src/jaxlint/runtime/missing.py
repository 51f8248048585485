"""The one line that says a finding needs a package that is not installed, and its count.

The worker writes it into the evidence of each finding whose function needs the package; the
summary counts the findings per package from the evidence ("install `optax` to confirm these 2
findings"), so the two must agree: both live here.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

_INSTALL = re.compile(r"install `([^`]+)` to confirm this finding")


def needs_package(package: str, name: str, error: str) -> str:
    """Evidence for a finding whose function reads `name`, which `import package` failed to bind."""
    via = "" if name == package else f"`{name}`, from "
    return f"needs {via}`{package}`, which is not installed ({error}): install `{package}` to confirm this finding"


def install_lines(evidence: Iterable[str]) -> list[str]:
    """One line per missing package, with the number of findings waiting for it."""
    counts = Counter(match.group(1) for text in evidence for match in [_INSTALL.search(text)] if match)
    return [f"install `{package}` to confirm {'this finding' if n == 1 else f'these {n} findings'}"
            for package, n in sorted(counts.items())]
