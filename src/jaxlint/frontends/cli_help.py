"""`jaxlint check --help` with its options in groups (what is checked, how it is reported, fixes,
configuration, runtime mode, speed), instead of one list of thirty."""
from __future__ import annotations

import click

#: (title, option names) in the order shown; an option named in no group is listed under "Other"
CHECK_OPTION_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Rule selection", ("select", "ignore", "extend_select", "severity")),
    ("Files", ("extend_exclude", "force_exclude", "stdin_filename", "show_files")),
    ("Report", ("output_format", "output_file", "statistics", "quiet", "exit_zero")),
    ("Fixes", ("fix", "diff", "unsafe_fixes", "show_fixes", "add_noqa")),
    ("Configuration", ("config_path", "isolated", "show_settings")),
    ("Runtime mode", ("runtime", "device", "runtime_drop_refuted", "verbose")),
    ("Speed", ("jobs", "no_cache")),
)


class GroupedOptionsCommand(click.Command):
    """A command whose `--help` lists its options under the titles of `option_groups`."""

    def __init__(self, *args, option_groups: tuple[tuple[str, tuple[str, ...]], ...] = (), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.option_groups = option_groups

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = {param.name: param.get_help_record(ctx) for param in self.get_params(ctx)
                   if isinstance(param, click.Option)}
        grouped = {name for _, names in self.option_groups for name in names}
        sections = [(title, [records[name] for name in names if records.get(name)])
                    for title, names in self.option_groups]
        sections.append(("Other", [record for name, record in records.items() if record and name not in grouped]))
        for title, rows in sections:
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
