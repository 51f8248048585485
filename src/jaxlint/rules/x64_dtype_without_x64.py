"""JAX402: a 64-bit dtype requested from JAX while `jax_enable_x64` is off: silently 32 bits."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.values import ARRAY_MODULES, DTYPE_QUERIES
from ..syntax.comments import comment_texts
from ..syntax.references import is_reference
from ..rulebase.rule import Rule
from ..semantic.scopes import Scope

#: 64-bit dtype names (in `jax.numpy` and `numpy`) and the 32-bit type JAX gives instead.
NARROWED = {
    "float64": "float32", "double": "float32", "float_": "float32",
    "int64": "int32", "longlong": "int32",
    "uint64": "uint32", "ulonglong": "uint32",
    "complex128": "complex64", "cdouble": "complex64", "complex_": "complex64",
}
#: dtype strings NumPy reads as 64-bit types.
NARROWED_STRINGS = {
    **{name: narrow for name, narrow in NARROWED.items() if not name.endswith("_")},
    "f8": "float32", "i8": "int32", "u8": "uint32", "c16": "complex64",
}
#: Functions whose dtype can be given positionally: the position.
POSITIONAL_DTYPE = {
    **{f"jax.numpy.{name}": 1 for name in (
        "zeros", "ones", "empty", "zeros_like", "ones_like", "empty_like", "array", "asarray", "identity", "astype")},
    "jax.numpy.full": 2, "jax.numpy.full_like": 2, "jax.lax.convert_element_type": 1,
}
DTYPE_KEYWORDS = frozenset({"dtype", "new_dtype"})
ENABLING = frozenset({"jax.enable_x64", "jax.experimental.enable_x64", "jax.experimental.x64_context.enable_x64"})
DISABLING = frozenset({"jax.experimental.disable_x64", "jax.experimental.x64_context.disable_x64"})
_FALSE = ("False", "0")


class X64DtypeWithoutX64(Rule):
    code = "JAX402"

    def __init__(self, context) -> None:
        super().__init__(context)
        #: (node, message, x64 state of the enclosing `with` blocks, inside a function)
        self.candidates: list[tuple[cst.CSTNode, str, str | None, bool]] = []
        #: `with` blocks that switch x64 on ("on") or off ("off"), innermost last
        self.blocks: list[tuple[cst.With, str]] = []
        #: the file turns x64 on (config update, environment, flag), or may do so from a function
        self.enabled_in_file = False
        self.enabling_blocks = False
        self.false_updates: set[int] = set()
        #: id() of parameters whose default was looked at as a dtype
        self.defaults_seen: set[int] = set()

    # -- x64 switches -----------------------------------------------------------------------------
    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            state = self._switch(item.item)
            if state is not None:
                self.blocks.append((node, state))
                if state == "on":
                    self.enabling_blocks = True

    def leave_With(self, node: cst.With) -> None:
        while self.blocks and self.blocks[-1][0] is node:
            self.blocks.pop()

    def _switch(self, expr: cst.BaseExpression) -> str | None:
        if not isinstance(expr, cst.Call):
            return None
        callee = self._switch_name(expr.func)
        if callee in DISABLING:
            return "off"
        if callee in ENABLING:
            if expr.args and _literal(expr.args[0].value) in _FALSE:
                return "off"
            return "on"
        return None

    def _switch_name(self, func: cst.BaseExpression) -> str | None:
        """The x64 switch a callee names, also when its import depends on the JAX version:
        `try: from jax import enable_x64` / `except ImportError: from jax.experimental import enable_x64`."""
        callee = self.walk.qualified_name(func)
        if callee is not None or type(func) is not cst.Name:
            return callee
        found = self.walk.scope.lookup(func.value)
        if found is None:
            return None
        targets = set(found[1].targets)
        for group in (ENABLING, DISABLING):
            if targets and targets <= group:
                return next(iter(sorted(targets)))
        return None

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # `jax.config.jax_enable_x64 = True`, `if jax.config.x64_enabled:`: the file handles x64 itself.
        if node.attr.value in ("jax_enable_x64", "x64_enabled"):
            self.enabled_in_file = True

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        # `os.environ["JAX_ENABLE_X64"] = "1"`, `--jax_enable_x64` flags, `config.update("jax_enable_x64", …)`
        if _names_x64_switch(node.value) and id(node) not in self.false_updates:
            self.enabled_in_file = True

    def _comments_name_x64_switch(self) -> bool:
        """`# Enable the jax flag jax_enable_x64 for this to work, otherwise it will default to
        float32.`: the author knows the request needs 64-bit mode and says what happens without it,
        as a mention in a string or a config update shows. Read only when there is something to report."""
        source = self.analysis.source
        if "x64" not in source.lower():
            return False
        return any(_names_x64_switch(comment) for comment in comment_texts(source))

    # -- requests ---------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        walk, analysis = self.walk, self.analysis
        self._note_update(node)
        callee = self._switch_name(node.func)
        if callee in ENABLING or callee in DISABLING:
            if not isinstance(walk.parent, cst.WithItem):
                self.enabling_blocks = True  # entered elsewhere (a decorator, an ExitStack): not followed
            return
        if callee is not None and callee.startswith("jax.numpy."):
            narrow = NARROWED.get(callee[len("jax.numpy."):])
            if narrow is not None and node.args:
                self._candidate(node, f"`{analysis.module.code_for_node(node.func)}(...)`", narrow)
                return
        if callee is not None and callee.startswith(ARRAY_MODULES) and callee not in DTYPE_QUERIES:
            position = POSITIONAL_DTYPE.get(callee)
            for index, arg in enumerate(node.args):
                if arg.star:
                    break
                if (arg.keyword is not None and arg.keyword.value in DTYPE_KEYWORDS) or (
                        arg.keyword is None and index == position):
                    self._dtype_argument(arg.value)
            return
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "astype" and callee is None:
            receiver = func.value
            if analysis.value(receiver, at=walk).array_or_traced_argument:  # NumPy arrays and pandas columns keep 64 bits
                for index, arg in enumerate(node.args):
                    if (arg.keyword is None and index == 0) or (arg.keyword is not None and arg.keyword.value == "dtype"):
                        self._dtype_argument(arg.value)

    def _note_update(self, node: cst.Call) -> None:
        """`jax.config.update("jax_enable_x64", False)` turns nothing on."""
        func = node.func
        if not (type(func) is cst.Attribute and func.attr.value == "update" and len(node.args) >= 2):
            return
        first = node.args[0].value
        if isinstance(first, cst.SimpleString) and first.evaluated_value == "jax_enable_x64":
            if _literal(node.args[1].value) in _FALSE:
                self.false_updates.add(id(first))

    def _dtype_argument(self, value: cst.BaseExpression) -> None:
        found = self._wide(value)
        if found is not None:
            self._candidate(value, f"`{self.analysis.module.code_for_node(value)}`", found)
        elif isinstance(value, cst.Name):
            self._defaulted_parameter(value)

    def _defaulted_parameter(self, name: cst.Name) -> None:
        """`def zeros(shape, dtype=jnp.float64): return jnp.zeros(shape, dtype)`: the 64-bit default
        is what every call that leaves `dtype` out asks JAX for. Reported at the default, once."""
        found = self.walk.scope.lookup(name.value)
        if found is None:
            return
        scope, binding = found
        if scope.kind != "function" or len(binding.nodes) != 1:
            return  # rebound in the body: the default may not be what reaches the call
        param = binding.nodes[0]
        if type(param) is not cst.Param or param.default is None or id(param) in self.defaults_seen:
            return
        self.defaults_seen.add(id(param))
        narrow = self._wide(param.default, scope.parent)
        if narrow is None or not self._default_used(scope.node, param.name.value):
            return
        written = self.analysis.module.code_for_node(param.default)
        self._candidate(
            param.default, f"`{param.name.value}={written}`, the default for calls that leave `{param.name.value}` out,",
            narrow)

    def _default_used(self, function: cst.CSTNode, param: str) -> bool:
        """Whether a call may leave `param` to its default: one of the file's calls of the function
        does, or the file never calls it (its callers are elsewhere). A function the file only hands
        on (`partial(f, …)`, `map(f, …)`) is left alone: what its callers pass is not known."""
        sites = self.analysis.traced.call_sites.get(id(function), ())
        if not sites:
            return not (isinstance(function, cst.FunctionDef) and self._referenced(function))
        for site in sites:
            if any(arg.star for arg in site.call.args):
                continue  # `f(*args, **options)` may pass it
            if param not in site.bind():
                return True
        return False

    def _referenced(self, function: cst.FunctionDef) -> bool:
        spelling = function.name.value
        for name, scope, parent in self.analysis.semantic.name_occurrences({spelling}):
            if name is function.name or not is_reference(name, parent):
                continue
            found = scope.lookup(spelling)
            if found is not None and any(node is function for node in found[1].nodes):
                return True
        return False

    def _wide(self, value: cst.BaseExpression, scope: Scope | None = None) -> str | None:
        """The 32-bit type JAX substitutes for a 64-bit dtype expression (read in `scope`, by default
        where the walk is), or None."""
        if type(value) is cst.SimpleString:
            text = value.evaluated_value
            return NARROWED_STRINGS.get(text) if isinstance(text, str) else None
        names, where = self.analysis.names, scope or self.walk.scope
        name = names.qualified_name(value, where)
        if name is not None:
            for module in ("jax.numpy.", "numpy."):
                if name.startswith(module):
                    return NARROWED.get(name[len(module):])
            return None
        if isinstance(value, cst.Call) and len(value.args) == 1 and names.qualified_name(value.func, where) in (
                "jax.numpy.dtype", "numpy.dtype"):
            return self._wide(value.args[0].value, where)
        return None

    def _candidate(self, node: cst.CSTNode, written: str, narrow: str) -> None:
        if self._under_wide_dtype_test(node):
            return
        state = self.blocks[-1][1] if self.blocks else None
        message = (
            f"{written} requests a 64-bit type, but `jax_enable_x64` is off: JAX silently makes {narrow} instead "
            f"(only a UserWarning); turn 64-bit mode on at startup with `jax.config.update(\"jax_enable_x64\", True)` "
            f"(or `JAX_ENABLE_X64=1`), or ask for `{narrow}` explicitly")
        self.candidates.append((node, message, state, self.walk.function() is not None))

    def _under_wide_dtype_test(self, node: cst.CSTNode) -> bool:
        """`if x.dtype == jnp.float64: y = y.astype(jnp.complex128)`: the branch runs only where `x`
        already holds a 64-bit type, which a JAX array does only with x64 on (and a NumPy array may
        hold at any time: not known here, so not reported either)."""
        chain = [*self.walk.ancestors, node]
        for parent, child in zip(chain, chain[1:]):
            kind = type(parent)
            if kind is cst.If and child is parent.body and self._tests_wide_dtype(parent.test):
                return True
            if kind is cst.IfExp and child is parent.body and self._tests_wide_dtype(parent.test):
                return True
        return False

    def _tests_wide_dtype(self, test: cst.BaseExpression) -> bool:
        if type(test) is cst.BooleanOperation:
            return test.operator.__class__ is cst.And and (
                self._tests_wide_dtype(test.left) or self._tests_wide_dtype(test.right))
        if type(test) is not cst.Comparison or len(test.comparisons) != 1:
            return False
        target = test.comparisons[0]
        if type(target.operator) not in (cst.Equal, cst.Is, cst.In):
            return False
        sides = (test.left, target.comparator)
        if not any(type(side) is cst.Attribute and side.attr.value == "dtype" for side in sides):
            return False
        for side in sides:
            options = [element.value for element in side.elements] \
                if type(side) in (cst.Tuple, cst.List, cst.Set) else [side]
            if any(self._wide(option) is not None for option in options):
                return True
        return False

    def finish(self) -> None:
        if self.analysis.settings.enable_x64:
            return  # the project turns x64 on outside the file (`enable-x64 = true` in the configuration)
        if self.candidates and not self.enabled_in_file and self._comments_name_x64_switch():
            self.enabled_in_file = True
        for node, message, state, in_function in self.candidates:
            if state == "on":
                continue
            if state is None and (self.enabled_in_file or (self.enabling_blocks and in_function)):
                continue  # the function may run inside the file's `jax.enable_x64(True)` block
            self.report(node, message)


def _names_x64_switch(text: str) -> bool:
    """Whether `text` names the process-wide 64-bit switch: the `jax_enable_x64` flag or the
    `JAX_ENABLE_X64` environment variable. The `enable_x64` context manager is not it: a file that
    scopes 64-bit mode to some blocks still gets 32 bits elsewhere."""
    return "jax_enable_x64" in text.lower()


def _literal(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Integer):
        return expr.value
    return None
