"""JAX102: NumPy or stdlib `random` draws inside a traced function: one value, frozen at trace time."""
from __future__ import annotations

import libcst as cst

from ..rulebase.rule import Rule

#: Draws of NumPy's and Python's global generators are `numpy.random.<f>` / `random.<f>` calls,
#: except these, which make or configure generators rather than draw.
NOT_DRAWS = frozenset({
    "numpy.random.default_rng", "numpy.random.seed", "numpy.random.Generator", "numpy.random.RandomState",
    "numpy.random.SeedSequence", "numpy.random.get_state", "numpy.random.set_state", "numpy.random.PCG64",
    "numpy.random.Philox", "numpy.random.MT19937", "numpy.random.SFC64", "numpy.random.BitGenerator",
    "random.seed", "random.Random", "random.SystemRandom", "random.getstate", "random.setstate",
})
GENERATORS = frozenset({"numpy.random.default_rng", "numpy.random.RandomState", "random.Random"})
#: Methods of generators that do not draw.
GENERATOR_NON_DRAWS = frozenset({"spawn", "bit_generator", "seed", "getstate", "setstate", "get_state", "set_state"})


class StatefulRngInTraced(Rule):
    code = "JAX102"
    explains_trace = True

    def __init__(self, context) -> None:
        super().__init__(context)
        #: id(Name target) of bindings to `np.random.default_rng(...)` and similar
        self.generator_targets: set[int] = set()
        #: generator method calls seen in traced functions, decided at the end of the file
        self.pending: list[tuple[cst.Call, object, str, object]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        if type(node.value) is cst.Call and self.walk.qualified_name(node.value.func) in GENERATORS:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.generator_targets.add(id(target.target))

    def visit_Call(self, node: cst.Call) -> None:
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.abstract:
            return
        callee = self.walk.qualified_name(node.func)
        if callee is not None and callee.startswith(("numpy.random.", "random.")) and callee not in NOT_DRAWS:
            if callee.count(".") == (2 if callee.startswith("numpy.") else 1):
                self.report(node, self._message(f"`{_short(callee)}`", info))
            return
        func = node.func
        if type(func) is cst.Attribute and type(func.value) is cst.Name \
                and func.attr.value not in GENERATOR_NON_DRAWS:
            found = self.walk.scope.lookup(func.value.value)
            if found is not None:
                self.pending.append((node, found[1], f"`{func.value.value}.{func.attr.value}`", info))

    def finish(self) -> None:
        for node, binding, label, info in self.pending:
            if binding.nodes and all(id(n) in self.generator_targets for n in binding.nodes):
                self.report(node, self._message(f"{label} (a NumPy/Python generator)", info))

    @staticmethod
    def _message(what: str, info) -> str:
        when = ("once, while JAX traces the function, and the number is baked into the compiled code: every "
                "call returns the same value") if info.runs_once else (
                "once, while JAX traces the function: one value is shared by every call or batch element")
        return (f"{what} inside a function traced by `{info.label}` draws {when}; pass a PRNG key argument "
                f"and draw with `jax.random` (e.g. `jax.random.normal(key, shape)`)")


def _short(qualified: str) -> str:
    return "np." + qualified[len("numpy."):] if qualified.startswith("numpy.") else qualified
