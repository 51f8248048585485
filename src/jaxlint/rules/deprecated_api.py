"""JAX602: deprecated or removed JAX APIs, driven by the shipped deprecation table."""
from __future__ import annotations

from typing import Sequence

import libcst as cst

from ..syntax.references import is_reference
from ..catalogue.deprecations import Deprecation, load_table, version_text
from ..semantic.scopes import dotted_name, import_module_name
from ..rulebase.node_fix import NodeFix, Replace
from ..rulebase.rule import Rule


#: `jax.ops.index_update(x, idx, y)` and its kin -> the `.at[idx]` method with the same meaning
INDEX_UPDATE_METHODS = {"jax.ops.index_update": "set", "jax.ops.index_add": "add", "jax.ops.index_mul": "multiply",
                        "jax.ops.index_min": "min", "jax.ops.index_max": "max"}
#: keyword arguments of the index functions that the `.at[idx]` methods take under the same names
INDEX_UPDATE_OPTIONS = frozenset({"indices_are_sorted", "unique_indices"})
#: expressions that need no parentheses in front of `.at[...]`
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


class _EveryName(frozenset):
    """Contains every name (a file with a star import may bind any name to a JAX path)."""

    def __contains__(self, name: object) -> bool:
        return True


_EVERY_NAME = _EveryName()


class DeprecatedApi(Rule):
    code = "JAX602"
    fixable = True

    def __init__(self, context) -> None:
        super().__init__(context)
        self.table = load_table()
        self.target = self.analysis.settings.target_jax_version
        self.in_import = 0
        self._guards: dict[int, bool] = {}
        self._roots: frozenset[str] | None = None
        self._own_properties: frozenset[str] | None = None

    def report(self, node: cst.CSTNode, message: str, fix: NodeFix | None = None) -> None:
        if not self._in_compat_fallback():
            super().report(node, message, fix)

    # -- version-compatibility code ---------------------------------------------------------------
    def _in_compat_fallback(self) -> bool:
        """Whether the current node only runs on the JAX versions that have the old API: a branch of an
        `if` that tests JAX's version or feature-detects an attribute of JAX, the `except
        (ImportError, AttributeError)` handler that falls back when the new spelling is missing, or
        an import of the old name attempted in a `try` whose handler catches its absence."""
        chain = self.walk.ancestors
        for index in range(len(chain) - 2, -1, -1):
            node, child = chain[index], chain[index + 1]
            if isinstance(node, (cst.If, cst.IfExp)) and child is not node.test and self._compat_test(node.test):
                return True
            if isinstance(node, cst.ExceptHandler) and child is node.body \
                    and self.analysis.version_guards.catches_missing_api(node, self.walk.scope):
                return True
            # `try: from jax.sharding import use_mesh` / `except ImportError:`: the import of the
            # old name is only attempted, on a JAX without it the handler runs instead
            if isinstance(node, cst.Try) and child is node.body and self.in_import and any(
                    self.analysis.version_guards.catches_missing_api(handler, self.walk.scope)
                    for handler in node.handlers):
                return True
        return False

    def _compat_test(self, test: cst.BaseExpression) -> bool:
        if id(test) not in self._guards:
            self._guards[id(test)] = self.analysis.version_guards.tests_jax_version(test, self.walk.scope)
        return self._guards[id(test)]

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
        if module is None or type(node.names) is cst.ImportStar:
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
            if len(node.names) == 1 and entry.fixable_for(self.target):
                if entry.symbol == qualified:
                    fix = self._from_import_fix(node, alias, entry, entry.replacement)
                elif entry.kind == "module":  # `from jax.api import jit`: the same name in the new module
                    fix = self._from_import_fix(node, alias, entry, entry.replacement + qualified[len(entry.symbol):])
            self.report(alias, self._message(entry, qualified), fix)

    def leave_ImportFrom(self, original_node: cst.ImportFrom) -> None:
        self.in_import -= 1

    def _from_import_fix(self, node: cst.ImportFrom, alias: cst.ImportAlias, entry: Deprecation,
                         replacement: str) -> NodeFix | None:
        module, _, name = replacement.rpartition(".")
        local = alias.asname.name.value if alias.asname else alias.name.value  # type: ignore[union-attr]
        if not module:  # `from jax import api` -> `import jax as api`
            text = f"import {replacement}" + ("" if local == replacement else f" as {local}")
        else:
            text = f"from {module} import {name}" + ("" if local == name else f" as {local}")
        return NodeFix(f"Import {replacement}", [Replace(node, text)])

    # -- uses -------------------------------------------------------------------------------------
    # Every Name and Attribute of the file comes through here: the cheap tests go first.
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in self.table.properties:
            self._check_property(node)
        parent = self.walk.parent
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
        parent = self.walk.parent
        if type(parent) is cst.Attribute and parent.value is node:
            return  # the start of a chain: checked with the whole
        if is_reference(node, parent):
            self._check_chain(node, node)

    def _check_chain(self, node: cst.Attribute | cst.Name, root: cst.Name) -> None:
        if self.in_import:
            return  # imports are reported above
        qualified = self.walk.written_name(node)
        if qualified is None or qualified.startswith("builtins."):
            return
        entry = self.table.lookup(qualified)
        if entry is None:
            return
        root_name = self.walk.written_name(root)
        if root_name and self.table.lookup(root_name) is not None:
            return  # the name was imported from a deprecated place: reported at the import
        if entry.symbol in INDEX_UPDATE_METHODS and self._called(node):
            return  # reported by visit_Call, with the `.at[...]` rewrite
        if entry.symbol == "jax.ops.index" and self._index_of_update_call():
            return  # rewritten with the call around it
        deprecated = node
        for _ in range(qualified.count(".") - entry.symbol.count(".")):
            deprecated = deprecated.value  # type: ignore[union-attr]
        self.report(deprecated, self._message(entry, entry.symbol), self._chain_fix(deprecated, entry))

    def _called(self, node: cst.BaseExpression) -> bool:
        parent = self.walk.parent
        return type(parent) is cst.Call and parent.func is node

    def _index_of_update_call(self) -> bool:
        """Whether the current node is `jax.ops.index` in `index_update(x, jax.ops.index[...], y)`."""
        chain = self.walk.ancestors
        if len(chain) < 4 or type(chain[-2]) is not cst.Subscript or type(chain[-3]) is not cst.Arg:
            return False
        call = chain[-4]
        return type(call) is cst.Call and self.walk.written_name(call.func) in INDEX_UPDATE_METHODS

    # -- attributes of JAX arrays ---------------------------------------------------------------
    def _check_property(self, node: cst.Attribute) -> None:
        """`arr.device_buffer`: read on a value, in a file that uses JAX and does not define an
        attribute of that name itself."""
        name = node.attr.value
        if self.in_import or name in self._properties_defined_here() or not self._uses_jax():
            return
        if self.walk.qualified_name(node.value) is not None:
            return  # `module.device_buffer`: a name from some module, not an array's attribute
        entry = self.table.properties[name]
        self.report(node.attr, self._message(entry, f".{name}"))

    def _properties_defined_here(self) -> frozenset[str]:
        """Names of the table's array properties that this file binds itself (`self.device_buffer =
        ...`, a method or class attribute of that name): there the attribute is the file's own."""
        if self._own_properties is None:
            wanted = self.table.properties
            own: set[str] = set()
            model = self.analysis.semantic
            for site in model.sites_of(cst.Assign, cst.AnnAssign, cst.AugAssign, cst.FunctionDef):
                node = site.node
                if type(node) is cst.FunctionDef:
                    targets = [node.name]
                elif type(node) is cst.Assign:
                    targets = [t.target for t in node.targets]
                else:
                    targets = [node.target]
                for target in targets:
                    written = target.attr.value if type(target) is cst.Attribute else (
                        target.value if type(target) is cst.Name else None)
                    if written in wanted:
                        own.add(written)
            self._own_properties = frozenset(own)
        return self._own_properties

    def _uses_jax(self) -> bool:
        roots = self._path_roots()
        if roots is _EVERY_NAME:
            return "jax" in self.analysis.source
        scope = self.analysis.module_scope
        names = self.analysis.names
        return any((names.name(root, scope) or "").startswith(("jax.", "jaxlib")) or names.name(root, scope) == "jax"
                   for root in roots)

    def _path_roots(self) -> frozenset[str]:
        """The names a dotted path into JAX can start with here: those bound by an import, or by an
        alias of a dotted name (`jnp = jax.numpy`); every name when a star import may bind any."""
        if self._roots is None:
            model = self.analysis.semantic
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
            self._roots = _EVERY_NAME if "import *" in self.analysis.source else frozenset(roots)
        return self._roots

    def _chain_fix(self, node: cst.BaseExpression, entry: Deprecation) -> NodeFix | None:
        if not entry.fixable_for(self.target):
            return None
        prefix = node
        while isinstance(prefix, cst.Attribute):
            prefix = prefix.value
            known = self.walk.written_name(prefix)
            if known and (entry.replacement == known or entry.replacement.startswith(known + ".")):
                text = self.analysis.module.code_for_node(prefix) + entry.replacement[len(known):]
                return NodeFix(f"Use {entry.replacement}", [Replace(node, text)])
        return None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is cst.Attribute and not node.args:
            entry = self.table.methods.get(func.attr.value)
            if entry is not None and self.walk.qualified_name(func.value) is None and not self._on_property(func.value):
                self.report(func.attr, self._message(entry, f".{func.attr.value}()"))
            return
        callee = self.walk.written_name(func) or ""
        args = node.args
        if callee == "functools.partial" and args and args[0].keyword is None and not args[0].star:
            # `partial(jax.jit, backend="cpu")`: the keywords go to the partial's function
            callee, args = self.walk.written_name(args[0].value) or "", args[1:]
        if callee in INDEX_UPDATE_METHODS:
            self._check_index_update(node, callee)
            return
        positionals = self.table.positionals.get(callee)
        if positionals:
            self._check_positionals(args, positionals)
        flags = self.table.flags.get(callee)
        if flags:
            self._check_flag(args, flags)
        keywords = self.table.keywords.get(callee)
        if not keywords:
            return
        given = {arg.keyword.value for arg in args if arg.keyword is not None}
        for arg in args:
            entry = keywords.get(arg.keyword.value) if arg.keyword else None
            if entry is None:
                continue
            fix = None
            # `clip(x, a_min=0, min=1)`: renaming would repeat a keyword, which CPython rejects
            if entry.fixable_for(self.target) and entry.replacement not in given:
                fix = NodeFix(f"Rename `{arg.keyword.value}=` to `{entry.replacement}=`",  # type: ignore[union-attr]
                              [Replace(arg.keyword, entry.replacement)])  # type: ignore[arg-type]
            self.report(arg, self._message(entry, f"{arg.keyword.value}="), fix)  # type: ignore[union-attr]

    def _check_positionals(self, args: Sequence[cst.Arg], positionals: dict[int, Deprecation]) -> None:
        """`jnp.array(x, dtype, False)`: an argument given by position where JAX now wants a keyword.
        Reported once per call, at the first such argument; the fix names every one of them, where
        each position's parameter is known and the rewrite is exact."""
        given: list[cst.Arg] = []
        for arg in args:
            if arg.keyword is not None or arg.star == "**":
                break
            if arg.star:
                return  # `f(*xs)`: which argument lands where is not known
            given.append(arg)
        late = [index for index in range(len(given)) if index in positionals]
        if not late:
            return
        first = positionals[late[0]]
        rewritten = [(given[index], positionals.get(index)) for index in range(late[0], len(given))]
        fix = None
        keywords = {arg.keyword.value for arg in args if arg.keyword is not None}
        if all(entry is not None and entry.fixable_for(self.target) and entry.replacement not in keywords
               for _, entry in rewritten):
            names = ", ".join(f"`{entry.replacement}=`" for _, entry in rewritten)  # type: ignore[union-attr]
            fix = NodeFix(f"Pass {names} by keyword", [
                Replace(arg.value, f"{entry.replacement}={self.analysis.module.code_for_node(arg.value)}")  # type: ignore[union-attr]
                for arg, entry in rewritten])
        self.report(given[late[0]], self._message(first, f"{late[0] + 1}"), fix)

    def _check_flag(self, args: Sequence[cst.Arg], flags: dict[str, Deprecation]) -> None:
        """`jax.config.update("jax_array", True)`: a configuration flag JAX removed."""
        if not args or args[0].keyword is not None or args[0].star:
            return
        flag = args[0].value
        name = flag.evaluated_value if type(flag) is cst.SimpleString else None
        entry = flags.get(name) if isinstance(name, str) else None
        if entry is not None:
            self.report(args[0], self._message(entry, name))  # type: ignore[arg-type]

    def visit_With(self, node: cst.With) -> None:
        if not self.table.contexts:
            return
        for item in node.items:
            entry = self._context_entry(item.item)
            if entry is not None:
                self.report(item.item, self._message(entry, self.analysis.module.code_for_node(item.item)))

    def _context_entry(self, manager: cst.BaseExpression) -> Deprecation | None:
        """The entry of the constructor that made `manager` (`with Mesh(...):`, or a name every
        binding reaching this `with` gives such a call), or None when not known."""
        if type(manager) is cst.Call:
            return self.table.contexts.get(self.walk.written_name(manager.func) or "")
        if type(manager) is not cst.Name:
            return None
        found = self.analysis.name_origins.reaching(manager, self.walk.scope)
        if not found or not found[1]:
            return None
        entries = set()
        for origin in found[1]:
            if origin.kind != "value" or type(origin.value) is not cst.Call:
                return None
            entry = self.table.contexts.get(self.analysis.names.qualified_name(origin.value.func, found[0]) or "")
            if entry is None:
                return None
            entries.add(entry)
        return entries.pop() if len(entries) == 1 else None

    def _on_property(self, receiver: cst.BaseExpression) -> bool:
        """`arr.device_buffer.device()`, `arr.device_buffers[0].device()`: the method of the buffer
        the removed property returned; the property is what is reported."""
        if type(receiver) is cst.Subscript:
            receiver = receiver.value
        return type(receiver) is cst.Attribute and receiver.attr.value in self.table.properties

    def _check_index_update(self, node: cst.Call, callee: str) -> None:
        entry = self.table.lookup(callee)
        if entry is None:
            return
        fix = self._index_update_fix(node, INDEX_UPDATE_METHODS[callee])
        self.report(node.func, self._message(entry, callee), fix)

    def _index_update_fix(self, node: cst.Call, method: str) -> NodeFix | None:
        """`index_update(x, idx, y)` -> `x.at[idx].set(y)`, the same scatter with the same options;
        `jax.ops.index[1:3]` as the index becomes `1:3` inside the brackets."""
        args = node.args
        if len(args) < 3 or any(arg.star or arg.keyword is not None for arg in args[:3]):
            return None
        options = args[3:]
        if any(arg.star or arg.keyword is None or arg.keyword.value not in INDEX_UPDATE_OPTIONS for arg in options):
            return None
        code = self.analysis.module.code_for_node
        array, index, values = (arg.value for arg in args[:3])
        if not self._known_jax_array(array):
            return None  # `index_update` took NumPy arrays too, which have no `.at`
        target = code(array) if isinstance(array, _ATOMS) else f"({code(array)})"
        if type(index) is cst.Subscript and self.walk.written_name(index.value) == "jax.ops.index":
            where = ", ".join(code(element.slice) for element in index.slice)
        else:
            where = code(index)
        extra = "".join(f", {arg.keyword.value}={code(arg.value)}" for arg in options)  # type: ignore[union-attr]
        text = f"{target}.at[{where}].{method}({code(values)}{extra})"
        return NodeFix(f"Use {target}.at[...].{method}(...)", [Replace(node, text)])

    def _known_jax_array(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` is a JAX array: a traced value, or the result of a `jax.numpy` or
        `jax.random` call."""
        if type(expr) is cst.Call:
            callee = self.walk.qualified_name(expr.func) or ""
            if callee.startswith(("jax.numpy.", "jax.random.", "jax.lax.")):
                return True
        return self.analysis.value(expr, at=self.walk).array_or_traced_argument

    # -- messages ---------------------------------------------------------------------------------
    def _message(self, entry: Deprecation, written: str) -> str:
        what = f"`{written}`"
        function = entry.symbol.partition(":")[0]
        if entry.kind == "keyword":
            what = f"`{function}({written}...)`"
        elif entry.kind == "positional":
            what = f"positional argument {written} of `{function}` (`{entry.replacement}`)"
        elif entry.kind == "config":
            what = f"the configuration flag `{written}`"
        elif entry.kind == "context":
            what = f"`with {written}:` on a `jax.sharding.Mesh`"
        history = []
        if entry.deprecated_in and entry.deprecated_in == entry.removed_in:
            history.append(f"removed in JAX {version_text(entry.removed_in)}")  # without a deprecation period
        else:
            if entry.deprecated_in:
                history.append(f"deprecated in JAX {version_text(entry.deprecated_in)}")
            if entry.removed_in:
                history.append(f"removed in {version_text(entry.removed_in)}")
        status = " and ".join(history) if history else "deprecated"
        if entry.replacement and entry.mechanical:
            if entry.kind == "keyword":
                advice = f"write `{entry.replacement}=` instead, the same argument under its new name"
            elif entry.kind == "positional":
                advice = f"pass it by keyword, `{entry.replacement}=...`"
            else:
                # `jax.api.jit` through the removed module `jax.api`: name the new path of `jit` itself
                inside = written[len(entry.symbol):] if written.startswith(entry.symbol + ".") else ""
                advice = f"use `{entry.replacement}{inside}`, the same API under its new name"
            if not entry.fixable_for(self.target) and entry.replacement_since and self.target:
                advice += (f" (not fixed automatically: it needs JAX >= {version_text(entry.replacement_since)}, "
                           f"newer than target-jax-version {version_text(self.target)})")
        elif entry.kind == "context":
            advice = f"write `with {entry.replacement}({written}):` instead, which sets the mesh for the block"
        else:
            advice = entry.advice or (f"use `{entry.replacement}` instead" if entry.replacement else "remove this use")
        return f"{what} is {status}; {advice}"
