"""Settings: what a check is configured with (rule selection, per-file ignores, the JAX facts the
project states), their defaults, and the error a bad setting raises. Reading them from
pyproject.toml is the front ends' business (`frontends/config.py`)."""
from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

#: A file that mentions none of these cannot hold a finding: it is only syntax-checked (every
#: front end skips the analysis for it before importing the engine), unless it star-imports.
RELEVANT_WORDS = ("jax", "equinox", "flax")
#: `from m import *`: the names it binds (`jnp`, `jit`) may be JAX's without the file naming JAX
_STAR_IMPORT = re.compile(r"\bimport\s*\*")


def may_use_jax(text: str) -> bool:
    """Whether a text may hold a finding: it mentions JAX or a library built on it
    (`RELEVANT_WORDS`), or star-imports a module that may give it JAX's names."""
    return any(word in text for word in RELEVANT_WORDS) or (
        "*" in text and _STAR_IMPORT.search(text) is not None)
#: Reported whatever the selection: a file that does not parse has not been checked at all.
PARSE_ERROR_CODE = "JAX000"
#: `# noqa` codes that suppress nothing (or name no jaxlint rule): reported only when selected by
#: its full code, since it reports on how the other rules were run rather than on the code.
UNUSED_NOQA_CODE = "JAX001"
#: Codes that a prefix (`JAX`, `JAX0`) does not select: only their full code does.
EXPLICIT_ONLY_CODES = frozenset({UNUSED_NOQA_CODE})


class ConfigError(Exception):
    """A bad setting; the message names the file and the key."""


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
    #: environment variables (names or globs) the checked code gets even though they look like credentials
    pass_env: tuple[str, ...] = ()
    #: let the checked code reach the network (by default it runs in an empty network namespace)
    network: bool = False


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
    #: the project's own transforms, in the framework table's words: (dotted name, mode, leaves)
    extend_transforms: tuple[tuple[str, str, str], ...] = ()
    loop_unroll_threshold: int = 100
    #: the oldest JAX the project supports; None: the newest in the deprecation table
    target_jax_version: tuple[int, ...] | None = None
    #: the project runs with `jax_enable_x64` on (set at startup or in the environment): 64-bit dtypes are kept
    enable_x64: bool = False
    #: parameter names (glob patterns) taken for PRNG keys by the key rules
    key_names: tuple[str, ...] = DEFAULT_KEY_NAMES
    #: a key handed to a function jaxlint cannot see into counts as consumed (JAX101)
    unknown_calls_consume_keys: bool = True
    #: extra source roots of the project, relative to `root` (besides it and its `src/`)
    src: tuple[str, ...] = ()
    #: also report key reuse that reads as deliberate (JAX101, JAX103): one key for two runs of the
    #: same computation, a draw used only as a dummy input to `init`, a fixed seed per configuration
    strict_key_reuse: bool = False
    #: the directory patterns are relative to (where the configuration file is)
    root: str = "."
    config_path: str | None = None
    runtime: RuntimeSettings = RuntimeSettings()
    #: `--fix` applies unsafe fixes too (`--unsafe-fixes`, `unsafe-fixes = true`)
    unsafe_fixes: bool = False

    def declared_transforms(self) -> dict[str, tuple[str, str]]:
        """The project's own transforms: dotted name -> (mode, leaves). A name of
        `extra-traced-decorators` is a jit that traces every leaf."""
        declared = {name: ("jit", "all") for name in self.extra_traced_decorators}
        declared.update((name, (mode, leaves)) for name, mode, leaves in self.extend_transforms)
        return declared

    def enabled_codes(self, known: Iterable[str], path: str | None = None) -> frozenset[str]:
        ignore = list(self.ignore)
        if path is not None:
            ignore.extend(self.ignores_for(path))
        selected = [*self.select, *self.extend_select]

        def longest(prefixes: list[str], code: str) -> int:
            return max((len(p) for p in prefixes if code.startswith(p)), default=-1)

        def selecting(code: str) -> list[str]:
            return [p for p in selected if p == code] if code in EXPLICIT_ONLY_CODES else selected

        return frozenset(code for code in known
                         if code == PARSE_ERROR_CODE or longest(selecting(code), code) > longest(ignore, code))

    def ignores_for(self, path: str) -> list[str]:
        if not self.per_file_ignores:
            return []  # no path to resolve (a system call per directory of it)
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
        data.pop("unsafe_fixes", None)  # nor does which fixes `--fix` applies
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=list).encode()).hexdigest()[:16]


def _relative_posix(path: str, root: str) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()
