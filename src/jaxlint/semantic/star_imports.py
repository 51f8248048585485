"""What a `from m import *` binds, as the walk that records a file's bindings meets it.

Python binds every name of `m.__all__`, else every name of `m`'s namespace that does not start
with `_`. For the modules of jaxlint's table (JAX's public modules, NumPy, a few of the standard
library's) the names are the table's; for a module of the project they are asked of the project
(`SourceFile.project`, which reads that module's `__all__` or its names: `semantic.exports`). Any
other module, or a module of the project checked without its project (a buffer alone, stdin), binds
names that are not known: `UNKNOWN_EXPORTS`, which the name resolver reads as "any name may be
bound here".
"""
from __future__ import annotations

from functools import lru_cache
from typing import Protocol

from ..catalogue.deprecations import old_path_aliases
from ..catalogue.star_exports import library_exports
from .names import canonical_path
from .scopes import UNKNOWN_EXPORTS, StarExports


class ExportsSource(Protocol):
    """A project, as a file's analysis sees it, that knows what its modules export."""

    def star_exports(self, module: str) -> StarExports | None:
        """What `from module import *` binds, where `module` is a module of the project whose names
        can be read; None otherwise."""


def star_exports(file: object, module: str | None) -> StarExports:
    """What `from module import *` binds in `file` (a `SourceFile`): from jaxlint's table, else from
    the file's project; not known (`UNKNOWN_EXPORTS`) for any other module, or for a relative
    import whose package is not known (`module` None)."""
    if module is None:
        return UNKNOWN_EXPORTS
    known = _library(module)
    if known is not None:
        return known
    project = getattr(file, "project", None)
    ask = getattr(project, "star_exports", None) if project is not None else None
    found = ask(module) if ask is not None else None
    return found if found is not None else UNKNOWN_EXPORTS


@lru_cache(maxsize=None)
def _library(module: str) -> StarExports | None:
    """The table's exports of a library module, named as written (`jax.experimental.stax` binds
    `jax.experimental.stax.Dense`, which the resolver renames like any old path of JAX's)."""
    table = library_exports(canonical_path(module, old_path_aliases()))
    if table is None:
        return None
    return StarExports({name: target or f"{module}.{name}" for name, target in table.names.items()},
                       table.maybe)
