"""JAX103: `jax.random.key(C)` / `PRNGKey(C)` with a constant seed made inside a loop body."""
from __future__ import annotations

import libcst as cst

from ..rule import Rule

KEY_MAKERS = frozenset({"jax.random.key", "jax.random.PRNGKey"})


class KeyRecreatedInLoop(Rule):
    code = "JAX103"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        #: function -> constant-seed key calls directly in its body (not in a loop there)
        self.in_function: dict[int, list[tuple[cst.Call, str]]] = {}
        #: (called function name, scope, loop) for calls made in loops
        self.loop_calls: list[tuple[cst.Name, object, cst.CSTNode]] = []
        self.reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        loop = ctx.innermost_loop()
        if isinstance(node.func, cst.Name) and loop is not None:
            self.loop_calls.append((node.func, ctx.scope, loop))
        callee = ctx.qualified_name(node.func)
        if callee not in KEY_MAKERS:
            return
        seed = _seed(node)
        if seed is None or not self._constant(seed):
            return
        text = ctx.module.code_for_node(seed)
        short = "PRNGKey" if callee.endswith("PRNGKey") else "key"
        if loop is not None:
            self.reported.add(id(node))
            self.report(node, (
                f"`jax.random.{short}({text})` made inside a loop: the same seed gives the same key, so every "
                f"iteration draws the same numbers; create the key once before the loop and split it each "
                f"iteration (`key, subkey = jax.random.split(key)`), or use `jax.random.fold_in(key, i)`"))
            return
        function = ctx.function()
        if isinstance(function, cst.FunctionDef):
            self.in_function.setdefault(id(function), []).append((node, f"jax.random.{short}({text})"))

    def finish(self) -> None:
        for name, scope, loop in self.loop_calls:
            found = scope.lookup(name.value)
            if found is None or not all(isinstance(n, cst.FunctionDef) for n in found[1].nodes):
                continue
            for function in found[1].nodes:
                for node, text in self.in_function.get(id(function), ()):
                    if id(node) in self.reported:
                        continue
                    self.reported.add(id(node))
                    self.report(node, (
                        f"`{text}` in `{name.value}`, which is called inside a loop: the same seed gives the "
                        f"same key on every call, so every iteration draws the same numbers; pass a key in and "
                        f"split it per iteration (`key, subkey = jax.random.split(key)`)"))

    def _constant(self, seed: cst.BaseExpression) -> bool:
        """A literal seed, or a name bound once at module level to a literal (`SEED = 0`)."""
        if isinstance(seed, cst.Integer):
            return True
        if isinstance(seed, cst.UnaryOperation) and isinstance(seed.expression, cst.Integer):
            return True
        if not isinstance(seed, cst.Name):
            return False
        found = self.ctx.scope.lookup(seed.value)
        if found is None:
            return False
        owner, binding = found
        if owner.kind != "module" or len(binding.nodes) != 1:
            return False
        target = binding.nodes[0]
        for statement in self.ctx.module.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(small.value, cst.Integer):
                        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                        if any(t is target for t in targets):
                            return True
        return False


def _seed(node: cst.Call) -> cst.BaseExpression | None:
    for arg in node.args:
        if arg.keyword is None and not arg.star:
            return arg.value
        if arg.keyword is not None and arg.keyword.value == "seed":
            return arg.value
    return None
