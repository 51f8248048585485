"""The `jaxlint` command: `check`, `rule CODE`, `rules`.

Exit statuses (docs/cli.md): 0 no findings, 1 findings, 2 usage, configuration or internal error,
and 128 + N when signal N stopped the run (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP, 141
when the reader of the output went away). Whatever goes wrong ends in one line on stderr and one
of these, never in a traceback: the group's `invoke` is the guard.
"""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
from typing import Iterator, Sequence

import click

from .. import __version__
from .cli_help import CHECK_OPTION_GROUPS, GroupedOptionsCommand
from .stopping import RunStopped, raise_if_stopped, signals_stop_the_run

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
#: a run stopped by signal N exits 128 + N, the status a shell gives a process that N killed
EXIT_SIGNAL_BASE = 128


class _GuardedGroup(click.Group):
    """Turns every way a command can fail into one line on stderr and a documented exit status."""

    def invoke(self, ctx: click.Context):
        _tolerate_undecodable_names()
        try:
            with signals_stop_the_run():
                return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except RunStopped as stop:
            if stop.signum == signal.SIGINT:
                _stop("interrupted", EXIT_SIGNAL_BASE + signal.SIGINT)
            _stop(f"stopped by {signal.Signals(stop.signum).name}", EXIT_SIGNAL_BASE + stop.signum)
        except KeyboardInterrupt:
            _stop("interrupted", EXIT_SIGNAL_BASE + signal.SIGINT)
        except BrokenPipeError:
            # The reader went away (`jaxlint check | head -1`): stop quietly, as SIGPIPE would.
            _silence_stdout()
            sys.exit(EXIT_SIGNAL_BASE + getattr(signal, "SIGPIPE", 13))
        except Exception as exc:  # a bug: one line, not a traceback, and never the findings status
            _stop(f"internal error: {type(exc).__name__}: {exc} (please report this)", EXIT_ERROR)


def _codes(values: Sequence[str]) -> list[str]:
    """Accept both `--select JAX1 --select JAX6` and `--select JAX1,JAX6`."""
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


@click.group(cls=_GuardedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="jaxlint")
def main() -> None:
    """jaxlint finds JAX's sharp bits before the code runs."""


@main.command(cls=GroupedOptionsCommand, short_help="Check files and notebooks for JAX's sharp bits.",
              option_groups=CHECK_OPTION_GROUPS)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, metavar="CODES", help="Only these codes or prefixes (replaces the configured selection).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these codes or prefixes.")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Add these codes or prefixes to the selection.")
@click.option("--output-format", type=click.Choice(["full", "concise", "text", "json", "json-lines", "github", "gitlab", "junit", "sarif"]), default=None,
              help="How findings are printed (default: full on a terminal, concise otherwise; text is concise).")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False), default=None, metavar="PATH",
              help="Write the report to PATH instead of stdout (replaced whole once complete; default format concise).")
@click.option("--fix", is_flag=True, help="Apply safe fixes to the files.")
@click.option("--diff", is_flag=True, help="Show the safe fixes as a diff; write nothing.")
@click.option("--unsafe-fixes", is_flag=True,
              help="With --fix or --diff: apply the unsafe fixes too (they can change what the code does; review them).")
@click.option("--show-fixes", is_flag=True,
              help="List the findings fixed, by file and rule (without --fix: those --fix would fix).")
@click.option("--statistics", is_flag=True, help="Count findings per rule instead of listing them.")
@click.option("--runtime", is_flag=True, help="Confirm findings by tracing the flagged functions with JAX (docs/runtime.md).")
@click.option("--device", type=click.Choice(["cpu", "gpu", "tpu"]), default=None,
              help="With --runtime: the JAX device to run on (default: JAX's default backend).")
@click.option("--runtime-drop-refuted", is_flag=True, help="With --runtime: drop the findings JAX did not reproduce.")
@click.option("--verbose", "-v", is_flag=True, help="Say more: with --runtime, every top-level statement that raised and was skipped, and the credentials kept from the checked code.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Parallel workers (default: all cores).")
@click.option("--no-cache", is_flag=True, help="Analyse every file, ignoring and not writing the cache.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--quiet", "-q", is_flag=True, help="Print findings only: no summary, no progress.")
@click.option("--config", "config_path", type=click.Path(), default=None, metavar="PATH",
              help="Use this configuration file (its [tool.jaxlint] table) instead of the one found from the first path.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file: defaults and the command line only.")
@click.option("--extend-exclude", multiple=True, metavar="PATTERNS", help="Exclude these too (gitignore syntax, comma-separated or repeated).")
@click.option("--force-exclude", is_flag=True,
              help="Apply the exclusions to files named on the command line too (always done; accepted for tools that pass it).")
@click.option("--severity", type=click.Choice(["info", "warning", "error"]), default="info", show_default=True,
              help="Only findings at or above this severity make the exit status 1 (all are printed).")
@click.option("--add-noqa", is_flag=True,
              help="Add `# noqa: CODES` to every line with findings (to adopt jaxlint on existing code), then exit.")
@click.option("--stdin-filename", type=str, default=None, metavar="PATH",
              help="Read the source from stdin (path `-` or none) and check it as the file PATH; nothing is written (--fix prints the fixed source).")
@click.option("--show-files", is_flag=True, help="List the files that would be checked, then exit.")
@click.option("--show-settings", is_flag=True,
              help="Print the settings in effect and where each comes from (JSON with --output-format json), then exit.")
def check(paths, select, ignore, extend_select, output_format, output_file, fix, diff, unsafe_fixes, show_fixes,
          statistics, runtime, device, runtime_drop_refuted, verbose, jobs, no_cache, exit_zero, quiet, config_path,
          isolated, extend_exclude, force_exclude, severity, add_noqa, stdin_filename, show_files, show_settings) -> None:
    """Check PATHS (files or directories; default: the current directory)."""
    from .runner import RunOptions, run

    if select and not _codes(select):
        _fail("--select: no rule code given (an empty --select would check nothing)")

    if runtime and (fix or diff):
        _fail("--runtime cannot be combined with --fix or --diff: confirm findings first, "
              "then fix them in a separate run")
    if unsafe_fixes and not (fix or diff):
        _fail("--unsafe-fixes applies with --fix or --diff: it says which fixes they apply")
    if (device or runtime_drop_refuted) and not runtime:
        _fail("--device and --runtime-drop-refuted only apply with --runtime")
    if runtime:
        from ..runtime import jax_available

        if not jax_available():
            from .install_hints import extra_hint

            _fail(f"--runtime needs JAX where jaxlint runs: {extra_hint('runtime')}")
    options = RunOptions(
        paths=list(paths) or ["."], select=_codes(select), ignore=_codes(ignore),
        extend_select=_codes(extend_select), fix=fix, diff=diff, jobs=jobs or os.cpu_count() or 1,
        use_cache=not no_cache, progress=not quiet and _interactive(),
        config=config_path, isolated=isolated, extend_exclude=_codes(extend_exclude), add_noqa=add_noqa,
        unsafe_fixes=unsafe_fixes,
    )
    if output_file is not None and (diff or add_noqa or show_files or show_settings):
        _fail("--output-file takes the findings report; it does not apply with --diff, --add-noqa, "
              "--show-files or --show-settings")
    if add_noqa and (fix or diff or runtime):
        _fail("--add-noqa cannot be combined with --fix, --diff or --runtime")
    if add_noqa:
        options.use_cache = False
    if config_path and isolated:
        _fail("--config and --isolated contradict each other: give one")
    if show_files or show_settings:
        _show(options, show_files, show_settings, output_format == "json")
        sys.exit(EXIT_CLEAN)
    from_stdin = stdin_filename is not None or tuple(paths) == ("-",)
    if from_stdin:
        outcome = _run_stdin(options, paths, stdin_filename, runtime)
    else:
        outcome = run(options)
    raise_if_stopped()
    for line in outcome.problems:
        click.echo(f"jaxlint: {line}", err=True)
    if not outcome.results and not outcome.fatal and not from_stdin:
        # as Ruff does: a warning, and the status of a run without findings
        click.echo(f"jaxlint: warning: no Python files or notebooks found under {', '.join(options.paths)} "
                   "(all excluded, or none there)", err=True)
    if outcome.config_error:
        sys.exit(EXIT_ERROR)

    from .output import fixes_listing, render, statistics as render_statistics, summary_line
    from .output_full import use_colour
    from ..catalogue.rule_docs import RuleEntries

    if add_noqa:
        files = len({r.path for r in outcome.results if r.fixed_count})
        if not quiet:
            click.echo(f"Added {outcome.fixed} noqa comment{'s' if outcome.fixed != 1 else ''} "
                       f"in {files} file{'s' if files != 1 else ''}.", err=True)
        sys.exit(EXIT_ERROR if outcome.fatal else EXIT_CLEAN)

    if diff:
        text = b"".join(outcome.diffs)
        with _writing_the_report():
            if text:
                click.echo(text, nl=False)  # bytes: each file's patch is in that file's own encoding
            if show_fixes:
                click.echo(fixes_listing(outcome.fixed_codes, applied=False, shown=True), nl=False, err=True)
            if not quiet:
                count = outcome.fixed
                click.echo(f"{count} fix{'es' if count != 1 else ''} would be applied in {len(outcome.diffs)} file(s).", err=True)
        sys.exit(EXIT_ERROR if outcome.fatal else (EXIT_FINDINGS if text and not exit_zero else EXIT_CLEAN))

    if outcome.fixed_output is not None:
        with _writing_the_report():
            sys.stdout.flush()
            sys.stdout.buffer.write(outcome.fixed_output)
            sys.stdout.buffer.flush()
    # with the fixed buffer on stdout, the findings left go to stderr
    report_to_stderr = outcome.fixed_output is not None
    findings = outcome.findings
    runtime_summary = None
    colour = False
    if output_format is None:
        output_format = "full" if output_file is None and _stdout_is_terminal() else "concise"
    if runtime:
        findings, runtime_summary = _confirm(findings, options, device, runtime_drop_refuted, outcome.project, verbose)
    if statistics:
        report = render_statistics(findings, output_format)
        if report:
            report += "" if report.endswith("\n") else "\n"
    else:
        colour = output_format == "full" and output_file is None and use_colour(sys.stderr if report_to_stderr else sys.stdout)
        report = render(findings, output_format, rules=RuleEntries(), colour=colour,
                        files=[r.path for r in outcome.results])
    if output_file is not None:
        from .report_file import ReportFileError, write_report_file

        try:
            write_report_file(output_file, report)
        except ReportFileError as exc:
            _fail(f"--output-file {exc}")
        report = ""
    with _writing_the_report():
        if report:
            click.echo(report, nl=False, color=True if colour else None, err=report_to_stderr)
        if show_fixes:
            listing = fixes_listing(outcome.fixed_codes if (fix or diff) else _fixable_codes(findings, unsafe_fixes),
                                    applied=fix, shown=diff)
            click.echo(listing, nl=False, err=True)
        if not quiet and output_format in _TEXT_FORMATS:
            click.echo(summary_line(findings, len(outcome.results), fixed=outcome.fixed, errors=outcome.fatal,
                                    not_analysed=sum(1 for r in outcome.results if r.not_analysed),
                                    unsafe_fixes=unsafe_fixes),
                       err=True)
        if runtime_summary and not quiet:
            click.echo(runtime_summary, err=True)
    if outcome.fatal:
        sys.exit(EXIT_ERROR)
    counted = [f for f in findings if _SEVERITY_RANK[f.severity.value] >= _SEVERITY_RANK[severity]]
    sys.exit(EXIT_FINDINGS if counted and not exit_zero else EXIT_CLEAN)


def _run_stdin(options, paths, stdin_filename: str | None, runtime: bool):
    """`--stdin-filename PATH -`: the buffer on stdin checked as PATH (frontends/stdin_check.py)."""
    from .stdin_check import UNNAMED, read_stdin, run_stdin

    if tuple(paths) not in ((), ("-",)):
        _fail("--stdin-filename checks the source read from stdin: give `-` as the only path, or none")
    if runtime or options.add_noqa:
        _fail("--runtime and --add-noqa need files on disk; they do not apply to the source read from stdin")
    if stdin_filename == "":
        _fail("--stdin-filename: give the path the source would have")
    name = stdin_filename if stdin_filename is not None else UNNAMED
    data = read_stdin(name)
    if isinstance(data, str):
        _fail(f"{name} (stdin): {data}")
    options.paths = [name]
    options.use_cache = False
    return run_stdin(options, name, data)


_SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
#: the formats meant for people, followed by the summary line on stderr
_TEXT_FORMATS = ("full", "concise", "text")


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _fixable_codes(findings, unsafe: bool) -> list[tuple[str, dict[str, int]]]:
    """For `--show-fixes` without `--fix`: the findings `--fix` would fix, counted by file and code."""
    from collections import Counter

    from ..syntax.fixes import applicable

    by_file: dict[str, Counter] = {}
    for finding in findings:
        if applicable(finding, unsafe):
            by_file.setdefault(finding.path, Counter())[finding.code] += 1
    return list(by_file.items())


def _show(options, files: bool, settings: bool, as_json: bool = False) -> None:
    """--show-files / --show-settings: what a run would check, with which settings, and where each
    setting comes from."""
    import json

    from .config import ConfigError
    from .discovery import discover
    from .runner import resolve_settings
    from .settings_sources import render_settings, settings_with_sources

    try:
        resolved = resolve_settings(options)
        sourced = settings_with_sources(resolved, options)
    except ConfigError as exc:
        _fail(str(exc))
    if settings:
        if as_json:
            click.echo(json.dumps({"configuration": resolved.config_path, "settings": sourced}, indent=2,
                                  sort_keys=True, default=list))
        else:
            click.echo(f"# configuration: {resolved.config_path or 'none (defaults)'}")
            click.echo(render_settings(sourced), nl=False)
    if files:
        found, problems = discover(options.paths, exclude=resolved.exclude, root=resolved.root)
        for problem in problems:
            click.echo(f"jaxlint: {problem.path}: {problem.message}", err=True)
        for path in found:
            click.echo(path)


@main.command("rule", short_help="Explain a rule, the rules of a prefix, or all of them.")
@click.argument("codes", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Each rule's page as text, or a JSON array.")
def rule_command(codes: tuple[str, ...], everything: bool, output_format: str) -> None:
    """Print the documentation of each rule CODES names: a code (JAX101), a prefix (JAX1, JAX)
    or a rule's name (prng-key-reuse)."""
    from ..catalogue.rule_docs import load_catalogue
    from .rule_listing import NoSuchRule, pick_rules, render_rules

    docs = load_catalogue()
    if everything == bool(codes):
        _fail("give the codes of the rules to explain, or --all (not both)" if codes else
              "give a rule code (JAX101), a prefix (JAX1) or a name, or --all; `jaxlint rules` lists them")
    try:
        picked = list(docs.values()) if everything else pick_rules(docs, codes)
    except NoSuchRule as exc:
        _fail(str(exc))
    click.echo(render_rules(picked, _fixable_rules(), output_format), nl=False)


@main.command("rules", short_help="List every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="A table, or a JSON array.")
def rules_command(output_format: str) -> None:
    """List every rule: code, name, severity, whether it can fix ([*]), summary."""
    from ..catalogue.rule_docs import load_catalogue
    from .rule_listing import render_table

    docs = load_catalogue()
    click.echo(render_table(sorted(docs.values(), key=lambda d: d.code), _fixable_rules(), output_format), nl=False)


def _fixable_rules() -> dict[str, bool]:
    from ..engine.registry import all_rules
    from ..model.settings import UNUSED_NOQA_CODE

    # JAX001 is the engine's own, with a fix, not a rule class
    return {UNUSED_NOQA_CODE: True, **{code: rule.fixable for code, rule in all_rules().items()}}


@main.command("server", short_help="Run the language server (needs the server extra).")
@click.option("--stdio", is_flag=True, help="Accepted for clients that pass it: stdin and stdout are the only transport.")
def server_command(stdio: bool) -> None:
    """Run the language server on stdin and stdout (docs/editors.md); needs the `server` extra."""
    try:
        from .server import serve
    except ImportError as exc:  # missing, or a pygls without the 2.x API
        if (exc.name or "").split(".")[0] not in ("pygls", "lsprotocol"):
            raise
        from .install_hints import extra_hint

        _fail(f"`jaxlint server` needs pygls 2 and lsprotocol: {extra_hint('server')}")

    status = serve()
    raise_if_stopped()  # ended by a signal: the guard's line and status, as for a check
    sys.exit(status)


def _confirm(findings, options, device, drop, project=None, verbose=False):
    """Runtime mode: verdicts on the findings, the refuted ones dropped if asked, and the summary.
    `project`: the project the files were checked in (what traces a function from elsewhere)."""
    from .runner import resolve_settings
    from ..runtime import RuntimeOptions, RuntimeUnavailable, confirm, drop_refuted, note_lines
    from ..runtime import summary_line as runtime_summary_line

    settings = resolve_settings(options)
    notes: list[str] = []
    try:
        checked = confirm(findings, settings, RuntimeOptions(device=device, jobs=options.jobs,
                                                             progress=options.progress), project, notes)
    except RuntimeUnavailable as exc:  # no JAX, or no such device: the user's to fix, said once
        _fail(str(exc))
    except Exception as exc:  # a bug in runtime mode: say so, do not print a traceback
        _fail(f"runtime mode failed: {type(exc).__name__}: {exc} (please report this)")
    kept = drop_refuted(checked) if drop else checked
    summary = runtime_summary_line(checked, dropped=len(checked) - len(kept))
    return kept, "\n".join([summary, *(f"Runtime: {note}." for note in note_lines(notes, verbose))])


def _fail(message: str) -> None:
    click.echo(f"jaxlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _stop(message: str, status: int) -> None:
    try:
        click.echo(f"jaxlint: {message}", err=True)
    except (OSError, ValueError):  # stderr is gone too: the status still says it
        pass
    sys.exit(status)


@contextlib.contextmanager
def _writing_the_report() -> Iterator[None]:
    """A report that cannot be written (a full disk, a closed terminal) is an error of the run;
    a closed pipe goes on to the guard, which stops quietly."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise
        _stop(f"error: cannot write the report: {exc.strerror or exc}", EXIT_ERROR)


def _tolerate_undecodable_names() -> None:
    """A file name that is not valid in the locale's encoding (Python holds its bytes as
    surrogates) is written back as those bytes, instead of failing the whole report."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            try:
                reconfigure(errors="surrogateescape")
            except (OSError, ValueError):
                pass


def _silence_stdout() -> None:
    """Point stdout at the null device, so that the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _interactive() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")
