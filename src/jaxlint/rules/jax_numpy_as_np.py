"""JAX601: `jax.numpy` imported under NumPy's conventional name `np`."""
from __future__ import annotations

import libcst as cst

from ..syntax.references import is_reference
from ..semantic.scopes import Scope, dotted_name, import_module_name
from ..rulebase.node_fix import NodeFix, Replace
from ..rulebase.rule import Rule

WANTED = "jnp"


class JaxNumpyAsNp(Rule):
    code = "JAX601"
    fixable = True

    def __init__(self, context) -> None:
        super().__init__(context)
        self.imports: list[tuple[cst.ImportAlias, cst.Name, Scope]] = []

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            if dotted_name(alias.name) == "jax.numpy":
                self._check(alias)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if import_module_name(node) != "jax" or isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            if isinstance(alias.name, cst.Name) and alias.name.value == "numpy":
                self._check(alias)

    def _check(self, alias: cst.ImportAlias) -> None:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name) and alias.asname.name.value == "np":
            if not self._numpy_fallback(self.walk.scope):
                self.imports.append((alias, alias.asname.name, self.walk.scope))

    @staticmethod
    def _numpy_fallback(scope: Scope) -> bool:
        """`try: import jax.numpy as np` / `except ImportError: import numpy as np`: code written for
        both libraries on purpose, where `np` is the right name for either."""
        binding = scope.bindings.get("np")
        return binding is not None and any(binding.targets[i] == "numpy" for i in binding.fallbacks)

    def finish(self) -> None:
        if not self.imports:
            return
        occurrences = self.analysis.semantic.name_occurrences({"np", WANTED})
        for alias, alias_name, scope in self.imports:
            renames, problem = self._plan(alias_name, scope, occurrences)
            message = ("`jax.numpy` imported as `np`: readers and tools take `np` for NumPy, whose arrays "
                       "are mutable and eager; import it as `import jax.numpy as jnp`")
            if problem:
                self.report(alias, f"{message} (not fixed automatically: {problem})")
            else:
                fix = NodeFix("Import jax.numpy as jnp and rename its uses",
                              [Replace(name, WANTED) for name in renames])
                self.report(alias, message, fix)

    def _plan(self, alias_name: cst.Name, scope: Scope, occurrences) -> tuple[list[cst.Name], str | None]:
        binding = scope.bindings.get("np")
        if binding is None or set(binding.targets) != {"jax.numpy"}:
            return [], "`np` is also bound to something else in the same scope, e.g. NumPy; rename by hand"
        renames = [alias_name]
        for name, where, parent in occurrences:
            if name is alias_name or not is_reference(name, parent):
                continue
            found = where.lookup(name.value)
            owner = found[0] if found else None
            if name.value == "np" and owner is not None and owner.node is scope.node:
                clash = where.lookup(WANTED)
                if clash is not None and set(clash[1].targets) != {"jax.numpy"}:
                    return [], f"`{WANTED}` already names something else where `np` is used"
                renames.append(name)
            elif name.value == WANTED and owner is not None and set(owner.bindings[WANTED].targets) != {"jax.numpy"}:
                if owner.node is scope.node or owner.kind == "module":
                    return [], f"`{WANTED}` already names something else in this file"
        return renames, None
