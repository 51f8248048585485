"""JAX301: `print()` in a function whose body runs once per trace."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.values import MUST, STATIC_ATTRIBUTES
from ..rulebase.node_fix import NodeFix, Replace
from ..rulebase.rule import Rule

#: Calls whose result is a static description of their arguments (a length, a shape, an abstract
#: type), never the values of a tracer.
DESCRIBING_CALLS = frozenset({
    "builtins.len", "builtins.type", "builtins.isinstance", "builtins.callable", "builtins.hasattr",
    "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "numpy.shape", "numpy.ndim", "numpy.size",
    "jax.typeof", "jax.core.get_aval", "jax.eval_shape", "jax.tree.structure", "jax.tree_util.tree_structure",
    "jax.device_count", "jax.local_device_count", "jax.process_count", "jax.process_index",
    "jax.devices", "jax.local_devices", "jax.default_backend", "jax.sharding.get_abstract_mesh",
})
#: Calls that turn what they are given into text or a container: static when what they are given is.
FORMATTING_CALLS = frozenset({
    "builtins.str", "builtins.repr", "builtins.tuple", "builtins.list", "builtins.dict", "builtins.format",
    "builtins.int", "builtins.float", "builtins.bool", "builtins.sum", "builtins.max", "builtins.min",
})
#: Tree maps whose function, given a static description of each leaf, returns a static tree.
TREE_MAPS = frozenset({"jax.tree.map", "jax.tree_util.tree_map", "jax.tree_map"})
#: How many local names deep a static value is followed (`n = x.shape[0]`, `shape = (n, 2)`).
MAX_NAME_DEPTH = 3


class PrintInTraced(Rule):
    code = "JAX301"
    explains_trace = True
    fixable = True

    def visit_Call(self, node: cst.Call) -> None:
        if self.walk.qualified_name(node.func) != "builtins.print":
            return
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.runs_once:
            return
        if node.args and all(self._static(arg.value, MAX_NAME_DEPTH) for arg in node.args) \
                and not all(_literal(arg.value) for arg in node.args):
            # shapes, dtypes, static arguments: the values every call would show, printed once per
            # compilation, which is how one watches shapes and recompiles: nothing to tell its author
            return
        if not any(self._shows_traced(arg.value) for arg in node.args):
            self.report(node, (
                f"`print` inside a function traced by `{info.label}` runs only while JAX traces it (once per "
                f"compilation), not on every call; use `jax.debug.print(...)` to print on every call, or add "
                f"`# noqa: JAX301` if logging compilations is the point"))
            return
        self.report(node, (
            f"`print` inside a function traced by `{info.label}` runs once, while JAX traces it, and shows "
            f"tracers instead of values; use `jax.debug.print(\"{{}}\", x)`, which prints the values on every call"),
            self._fix(node))

    def _shows_traced(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.FormattedString):
            return any(isinstance(p, cst.FormattedStringExpression) and self._shows_traced(p.expression)
                       for p in value.parts)
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
            return False
        found = self.analysis.value(value, at=self.walk)
        # what the message and the fix assume: tracers are shown unless the value is known to be
        # something else (a concrete array, a constant)
        return found.holds is MUST or found.array is not MUST and not _is_constant(value)

    def _static(self, value: cst.BaseExpression, depth: int) -> bool:
        """Whether an expression is known to hold a static value under the trace: a literal, a shape or
        dtype (`x.shape`, `len(x)`, `jax.typeof(x)`), a static argument of the traced function, a local
        name bound only to such values, or text, arithmetic and containers made of them."""
        if _literal(value):
            return True
        if isinstance(value, cst.FormattedString):
            return all(self._static(p.expression, depth) for p in value.parts
                       if isinstance(p, cst.FormattedStringExpression))
        if isinstance(value, cst.Attribute):
            return value.attr.value in STATIC_ATTRIBUTES
        if isinstance(value, cst.Subscript):
            return self._static(value.value, depth)
        if isinstance(value, cst.BinaryOperation):
            return self._static(value.left, depth) and self._static(value.right, depth)
        if isinstance(value, cst.UnaryOperation):
            return self._static(value.expression, depth)
        if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self._static(value.elt, depth)  # `[x[a].shape[-1] for a in agents]`
        if isinstance(value, cst.Comparison):
            # `m.left is m.right`: identity is a Python bool, whatever the operands hold
            return all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in value.comparisons)
        if isinstance(value, (cst.Tuple, cst.List)):
            return all(not e.star if isinstance(e, cst.StarredElement) else self._static(e.value, depth)
                       for e in value.elements)
        if isinstance(value, cst.Call):
            return self._static_call(value, depth)
        if isinstance(value, cst.Name):
            return self._static_name(value, depth)
        return False

    def _static_call(self, call: cst.Call, depth: int) -> bool:
        callee = self.walk.qualified_name(call.func)
        if callee in DESCRIBING_CALLS:
            return True
        if callee in FORMATTING_CALLS or (isinstance(call.func, cst.Attribute) and call.func.attr.value == "format"
                                          and isinstance(call.func.value, cst.SimpleString)):
            return all(not arg.star and self._static(arg.value, depth) for arg in call.args)
        if callee in TREE_MAPS and call.args and isinstance(call.args[0].value, cst.Lambda):
            # `jax.tree.map(lambda a: a.shape, params)`: a tree of shapes
            return self._static(call.args[0].value.body, depth)
        return False

    def _static_name(self, name: cst.Name, depth: int) -> bool:
        """A parameter of the traced function that no transform traces (`static_argnums`), or a local
        name every binding of which assigns a static value."""
        info = self.analysis.trace_info(at=self.walk)
        scope = self.walk.scope
        found = scope.lookup(name.value) if scope is not None else None
        if found is None or info is None or found[0].node is not info.node:
            return False
        binding = found[1]
        if not binding.nodes:
            return False
        for node, statement in zip(binding.nodes, binding.statements):
            if isinstance(statement, cst.ExceptHandler):
                continue  # `except TracerBoolConversionError as e`: an exception, not a tracer
            if isinstance(statement, cst.Param):
                # no traced parameter at all: the static ones are not known (`static_argnums=NAMES`)
                if statement.name.value in info.param_kinds or not info.param_kinds or statement.star \
                        or info.depth > 0:
                    return False
                continue
            if depth <= 0 or not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
                                  and statement.targets[0].target is node):
                return False
            if not self._static(statement.value, depth - 1):
                return False
        return True

    def _fix(self, node: cst.Call) -> NodeFix | None:
        if self.analysis.names.name("jax", self.walk.scope) != "jax":
            return None
        template, values = [], []
        for arg in node.args:
            if arg.keyword is not None or arg.star:
                return None  # sep=, end=, file=, *args: no exact jax.debug.print equivalent
            piece = self._piece(arg.value, values)
            if piece is None:
                return None
            template.append(piece)
        args = "".join(f", {self._argument(v)}" for v in values)
        return NodeFix("Use jax.debug.print", [Replace(node, f"jax.debug.print({' '.join(template)!r}{args})")])

    def _argument(self, value: cst.BaseExpression) -> str:
        text = self.analysis.module.code_for_node(value)
        # `print(v for v in xs)`: the call's parentheses are the generator's; after the template
        # string it needs its own
        return f"({text})" if isinstance(value, cst.GeneratorExp) and not value.lpar else text

    def _piece(self, value: cst.BaseExpression, values: list) -> str | None:
        if isinstance(value, cst.SimpleString):
            text = value.evaluated_value
            return _escape(text) if isinstance(text, str) else None
        if isinstance(value, cst.FormattedString):
            parts = []
            for part in value.parts:
                if isinstance(part, cst.FormattedStringText):
                    if "\\" in part.value:
                        return None  # escapes are kept raw in the tree; leave those to a person
                    parts.append(_escape(part.value.replace("{{", "{").replace("}}", "}")))
                    continue
                if part.conversion is not None or part.equal is not None:
                    return None
                spec = ""
                if part.format_spec:
                    if not all(isinstance(p, cst.FormattedStringText) for p in part.format_spec):
                        return None
                    spec = ":" + "".join(p.value for p in part.format_spec)
                values.append(part.expression)
                parts.append("{" + spec + "}")
            return "".join(parts)
        values.append(value)
        return "{}"


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _literal(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)) or (
        isinstance(value, cst.Name) and value.value in ("None", "True", "False"))


def _is_constant(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float, cst.Name)) and not (
        isinstance(value, cst.Name) and value.value not in ("None", "True", "False"))
