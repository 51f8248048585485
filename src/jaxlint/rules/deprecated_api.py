"""JAX602: deprecated or removed JAX APIs, driven by the shipped deprecation table."""
from __future__ import annotations

import libcst as cst

from ..rulebase.context import is_reference
from ..catalogue.deprecations import Deprecation, load_table, version_text
from ..semantic.scopes import MISSING_API_ERRORS as FALLBACK_ERRORS, dotted_name, import_module_name
from ..rulebase.node_fix import NodeFix, Replace
from ..rulebase.rule import Rule
from ..semantic.model import SemanticModel


#: Exceptions a version-compatibility `try` catches when the newer spelling is missing, as their
#: qualified names read
MISSING_API_ERRORS = frozenset(f"builtins.{name}" for name in FALLBACK_ERRORS)
#: Version attributes of JAX and jaxlib, compared in `if jax.__version_info__ >= (0, 4, 30):`.
VERSION_NAMES = ("jax.__version__", "jax.__version_info__", "jax.version.", "jaxlib.__version__",
                 "jaxlib.version.", "jax.lib.__version__", "jax.lib.version")


class _EveryName(frozenset):
    """Contains every name (a file with a star import may bind any name to a JAX path)."""

    def __contains__(self, name: object) -> bool:
        return True


_EVERY_NAME = _EveryName()


class DeprecatedApi(Rule):
    code = "JAX602"
    fixable = True

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.table = load_table()
        self.target = ctx.settings.target_jax_version
        self.in_import = 0
        self._guards: dict[int, bool] = {}
        self._roots: frozenset[str] | None = None

    def report(self, node: cst.CSTNode, message: str, fix: NodeFix | None = None) -> None:
        if not self._in_compat_fallback():
            super().report(node, message, fix)

    # -- version-compatibility code ---------------------------------------------------------------
    def _in_compat_fallback(self) -> bool:
        """Whether the current node only runs on the JAX versions that have the old API: a branch of an
        `if` that tests JAX's version or feature-detects an attribute of JAX, or the `except
        (ImportError, AttributeError)` handler that falls back when the new spelling is missing."""
        chain = self.ctx.ancestors
        for index in range(len(chain) - 2, -1, -1):
            node, child = chain[index], chain[index + 1]
            if isinstance(node, (cst.If, cst.IfExp)) and child is not node.test and self._compat_test(node.test):
                return True
            if isinstance(node, cst.ExceptHandler) and child is node.body and self._catches_missing_api(node):
                return True
        return False

    def _compat_test(self, test: cst.BaseExpression) -> bool:
        if id(test) not in self._guards:
            self._guards[id(test)] = any(self._compat_part(part) for part in _subexpressions(test))
        return self._guards[id(test)]

    def _compat_part(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            callee = self.ctx.qualified_name(expr.func)
            if callee in ("builtins.hasattr", "builtins.getattr") and expr.args:
                owner = self.ctx.qualified_name(expr.args[0].value)
                return owner is not None and (owner == "jax" or owner.startswith(("jax.", "jaxlib")))
            return False
        if isinstance(expr, (cst.Name, cst.Attribute)):
            name = self.ctx.qualified_name(expr)
            if name is not None and name.startswith(VERSION_NAMES):
                return True
            written = expr.value if isinstance(expr, cst.Name) else expr.attr.value
            lowered = written.lower()
            return "jax" in lowered and "version" in lowered  # `_JAX_VERSION`, `jax_version`
        return False

    def _catches_missing_api(self, handler: cst.ExceptHandler) -> bool:
        caught = handler.type
        if caught is None:
            return False
        names = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
        return any(self.ctx.qualified_name(name) in MISSING_API_ERRORS for name in names)

    # -- imports --------------------------------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        self.in_import += 1
        for alias in node.names:
            name = dotted_name(alias.name)
            entry = self.table.lookup(name) if name else None
            if entry is None:
                continue
            fix = None
            if alias.asname is not None and entry.symbol == name and entry.fixable_for(self.target):
                fix = NodeFix(f"Import {entry.replacement}", [Replace(alias.name, entry.replacement)])
            self.report(alias, self._message(entry, name), fix)

    def leave_Import(self, original_node: cst.Import) -> None:
        self.in_import -= 1

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.in_import += 1
        module = import_module_name(node)
        if module is None or isinstance(node.names, cst.ImportStar):
            entry = self.table.lookup(module) if module else None
            if entry is not None:
                self.report(node, self._message(entry, module))
            return
        for alias in node.names:
            if not isinstance(alias.name, cst.Name):
                continue
            qualified = f"{module}.{alias.name.value}"
            entry = self.table.lookup(qualified)
            if entry is None:
                continue
            fix = None
            if entry.symbol == qualified and len(node.names) == 1 and entry.fixable_for(self.target):
                fix = self._from_import_fix(node, alias, entry)
            self.report(alias, self._message(entry, qualified), fix)

    def leave_ImportFrom(self, original_node: cst.ImportFrom) -> None:
        self.in_import -= 1

    def _from_import_fix(self, node: cst.ImportFrom, alias: cst.ImportAlias, entry: Deprecation) -> NodeFix | None:
        module, _, name = entry.replacement.rpartition(".")
        if not module:
            return None
        local = alias.asname.name.value if alias.asname else alias.name.value  # type: ignore[union-attr]
        text = f"from {module} import {name}" + ("" if local == name else f" as {local}")
        return NodeFix(f"Import {entry.replacement}", [Replace(node, text)])

    # -- uses -------------------------------------------------------------------------------------
    # Every Name and Attribute of the file comes through here: the cheap tests go first.
    def visit_Attribute(self, node: cst.Attribute) -> None:
        parent = self.ctx.parent
        if type(parent) is cst.Attribute and parent.value is node:
            return  # an inner part of a chain: checked with the whole
        root = node.value
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is cst.Name and root.value in (self._roots or self._path_roots()):
            self._check_chain(node, root)

    def names_wanted(self) -> frozenset[str] | None:
        roots = self._path_roots()
        return None if roots is _EVERY_NAME else roots

    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in (self._roots or self._path_roots()):
            return  # a parameter, a local value: never a path into JAX
        parent = self.ctx.parent
        if type(parent) is cst.Attribute and parent.value is node:
            return  # the start of a chain: checked with the whole
        if is_reference(node, parent):
            self._check_chain(node, node)

    def _check_chain(self, node: cst.Attribute | cst.Name, root: cst.Name) -> None:
        if self.in_import:
            return  # imports are reported above
        qualified = self.ctx.qualified_name(node)
        if qualified is None or qualified.startswith("builtins."):
            return
        entry = self.table.lookup(qualified)
        if entry is None:
            return
        root_name = self.ctx.qualified_name(root)
        if root_name and self.table.lookup(root_name) is not None:
            return  # the name was imported from a deprecated place: reported at the import
        deprecated = node
        for _ in range(qualified.count(".") - entry.symbol.count(".")):
            deprecated = deprecated.value  # type: ignore[union-attr]
        self.report(deprecated, self._message(entry, entry.symbol), self._chain_fix(deprecated, entry))

    def _path_roots(self) -> frozenset[str]:
        """The names a dotted path into JAX can start with here: those bound by an import, or by an
        alias of a dotted name (`jnp = jax.numpy`); every name when a star import may bind any."""
        if self._roots is None:
            model = SemanticModel.of(self.ctx.file)
            roots: set[str] = set()
            for site in model.sites_of(cst.ImportAlias, cst.Assign, cst.AnnAssign):
                node = site.node
                if type(node) is cst.ImportAlias:
                    bound = node.asname.name if node.asname is not None else node.name
                    while type(bound) is cst.Attribute:
                        bound = bound.value
                    if type(bound) is cst.Name:
                        roots.add(bound.value)
                elif type(node.value) in (cst.Name, cst.Attribute):
                    targets = node.targets if type(node) is cst.Assign else [node]
                    roots.update(t.target.value for t in targets if type(t.target) is cst.Name)
            self._roots = _EVERY_NAME if "import *" in self.ctx.source else frozenset(roots)
        return self._roots

    def _chain_fix(self, node: cst.BaseExpression, entry: Deprecation) -> NodeFix | None:
        if not entry.fixable_for(self.target):
            return None
        prefix = node
        while isinstance(prefix, cst.Attribute):
            prefix = prefix.value
            known = self.ctx.qualified_name(prefix)
            if known and entry.replacement.startswith(known + "."):
                text = self.ctx.module.code_for_node(prefix) + entry.replacement[len(known):]
                return NodeFix(f"Use {entry.replacement}", [Replace(node, text)])
        return None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and not node.args:
            entry = self.table.methods.get(func.attr.value)
            if entry is not None and self.ctx.qualified_name(func.value) is None:
                self.report(func.attr, self._message(entry, f".{func.attr.value}()"))
            return
        keywords = self.table.keywords.get(self.ctx.qualified_name(func) or "")
        if not keywords:
            return
        given = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        for arg in node.args:
            entry = keywords.get(arg.keyword.value) if arg.keyword else None
            if entry is None:
                continue
            fix = None
            # `clip(x, a_min=0, min=1)`: renaming would repeat a keyword, which CPython rejects
            if entry.fixable_for(self.target) and entry.replacement not in given:
                fix = NodeFix(f"Rename `{arg.keyword.value}=` to `{entry.replacement}=`",  # type: ignore[union-attr]
                              [Replace(arg.keyword, entry.replacement)])  # type: ignore[arg-type]
            self.report(arg, self._message(entry, f"{arg.keyword.value}="), fix)  # type: ignore[union-attr]

    # -- messages ---------------------------------------------------------------------------------
    def _message(self, entry: Deprecation, written: str) -> str:
        what = f"`{written}`"
        if entry.kind == "keyword":
            what = f"`{entry.symbol.partition(':')[0]}({written}...)`"
        history = []
        if entry.deprecated_in:
            history.append(f"deprecated in JAX {version_text(entry.deprecated_in)}")
        if entry.removed_in:
            history.append(f"removed in {version_text(entry.removed_in)}")
        status = " and ".join(history) if history else "deprecated"
        if entry.replacement and entry.mechanical:
            if entry.kind == "keyword":
                advice = f"write `{entry.replacement}=` instead, the same argument under its new name"
            else:
                advice = f"use `{entry.replacement}`, the same API under its new name"
            if not entry.fixable_for(self.target) and entry.replacement_since and self.target:
                advice += (f" (not fixed automatically: it needs JAX >= {version_text(entry.replacement_since)}, "
                           f"newer than target-jax-version {version_text(self.target)})")
        else:
            advice = entry.advice or (f"use `{entry.replacement}` instead" if entry.replacement else "remove this use")
        return f"{what} is {status}; {advice}"


def _subexpressions(expr: cst.CSTNode):
    """The expression and the expressions inside it (not inside lambdas)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BaseExpression):
            yield node
        if not isinstance(node, cst.Lambda):
            stack.extend(node.children)
