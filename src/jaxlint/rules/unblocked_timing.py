"""JAX504: a clock read that closes a timing of JAX work nobody waited for.

The analysis is the pending-work domain (`facts.pending_work`); this rule finds the clock reads,
leaves out those read while tracing (JAX304's concern), and reports the ones that close a timing
with work still queued.
"""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.pending_work import CLOCK_NAMES, CLOCKS, SYNC_DISPATCH_FLAG, Unwaited
from ..rulebase.rule import Rule


class UnblockedTiming(Rule):
    code = "JAX504"

    def __init__(self, context) -> None:
        super().__init__(context)
        self._aliases: frozenset[str] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
        if last not in CLOCK_NAMES and not (type(func) is cst.Name and last in self._clock_aliases()):
            return
        walk, analysis = self.walk, self.analysis
        if walk.qualified_name(func) not in CLOCKS or SYNC_DISPATCH_FLAG in analysis.source:
            return
        if analysis.trace_info(at=walk) is not None or analysis.inside_jitted_function(at=walk):
            return  # read while tracing: JAX304's concern
        unwaited = self.analysis.pending_work.unwaited(node, walk.scope)
        if unwaited:
            self.report(node, _message(analysis.module.code_for_node(func), unwaited[-1], analysis.module))

    def _clock_aliases(self) -> frozenset[str]:
        """Module-level names imported as clocks under another name (`from time import perf_counter as pc`)."""
        if self._aliases is None:
            self._aliases = frozenset() if "time" not in self.analysis.source else frozenset(
                name for name, binding in self.analysis.module_scope.bindings.items()
                if name not in CLOCK_NAMES and binding.is_import_only and set(binding.targets) <= CLOCKS)
        return self._aliases


def _message(clock: str, work: Unwaited, module: cst.Module) -> str:
    node = work.node
    if isinstance(node, cst.Call):
        what = f"`{_shorten(module.code_for_node(node.func))}(...)`"
    else:
        what = f"`{_shorten(module.code_for_node(node))}`"
    if work.name is not None:
        cure = f"call `jax.block_until_ready({work.name})` before reading the clock"
    else:
        cure = "keep its result and call `jax.block_until_ready(...)` on it before reading the clock"
    return (f"`{clock}()` stops the clock while {what} may still be running: JAX dispatches work asynchronously "
            f"and returns before the device finishes, so this times the dispatch, not the computation; {cure}")


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."
