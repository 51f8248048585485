"""`[tool.jaxlint.runtime]`: the options of runtime mode, read from their table and strictly checked.

The front ends read pyproject.toml; what the runtime table may hold is runtime mode's to say.
"""
from __future__ import annotations

from typing import Any

from ..model.settings import ConfigError, RuntimeSettings
from .specs import SpecError, check_example_value


def runtime_settings(value: Any, where: str) -> RuntimeSettings:
    """`[tool.jaxlint.runtime]`: timeout, memory-limit, python-path, examples; strictly checked."""
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
    if "pass-env" in value:
        values["pass_env"] = _strings(value["pass-env"], f"{where}.pass-env")
    network = value.get("network")
    if network is not None:
        if not isinstance(network, bool):
            raise ConfigError(f"{where}.network: expected true or false, got {network!r}")
        values["network"] = network
    if "python-path" in value:
        values["python_path"] = _strings(value["python-path"], f"{where}.python-path")
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


_RUNTIME_KEYS = ("timeout", "memory-limit", "python-path", "pass-env", "network", "examples")


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(value)
