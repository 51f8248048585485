"""`jaxlint check --stdin-filename PATH -`: one buffer read from stdin, checked as if it were the
file PATH (an editor or a formatter pipes the text it holds, saved or not).

PATH decides everything a file's name decides: the configuration file (found from PATH's
directory), `per-file-ignores`, the exclusions (an excluded PATH is not checked), a notebook by its
`.ipynb` extension, and the project PATH is a module of (its other modules are read from disk).
Nothing is written: with `--fix` the fixed buffer goes to stdout, with `--diff` its patch.
"""
from __future__ import annotations

import sys
from typing import BinaryIO

from ..api import encode_like, size_limit
from ..reading import describe_limit
from .config import ConfigError
from .patch import unified_patch
from .runner import RunOptions, RunOutcome, check_data, project_plan, project_session, resolve_settings

#: the name findings carry when no --stdin-filename is given (`jaxlint check -`)
UNNAMED = "-"


def read_stdin(path: str, stream: BinaryIO | None = None) -> bytes | str:
    """The bytes of the buffer, or why it is not checked (larger than a file of its kind may be)."""
    stream = stream if stream is not None else sys.stdin.buffer
    limit = size_limit(path)
    data = stream.read(limit + 1)
    if len(data) > limit:
        return f"cannot read: larger than {describe_limit(limit)}"
    return data


def run_stdin(options: RunOptions, path: str, data: bytes) -> RunOutcome:
    """Check `data` as the file `path`; with `options.fix`, `fixed_output` is the buffer to print
    (fixed, or as it came when nothing changed) and the findings are those left after the fixes."""
    outcome = RunOutcome()
    named = path != UNNAMED
    try:
        settings = resolve_settings(options, config_start=path if named else ".")
    except ConfigError as exc:
        outcome.problems.append(f"error: {exc}")
        outcome.config_error = outcome.fatal = True
        return outcome
    if options.fix:
        outcome.fixed_output = data
    from .discovery import is_excluded

    if named and is_excluded(path, settings.exclude, settings.root):
        return outcome
    session = None
    if named:
        plan = project_plan(settings, [path], [path])
        session = project_session(plan, settings, (path,))
        outcome.session = session
    fixing = options.fix or options.diff
    result = check_data(path, data, settings, fixing, session)
    outcome.results = [result]
    if result.fix_refused and fixing:
        outcome.problems.append(f"{path}: {result.fix_refused}")
    if result.fixed_text is not None:
        try:
            fixed = encode_like(data, result.fixed_text, path)
        except (UnicodeEncodeError, LookupError, SyntaxError) as exc:
            outcome.problems.append(f"{path}: fixes not applied: cannot encode the fixed text: {exc}")
            outcome.fatal = True
        else:
            outcome.fixed = result.fixed_count
            if options.diff:
                outcome.diffs.append(unified_patch(path, data, fixed))
            else:
                outcome.fixed_output = fixed
                result.findings = result.fixed_findings or []
    if result.not_analysed:
        outcome.problems.append(f"{path}: not analysed: {result.not_analysed}")
    if result.internal_error:
        outcome.problems.append(f"{path}: internal error: {result.internal_error}")
        outcome.fatal = True
    return outcome
