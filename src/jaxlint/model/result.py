"""What checking one file gives a front end."""
from __future__ import annotations

from dataclasses import dataclass, field

from .finding import Finding


@dataclass
class FileResult:
    path: str
    #: the findings of the file as it was read (a front end that writes the fixed text swaps in
    #: `fixed_findings` once, and only once, the write succeeded)
    findings: list[Finding] = field(default_factory=list)
    #: the fixed text, when fixing changed something
    fixed_text: str | None = None
    #: the findings of `fixed_text`
    fixed_findings: list[Finding] | None = None
    original_text: str | None = None
    #: the bytes that were checked, kept with a fixed text: a writer encodes the fix like them and
    #: can tell whether the file changed since
    original_bytes: bytes | None = None
    fixed_count: int = 0
    #: why fixes were not written, if they were not
    fix_refused: str | None = None
    #: a bug in jaxlint met while checking this file
    internal_error: str | None = None
    #: what of this file (valid Python) was not analysed, and why: a note, not a finding
    not_analysed: str | None = None
    #: in a project, the context its findings were stored in the result cache under (what they
    #: depend on beyond its text, `ProjectSession.context_key`); None when they were not stored
    cache_context: str | None = None
