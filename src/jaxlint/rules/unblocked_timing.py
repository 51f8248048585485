"""JAX504: a clock read that closes a timing of JAX work nobody waited for.

The analysis is the pending-work domain (`facts.pending_work`); this rule finds the clock reads,
leaves out those read while tracing (JAX304's concern), and reports the ones that close a timing
with work still queued. In a notebook, a magic that prints the wall-clock time of what it runs
(`%time`, `%%time`, `%timeit -n 1`) closes a timing too: reported at the work left running.
"""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.pending_work import CLOCK_NAMES, CLOCKS, SYNC_DISPATCH_FLAG, TIMER_METHODS, Unwaited
from ..rulebase.node_fix import NodeFix, Replace
from ..rulebase.rule import Rule
from ..syntax.magics import MASK_MARKER, Magic


class UnblockedTiming(Rule):
    code = "JAX504"
    fixable = True

    def __init__(self, context) -> None:
        super().__init__(context)
        self._aliases: frozenset[str] | None = None
        self._magics: bool | None = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if self._has_magics():
            self._magic_timing(node)

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        # `%time for x in xs: y = f(x)`: the magic's statement is the one this body is on the line of
        if self._has_magics() and self.walk.parent is not None:
            self._magic_timing(self.walk.parent)

    def _has_magics(self) -> bool:
        if self._magics is None:
            source = self.analysis.source
            self._magics = MASK_MARKER in source and SYNC_DISPATCH_FLAG not in source
        return self._magics

    def _magic_timing(self, statement: cst.CSTNode) -> None:
        walk, analysis = self.walk, self.analysis
        if analysis.trace_info(at=walk) is not None or analysis.inside_jitted_function(at=walk):
            return
        timing = analysis.pending_work.magic_timing(statement, walk.scope)
        if timing is not None:
            magic, unwaited = timing
            self.report(unwaited[-1].node, _magic_message(magic, unwaited[-1], analysis.module),
                        headline=f"`{magic.name}` stops its clock before the timed work finishes")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
        if last in TIMER_METHODS and "timeit" in self.analysis.source:
            self._timeit(node)
            return
        if last not in CLOCK_NAMES and not (type(func) is cst.Name and last in self._clock_aliases()):
            return
        walk, analysis = self.walk, self.analysis
        if walk.qualified_name(func) not in CLOCKS or SYNC_DISPATCH_FLAG in analysis.source:
            return
        if analysis.trace_info(at=walk) is not None or analysis.inside_jitted_function(at=walk):
            return  # read while tracing: JAX304's concern
        unwaited = self.analysis.pending_work.unwaited(node, walk.scope)
        if unwaited:
            clock = analysis.module.code_for_node(func)
            self.report(node, _message(clock, unwaited[-1], analysis.module),
                        headline=f"`{clock}()` stops the clock before the timed work finishes")

    def _timeit(self, node: cst.Call) -> None:
        """`timeit.timeit(lambda: f(x), number=3)`: a few runs of work nobody waits for."""
        walk, analysis = self.walk, self.analysis
        if SYNC_DISPATCH_FLAG in analysis.source or analysis.trace_info(at=walk) is not None \
                or analysis.inside_jitted_function(at=walk):
            return
        unwaited = analysis.pending_work.unwaited(node, walk.scope)
        if not unwaited:
            return
        code = analysis.module.code_for_node
        what = _what(unwaited[-1], analysis.module)
        func = node.func
        label = f"Timer(...).{func.attr.value}" if type(func) is cst.Attribute and type(func.value) is cst.Call \
            else _shorten(code(func))
        self.report(node, (
            f"`{label}(...)` runs {what} only a few times and stops its clock while the last "
            f"runs may still be queued: JAX dispatches work asynchronously, the calls of so few runs all fit in "
            f"its queue, and the time is the dispatch, not the computation; wait in the timed statement "
            f"(`lambda: jax.block_until_ready(f(x))`), or time many runs"), self._timeit_fix(node),
            headline=f"`{label}(...)` stops its clock while the last runs may still be queued")

    def _timeit_fix(self, node: cst.Call) -> NodeFix | None:
        """`lambda: f(x)` -> `lambda: jax.block_until_ready(f(x))`, where `jax` names JAX in the module."""
        stmt = next((arg.value for arg in (node.func.value.args if type(node.func) is cst.Attribute
                                           and type(node.func.value) is cst.Call else node.args)
                     if type(arg.value) is cst.Lambda), None)
        if stmt is None or type(stmt.body) is not cst.Call or self.walk.qualified_name(cst.Name("jax")) != "jax":
            return None
        code = self.analysis.module.code_for_node
        return NodeFix("Wait for the timed work in the statement",
                       [Replace(stmt.body, f"jax.block_until_ready({code(stmt.body)})")])

    def _clock_aliases(self) -> frozenset[str]:
        """Module-level names imported as clocks under another name (`from time import perf_counter as pc`)."""
        if self._aliases is None:
            self._aliases = frozenset() if "time" not in self.analysis.source else frozenset(
                name for name, binding in self.analysis.module_scope.bindings.items()
                if name not in CLOCK_NAMES and binding.is_import_only and set(binding.targets) <= CLOCKS)
        return self._aliases


def _message(clock: str, work: Unwaited, module: cst.Module) -> str:
    what = _what(work, module)
    if work.name is not None:
        cure = f"call `jax.block_until_ready({work.name})` before reading the clock"
    else:
        cure = "keep its result and call `jax.block_until_ready(...)` on it before reading the clock"
    return (f"`{clock}()` stops the clock while {what} may still be running: JAX dispatches work asynchronously "
            f"and returns before the device finishes, so this times the dispatch, not the computation; {cure}")


def _magic_message(magic: Magic, work: Unwaited, module: cst.Module) -> str:
    what = _what(work, module)
    timed = "cell" if magic.whole_cell else "statement"
    result = f"`{work.name}`" if work.name else "its result"
    if magic.name.endswith("timeit"):
        return (f"`{magic.name}` given so few loops (`-n`) stops its clock while {what} may still be running: JAX "
                f"dispatches work asynchronously, the calls of a few loops all fit in its queue, and the best run "
                f"printed is the dispatch, not the computation; call `.block_until_ready()` on {result} in the "
                f"timed {timed}, or leave out `-n` (then `{magic.name}` loops until the queue is full and the "
                f"figure is close to the computation's)")
    when = "the cell's last statement returns" if magic.whole_cell else "the statement returns"
    return (f"`{magic.name}` stops its clock when {when}, while {what} may still be running: JAX dispatches work "
            f"asynchronously and returns before the device finishes, so the time printed is the dispatch, not "
            f"the computation; call `.block_until_ready()` on {result} in the timed {timed} "
            f"(`jax.block_until_ready(...)` for a tree of arrays)")


def _what(work: Unwaited, module: cst.Module) -> str:
    node = work.node
    if isinstance(node, cst.Call):
        return f"`{_shorten(module.code_for_node(node.func))}(...)`"
    return f"`{_shorten(module.code_for_node(node))}`"


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."
