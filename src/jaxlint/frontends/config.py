"""Reading settings: `[tool.jaxlint]` in the nearest pyproject.toml, validated strictly, then
command-line overrides. The settings themselves are `model.settings.Settings`."""
from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

from ..catalogue.frameworks import DECLARABLE_MODES, LEAVES
from ..model.settings import PARSE_ERROR_CODE, ConfigError, Settings
from ..reading import read_regular
from .distributions import NotInstalled, distribution_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: the parse-error code: reported whatever the selection
CODE_PATTERN = re.compile(r"^JAX\d{0,3}$")
VERSION_PATTERN = re.compile(r"^\d+(\.\d+){0,2}$")
#: the largest pyproject.toml read
MAX_CONFIG_BYTES = 1024 * 1024


def parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def installed_jax_version() -> tuple[int, ...] | None:
    """The version of the installed JAX, read from its metadata (JAX itself is never imported)."""
    try:
        return parse_version(".".join(distribution_version("jax").split(".")[:3]))
    except (NotInstalled, ValueError):
        return None


def find_config(start: str | Path) -> Path | None:
    """The first pyproject.toml with a [tool.jaxlint] table, walking up from `start`."""
    found = _find_table(start)
    return None if found is None else found[0]


def _find_table(start: str | Path) -> tuple[Path, Any] | None:
    here = Path(start).resolve()
    if not here.is_dir():
        here = here.parent
    for directory in (here, *here.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            tools = _read_pyproject(candidate).get("tool", {})
            if not isinstance(tools, dict):
                # `tool` must be a table (PEP 518): such a file is as broken as one that is not TOML
                raise ConfigError(f"{candidate}: tool: expected a table ([tool]), got {tools!r}")
            if "jaxlint" in tools:
                return candidate, tools["jaxlint"]
    return None


def _read_pyproject(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(read_regular(str(path), MAX_CONFIG_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc


def load_settings(start: str | Path, known_codes: Iterable[str]) -> Settings:
    found = _find_table(start)
    if found is None:
        return Settings(target_jax_version=installed_jax_version())
    path, table = found
    return settings_from_table(table, path, known_codes)


def configured_keys(config_path: str | None) -> frozenset[str]:
    """The keys of the [tool.jaxlint] table a configuration file sets (none without a file)."""
    if config_path is None:
        return frozenset()
    tools = _read_pyproject(Path(config_path)).get("tool", {})
    table = tools.get("jaxlint", {}) if isinstance(tools, dict) else {}
    return frozenset(table) if isinstance(table, dict) else frozenset()


def load_settings_file(path: str | Path, known_codes: Iterable[str]) -> Settings:
    """`--config PATH`: the [tool.jaxlint] table of that file (a pyproject.toml, or any TOML file
    holding the table); its directory is the project root."""
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"{path}: no such configuration file")
    tools = _read_pyproject(path).get("tool", {})
    if not isinstance(tools, dict) or "jaxlint" not in tools:
        raise ConfigError(f"{path}: no [tool.jaxlint] table")
    return settings_from_table(tools["jaxlint"], path, known_codes)


def settings_from_table(table: dict[str, Any], path: Path, known_codes: Iterable[str]) -> Settings:
    known = sorted(known_codes)
    where = f"{path} [tool.jaxlint]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known keys: {', '.join(_KEYS)})")
    values: dict[str, Any] = {"root": str(path.parent), "config_path": str(path),
                              "target_jax_version": installed_jax_version()}
    for key, value in table.items():
        values[key.replace("-", "_")] = _KEYS[key](value, f"{where}: {key}", known)
    # `extend-exclude` adds to `exclude` (for a shared configuration's own additions)
    values["exclude"] = (*values.get("exclude", ()), *values.pop("extend_exclude", ()))
    settings = Settings(**values)
    check_selects_a_rule(settings, known, f"{where}: select")
    return settings


def check_selects_a_rule(settings: Settings, known: Iterable[str], where: str) -> None:
    """A selection that enables no rule checks nothing but parse errors: surely a mistake, e.g.
    `select = []`, which would otherwise pass every file silently."""
    rules = [code for code in known if code != PARSE_ERROR_CODE]
    if rules and not settings.enabled_codes(rules):
        raise ConfigError(f"{where}: the selection enables no rule, so nothing would be checked "
                          f"(select {list(settings.select)}, extend-select {list(settings.extend_select)}, "
                          f"ignore {list(settings.ignore)})")


def validate_codes(codes: Iterable[str], where: str, known: Iterable[str]) -> tuple[str, ...]:
    known = list(known)
    result = []
    for code in codes:
        if not isinstance(code, str) or not CODE_PATTERN.match(code.strip().upper()):
            raise ConfigError(f"{where}: {code!r} is not a rule code or prefix (like JAX101 or JAX1)")
        code = code.strip().upper()
        # A full code must exist; a prefix (a family such as JAX1) is accepted as written.
        if len(code) == 6 and code not in known:
            raise ConfigError(f"{where}: unknown rule code {code!r} (`jaxlint rules` lists them)")
        result.append(code)
    return tuple(result)


def _codes(value: Any, where: str, known) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of rule codes, got {value!r}")
    return validate_codes(value, where, known)


def _strings(value: Any, where: str, known) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(value)


def _patterns(value: Any, where: str, known) -> tuple[str, ...]:
    from .discovery import is_valid_pattern

    patterns = _strings(value, where, known)
    for pattern in patterns:
        if not is_valid_pattern(pattern):
            raise ConfigError(f"{where}: {pattern!r} is not a valid gitignore-style pattern")
    return patterns


def _dotted_names(value: Any, where: str, known) -> tuple[str, ...]:
    names = _strings(value, where, known)
    for name in names:
        if not re.match(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$", name):
            raise ConfigError(f"{where}: {name!r} is not a dotted name like 'mylib.utils.my_jit'")
    return names


#: what a project's own transform may declare: the framework table's vocabulary (docs/frameworks.md)
TRANSFORM_LEAVES = tuple(sorted(LEAVES))


def _transforms(value: Any, where: str, known) -> tuple[tuple[str, str, str], ...]:
    """`[tool.jaxlint.extend-transforms]`: `"mylib.fast_jit" = { mode = "jit", leaves = "arrays" }`."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of \"dotted.name\" = {{ mode = ..., leaves = ... }}, "
                          f"got {value!r}")
    declared = []
    for name, entry in value.items():
        _dotted_names([name], where, known)
        at = f"{where}.{name!r}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{at}: expected a table like {{ mode = \"jit\" }}, got {entry!r}")
        unknown = sorted(set(entry) - {"mode", "leaves"})
        if unknown:
            raise ConfigError(f"{at}: unknown field {unknown[0]!r} (known: mode, leaves)")
        mode, leaves = entry.get("mode"), entry.get("leaves", "all")
        if mode not in DECLARABLE_MODES:
            raise ConfigError(f"{at}: mode must be one of {', '.join(DECLARABLE_MODES)}, got {mode!r}")
        if leaves not in TRANSFORM_LEAVES:
            raise ConfigError(f"{at}: leaves must be one of {', '.join(TRANSFORM_LEAVES)}, got {leaves!r}")
        declared.append((name, mode, leaves))
    return tuple(declared)


def _per_file_ignores(value: Any, where: str, known):
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of glob = [codes], got {value!r}")
    return tuple((pattern, _codes(codes, f"{where}.{pattern!r}", known)) for pattern, codes in value.items())


def _positive_int(value: Any, where: str, known) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: expected a positive integer, got {value!r}")
    return value


def _bool(value: Any, where: str, known) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    return value


def _name_patterns(value: Any, where: str, known) -> tuple[str, ...]:
    names = _strings(value, where, known)
    for name in names:
        if not re.match(r"^[A-Za-z0-9_*?]+$", name) or not re.search(r"[A-Za-z0-9_]", name):
            raise ConfigError(f"{where}: {name!r} is not a parameter name or a glob pattern like '*_key'")
    return names


def _version(value: Any, where: str, known) -> tuple[int, ...]:
    if not isinstance(value, str) or not VERSION_PATTERN.match(value):
        raise ConfigError(f"{where}: expected a version like \"0.4.30\", got {value!r}")
    return parse_version(value)


def _runtime_settings(value: Any, where: str):
    """`[tool.jaxlint.runtime]`, read by runtime mode's own reader (imported only for such a table)."""
    from ..runtime.options import runtime_settings

    return runtime_settings(value, where)


_KEYS = {
    "select": _codes,
    "ignore": _codes,
    "extend-select": _codes,
    "per-file-ignores": _per_file_ignores,
    "exclude": _patterns,
    "extend-exclude": _patterns,
    "src": _strings,
    "extra-traced-decorators": _dotted_names,
    "extend-transforms": _transforms,
    "loop-unroll-threshold": _positive_int,
    "target-jax-version": _version,
    "enable-x64": _bool,
    "key-names": _name_patterns,
    "unknown-calls-consume-keys": _bool,
    "strict-key-reuse": _bool,
    "unsafe-fixes": _bool,
    "runtime": lambda value, where, known: _runtime_settings(value, where),
}


def with_overrides(settings: Settings, known: Iterable[str], *, select=None, ignore=None,
                   extend_select=None, extend_exclude=None, unsafe_fixes=False) -> Settings:
    """Command-line options: --select replaces the configured selection, the others add to it;
    `--unsafe-fixes` turns unsafe fixes on whatever the configuration says."""
    if unsafe_fixes:
        settings = replace(settings, unsafe_fixes=True)
    changes: dict[str, Any] = {}
    if extend_exclude:
        for pattern in extend_exclude:
            _patterns([pattern], "--extend-exclude", known)
        settings = replace(settings, exclude=(*settings.exclude, *extend_exclude))
    if select:
        changes["select"] = validate_codes(select, "--select", known)
    if ignore:
        changes["ignore"] = settings.ignore + validate_codes(ignore, "--ignore", known)
    if extend_select:
        changes["extend_select"] = settings.extend_select + validate_codes(extend_select, "--extend-select", known)
    if not changes:
        return settings
    settings = replace(settings, **changes)
    options = " and ".join(name for name, given in (("--select", select), ("--ignore", ignore),
                                                     ("--extend-select", extend_select)) if given)
    where = f"{options} with {settings.config_path}" if settings.config_path else options
    check_selects_a_rule(settings, known, where)
    return settings
