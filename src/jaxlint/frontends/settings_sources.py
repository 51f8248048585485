"""`jaxlint check --show-settings`: each setting in effect with where it comes from (the command
line, the configuration file, or the default)."""
from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from ..model.settings import Settings
from .config import configured_keys

#: setting -> the command-line options that set it or add to it
_OPTIONS = {"select": ("select", "--select"), "ignore": ("ignore", "--ignore"),
            "extend_select": ("extend_select", "--extend-select"), "exclude": ("extend_exclude", "--extend-exclude"),
            "unsafe_fixes": ("unsafe_fixes", "--unsafe-fixes")}
#: settings the configuration file sets under another key too
_ALSO_FROM = {"exclude": ("exclude", "extend-exclude")}


def settings_with_sources(settings: Settings, options) -> dict[str, dict[str, Any]]:
    """{setting as the configuration file spells it: {"value", "source"}} for every setting."""
    configured = configured_keys(settings.config_path)
    values = asdict(settings)
    result: dict[str, dict[str, Any]] = {}
    for field in fields(Settings):
        name = field.name
        if name == "config_path":
            continue
        key = name.replace("_", "-")
        value = values[name]
        sources = []
        if any(k in configured for k in _ALSO_FROM.get(name, (key,))):
            sources.append(settings.config_path)
        option = _OPTIONS.get(name)
        if option is not None and getattr(options, option[0], None):
            sources.append(f"command line ({option[1]})")
        if sources:
            source = " + ".join(sources)
        elif name == "target_jax_version":
            source = "the installed JAX" if value is not None else "default (the newest JAX jaxlint knows)"
        elif name == "root":
            source = "the configuration file's directory" if settings.config_path else "default (the current directory)"
        else:
            source = "default"
        if isinstance(value, dict):  # a sub-table (`runtime`): its keys as the file spells them
            value = {k.replace("_", "-"): v for k, v in value.items()}
        if name == "target_jax_version" and value is not None:
            value = ".".join(str(part) for part in value)
        result[key] = {"value": value, "source": source}
    return result


def render_settings(sourced: dict[str, dict[str, Any]]) -> str:
    """`key = value  # source`, a line each, the values as JSON (which TOML reads alike for these)."""
    lines = [(f"{key} = {json.dumps(item['value'], default=list)}", item["source"]) for key, item in sourced.items()]
    # the comments line up, but a long value does not push every comment to the right
    width = min(max(len(text) for text, _ in lines), 40)
    return "".join(f"{text:<{width}}  # {source}\n" for text, source in lines)
