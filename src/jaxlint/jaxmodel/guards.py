"""Code that runs only on some versions of JAX: the branches of an `if` that tests JAX's version or
feature-detects an attribute, and the `except` handler of a `try` whose body uses a newer API.

A use of an old API there is the compatibility code it is meant to be, not a use to report.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ..catalogue.deprecations import load_table
from ..semantic.scopes import MISSING_API_ERRORS as MISSING_API_ERROR_NAMES, Scope

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

#: Exceptions a version-compatibility `try` catches when the newer spelling is missing, as their
#: qualified names read
MISSING_API_ERRORS = frozenset(f"builtins.{name}" for name in MISSING_API_ERROR_NAMES)
#: Version attributes of JAX and jaxlib, compared in `if jax.__version_info__ >= (0, 4, 30):`.
VERSION_NAMES = ("jax.__version__", "jax.__version_info__", "jax.version.", "jaxlib.__version__",
                 "jaxlib.version.", "jax.lib.__version__", "jax.lib.version")


class VersionGuards:
    """Recognises the tests and handlers that select code by JAX version, for one file. Nothing is
    computed up front; each question reads only the node it is asked about."""

    def __init__(self, file: "SourceFile") -> None:
        self._names = file.names
        self._table = load_table()

    @classmethod
    def of(cls, file: "SourceFile") -> "VersionGuards":
        return file.fact(cls)

    def tests_jax_version(self, test: cst.BaseExpression, scope: Scope) -> bool:
        """Whether an `if` test (names read from `scope`) depends on JAX's version: it compares a
        version attribute (`jax.__version_info__`, or a name such as `_JAX_VERSION`), or asks
        `hasattr`/`getattr` about JAX (`hasattr(jax, "tree")`) or about an array attribute the
        deprecation table knows (`hasattr(x, "device_buffers")`). One walk of the test's
        expressions (not into lambdas), ended by the first that does."""
        return any(self._version_part(part, scope) for part in _subexpressions(test))

    def catches_missing_api(self, handler: cst.ExceptHandler, scope: Scope) -> bool:
        """Whether an `except` handler catches what a missing API raises (`ImportError`,
        `AttributeError`): the fallback of a `try` that uses the newer spelling."""
        caught = handler.type
        if caught is None:
            return False
        names = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
        return any(self._names.qualified_name(name, scope) in MISSING_API_ERRORS for name in names)

    def _version_part(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        qualified_name = self._names.qualified_name
        if isinstance(expr, cst.Call):
            callee = qualified_name(expr.func, scope)
            if callee in ("builtins.hasattr", "builtins.getattr") and expr.args:
                owner = qualified_name(expr.args[0].value, scope)
                if owner is not None and (owner == "jax" or owner.startswith(("jax.", "jaxlib"))):
                    return True
                # an array attribute only some versions have: the branch runs only where they do
                return len(expr.args) >= 2 and self._names_array_attribute(expr.args[1].value)
            return False
        if isinstance(expr, (cst.Name, cst.Attribute)):
            name = qualified_name(expr, scope)
            if name is not None and name.startswith(VERSION_NAMES):
                return True
            written = expr.value if isinstance(expr, cst.Name) else expr.attr.value
            lowered = written.lower()
            return "jax" in lowered and "version" in lowered  # `_JAX_VERSION`, `jax_version`
        return False

    def _names_array_attribute(self, expr: cst.BaseExpression) -> bool:
        if type(expr) is not cst.SimpleString:
            return False
        name = expr.evaluated_value
        return name in self._table.properties or name in self._table.methods


def _subexpressions(expr: cst.CSTNode):
    """The expression and the expressions inside it (not inside lambdas)."""
    pending = [expr]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.BaseExpression):
            yield node
        if not isinstance(node, cst.Lambda):
            pending.extend(node.children)
