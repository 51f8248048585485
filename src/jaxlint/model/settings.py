"""Settings: `[tool.jaxlint]` in the nearest pyproject.toml, validated strictly, then command-line overrides."""
from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import sys
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CODE_PATTERN = re.compile(r"^JAX\d{0,3}$")
VERSION_PATTERN = re.compile(r"^\d+(\.\d+){0,2}$")


class ConfigError(Exception):
    """A bad setting; the message names the file and the key."""


def parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def installed_jax_version() -> tuple[int, ...] | None:
    """The version of the installed JAX, read from its metadata (JAX itself is never imported)."""
    try:
        return parse_version(".".join(metadata.version("jax").split(".")[:3]))
    except (metadata.PackageNotFoundError, ValueError):
        return None


@dataclass(frozen=True)
class RuntimeSettings:
    """`[tool.jaxlint.runtime]`: how `check --runtime` runs the user's code (see docs/runtime.md)."""

    #: seconds one worker process may take for a module (import and every check)
    timeout: float = 60.0
    #: MiB of data memory a worker may allocate (RLIMIT_DATA); 0: no limit
    memory_limit: int = 4096
    #: extra import roots, relative to the configuration file's directory
    python_path: tuple[str, ...] = ()
    #: declared example inputs: ("module:Qual.name" or "path.py:Qual.name", example) pairs
    examples: tuple[tuple[str, Any], ...] = ()


#: Parameter names taken for PRNG keys (JAX101/JAX104), as glob patterns; `key-names` replaces them.
DEFAULT_KEY_NAMES = ("key", "rng", "prng", "prng_key", "keys", "rngs", "?*_key", "?*_rng", "?*_keys", "?*_rngs")


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("JAX",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    extra_traced_decorators: tuple[str, ...] = ()
    loop_unroll_threshold: int = 100
    #: the oldest JAX the project supports; None: the newest in the deprecation table
    target_jax_version: tuple[int, ...] | None = None
    #: the project runs with `jax_enable_x64` on (set at startup or in the environment): 64-bit dtypes are kept
    enable_x64: bool = False
    #: parameter names (glob patterns) taken for PRNG keys by the key rules
    key_names: tuple[str, ...] = DEFAULT_KEY_NAMES
    #: a key handed to a function jaxlint cannot see into counts as consumed (JAX101)
    unknown_calls_consume_keys: bool = True
    #: the directory patterns are relative to (where the configuration file is)
    root: str = "."
    config_path: str | None = None
    runtime: RuntimeSettings = RuntimeSettings()

    def enabled_codes(self, known: Iterable[str], path: str | None = None) -> frozenset[str]:
        ignore = list(self.ignore)
        if path is not None:
            ignore.extend(self.ignores_for(path))
        selected = [*self.select, *self.extend_select]

        def longest(prefixes: list[str], code: str) -> int:
            return max((len(p) for p in prefixes if code.startswith(p)), default=-1)

        return frozenset(code for code in known if longest(selected, code) > longest(ignore, code))

    def ignores_for(self, path: str) -> list[str]:
        relative = _relative_posix(path, self.root)
        codes: list[str] = []
        for pattern, pattern_codes in self.per_file_ignores:
            if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(Path(relative).name, pattern):
                codes.extend(pattern_codes)
        return codes

    def fingerprint(self) -> str:
        """Identifies everything that can change a file's findings (for the cache)."""
        data = asdict(self)
        data.pop("config_path")
        data.pop("runtime", None)  # runtime mode's settings change no static finding
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=list).encode()).hexdigest()[:16]


def _relative_posix(path: str, root: str) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def find_config(start: str | Path) -> Path | None:
    """The first pyproject.toml with a [tool.jaxlint] table, walking up from `start`."""
    here = Path(start).resolve()
    if not here.is_dir():
        here = here.parent
    for directory in (here, *here.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"{candidate}: cannot read: {exc}") from exc
            if "jaxlint" in data.get("tool", {}):
                return candidate
    return None


def load_settings(start: str | Path, known_codes: Iterable[str]) -> Settings:
    path = find_config(start)
    if path is None:
        return Settings(target_jax_version=installed_jax_version())
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))["tool"]["jaxlint"]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    return settings_from_table(table, path, known_codes)


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
    return Settings(**values)


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


def _dotted_names(value: Any, where: str, known) -> tuple[str, ...]:
    names = _strings(value, where, known)
    for name in names:
        if not re.match(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$", name):
            raise ConfigError(f"{where}: {name!r} is not a dotted name like 'mylib.utils.my_jit'")
    return names


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


def _runtime(value: Any, where: str, known) -> RuntimeSettings:
    """`[tool.jaxlint.runtime]`: timeout, memory-limit, python-path, examples; strictly checked."""
    from ..runtime.specs import SpecError, check_example_value

    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table, got {value!r}")
    unknown = sorted(set(value) - set(_RUNTIME_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known keys: {', '.join(_RUNTIME_KEYS)})")
    values: dict[str, Any] = {}
    timeout = value.get("timeout")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigError(f"{where}.timeout: expected a positive number of seconds, got {timeout!r}")
        values["timeout"] = float(timeout)
    limit = value.get("memory-limit")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ConfigError(f"{where}.memory-limit: expected a number of MiB (0: no limit), got {limit!r}")
        values["memory_limit"] = limit
    if "python-path" in value:
        values["python_path"] = _strings(value["python-path"], f"{where}.python-path", known)
    examples = value.get("examples", {})
    if not isinstance(examples, dict):
        raise ConfigError(f"{where}.examples: expected a table of \"module:function\" = example, got {examples!r}")
    for key, example in examples.items():
        place = f"{where}.examples.{key!r}"
        if ":" not in key or not key.rpartition(":")[2]:
            raise ConfigError(f"{place}: the key must be \"package.module:function\" or "
                              f"\"path/to/file.py:Class.method\"")
        if isinstance(example, dict):
            extra = sorted(set(example) - {"args", "kwargs", "init"})
            if extra:
                raise ConfigError(f"{place}: unknown key {extra[0]!r} (known keys: args, kwargs, init)")
        elif not isinstance(example, list):
            raise ConfigError(f"{place}: expected a list of arguments or a table with args/kwargs, got {example!r}")
        try:
            check_example_value(example, place)
        except SpecError as exc:
            raise ConfigError(str(exc)) from None
    values["examples"] = tuple(examples.items())
    return RuntimeSettings(**values)


_RUNTIME_KEYS = ("timeout", "memory-limit", "python-path", "examples")


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


_KEYS = {
    "select": _codes,
    "ignore": _codes,
    "extend-select": _codes,
    "per-file-ignores": _per_file_ignores,
    "exclude": _strings,
    "extra-traced-decorators": _dotted_names,
    "loop-unroll-threshold": _positive_int,
    "target-jax-version": _version,
    "enable-x64": _bool,
    "key-names": _name_patterns,
    "unknown-calls-consume-keys": _bool,
    "runtime": _runtime,
}


def with_overrides(settings: Settings, known: Iterable[str], *, select=None, ignore=None,
                   extend_select=None) -> Settings:
    """Command-line options: --select replaces the configured selection, the others add to it."""
    changes: dict[str, Any] = {}
    if select:
        changes["select"] = validate_codes(select, "--select", known)
    if ignore:
        changes["ignore"] = settings.ignore + validate_codes(ignore, "--ignore", known)
    if extend_select:
        changes["extend_select"] = settings.extend_select + validate_codes(extend_select, "--extend-select", known)
    return replace(settings, **changes)
