"""What a rule sees: the file being checked, where the shared walk is in it, and the JAX facts about
it; and where it reports."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

import libcst as cst

from ..jaxmodel.jax_names import JaxNames
from ..jaxmodel.traced import TracedFunctions
from ..model.settings import Settings
from ..semantic.model import SemanticModel
from ..semantic.scopes import Scope
from ..semantic.source_file import SourceFile
from ..semantic.walk_state import WalkState
from .node_fix import NodeFix

if TYPE_CHECKING:
    from ..jaxmodel.external import TraceStep
    from ..jaxmodel.traced import TraceInfo
    from ..jaxmodel.values import Kind, Value

#: a per-file fact (`FileContext.fact`)
T = TypeVar("T")


class FileContext(WalkState):
    """What rules know about the file being checked, and where the walk is in it.

    The file and its facts are a `SourceFile` (`self.file`), shared with the facts themselves; this
    adds the walk position, the JAX facts rules ask about most, and the findings reported so far.
    Fields of the file are copied here: rules read them on every node.
    """

    def __init__(self, path: str, source: str, module: cst.Module, settings: Settings) -> None:
        self._start(SourceFile(path, source, module, settings))

    @classmethod
    def for_file(cls, file: SourceFile) -> "FileContext":
        ctx = cls.__new__(cls)
        ctx._start(file)
        return ctx

    def _start(self, file: SourceFile) -> None:
        WalkState.__init__(self, file)
        self.path = file.path
        self.source = file.source
        self.module = file.module
        self.settings = file.settings
        self.names = file.names
        self.module_scope = file.module_scope
        self.line_label = file.line_label
        #: (the rule that reported, node, message, fix)
        self.reports: list[tuple[Any, cst.CSTNode, str, NodeFix | None]] = []
        #: index into `reports` -> the chain of calls from other modules that traces the code there
        self.report_chains: dict[int, tuple["TraceStep", ...]] = {}
        #: index into `reports` -> (line, note) of the other lines of the file the message names
        self.report_related: dict[int, tuple[tuple[int, str], ...]] = {}
        self._jax: JaxNames | None = None
        self._traced: TracedFunctions | None = None

    # -- facts ---------------------------------------------------------------------------------
    def fact(self, kind: type[T], build: Callable[[], T] | None = None) -> T:
        """The per-file fact `kind` (`kind(source_file)` unless `build` is given), computed on first
        use and shared by every rule and fact that asks during this check of the file."""
        return self.file.fact(kind, build)

    @property
    def jax(self) -> JaxNames:
        if self._jax is None:
            self._jax = self.file.fact(JaxNames, lambda: JaxNames(self.settings))
        return self._jax

    @property
    def traced(self) -> TracedFunctions:
        """Which functions JAX traces and the kinds of values in them (computed on first use).

        Kept here as well as in the file's memo: rules ask on almost every node."""
        if self._traced is None:
            self._traced = self.file.fact(TracedFunctions)
        return self._traced

    def trace_info(self) -> "TraceInfo | None":
        """How the function around the current node is traced, or None if it is not."""
        # `self.traced.info(self.function())`, written out: most rules ask at every call
        traced = self._traced if self._traced is not None else self.traced
        function = self.function()
        return traced.infos.get(id(function)) if function is not None else None

    def value(self, expr: cst.BaseExpression) -> "Value":
        """What an expression in the current function holds: whether it is traced, a JAX array,
        static (each MUST, MAY or NO), its structure, and where that came from."""
        return self.traced.value(expr, self.function())

    def kind(self, expr: cst.BaseExpression) -> "Kind":
        """The older one-dimensional view of `value` (traced array, container, …)."""
        return self.traced.kind(expr, self.function())

    def inside_jitted_function(self) -> bool:
        """Whether a function around the current node runs once per trace: jitted (decorated, or
        `step = jax.jit(step)` later), a `lax` loop body, or called from one of those with traced values.

        Wrapping or compiling there does not repeat at run time.
        """
        traced = self.traced
        for function in self.enclosing_functions():
            info = traced.info(function)
            if info is not None and info.runs_once:
                return True
        return False

    # -- reporting -----------------------------------------------------------------------------
    def add_finding(self, rule: Any, node: cst.CSTNode, message: str, fix: NodeFix | None,
                    related: tuple[tuple[int, str], ...] = ()) -> None:
        chain = self._foreign_trace() if getattr(rule, "explains_trace", False) and self.traced.project else ()
        if chain:
            message = f"{message}; traced because {_because(chain)}"
            self.report_chains[len(self.reports)] = chain
        if related:
            self.report_related[len(self.reports)] = related
        self.reports.append((rule, node, message, fix))

    def _foreign_trace(self) -> tuple["TraceStep", ...]:
        """The chain of calls from another module that traces the function around the walk's
        position, when that is why it is traced (not a transform or a caller in this module)."""
        traced = self.traced
        for function in self.enclosing_functions():
            info = traced.info(function)
            if info is not None:
                return info.chain
        return ()


def _because(chain: tuple["TraceStep", ...]) -> str:
    """`train_step` (train.py:6) calls it under `jax.jit`; through a longer chain, the direct
    caller and where the trace starts."""
    last = chain[-1]
    if len(chain) == 1:
        return last.describe()
    first = chain[0]
    origin = f"`{first.caller}` ({first.where})" if first.caller else first.where
    return f"`{last.caller}` ({last.where}) calls it, traced by `{first.transform}` from {origin}"


def name_occurrences(ctx: FileContext, names: set[str]) -> list[tuple[cst.Name, Scope, cst.CSTNode | None]]:
    """Every Name node spelling one of `names`, with the scope it is in and its parent, in source order."""
    return SemanticModel.of(ctx.file).name_occurrences(names)
