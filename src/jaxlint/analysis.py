"""`FileAnalysis`: the one façade rules read every fact about the file being checked through.

Each accessor builds its fact on first use and keeps it for every rule that asks after (and for the
facts that build on it); its docstring says what building it costs. A question about a node takes
`at`, the walk's position (`Rule.walk`), which says which function the node is in.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .jaxmodel.baked_attributes import BakedAttributes
from .jaxmodel.call_graph import CallGraph
from .jaxmodel.configured import ConfiguredIntegers
from .jaxmodel.donation import DonatedBuffers
from .jaxmodel.gradients import Differentiation
from .jaxmodel.guards import VersionGuards
from .jaxmodel.jax_names import JaxNames
from .jaxmodel.jit_signatures import JitSignatures
from .jaxmodel.keys.facts import KeyFlowFacts
from .jaxmodel.keys.vmap import vmap_broadcast_keys
from .jaxmodel.name_origins import NameOrigins
from .jaxmodel.pending_work import PendingWorkFacts
from .jaxmodel.static_display import StaticDisplay
from .jaxmodel.top_level_runs import TopLevelRuns
from .jaxmodel.trace_paths import TracePaths
from .jaxmodel.traced import TracedFunctions
from .semantic.bindings import reached_through_module
from .semantic.containers import Containers
from .semantic.literals import Literals
from .semantic.loops import Loops
from .semantic.model import SemanticModel
from .semantic.module_state import ModuleState

if TYPE_CHECKING:
    from .jaxmodel.traced import TraceInfo
    from .jaxmodel.values import Value
    from .model.settings import Settings
    from .semantic.names import NameResolver
    from .semantic.scopes import Scope
    from .semantic.source_file import SourceFile
    from .semantic.walk_state import WalkState


class FileAnalysis:
    """Every fact about one file that rules read (see the module docstring)."""

    __slots__ = ("file", "_jax", "_traced")

    def __init__(self, file: "SourceFile") -> None:
        self.file = file
        self._jax: JaxNames | None = None
        self._traced: TracedFunctions | None = None

    # -- the file itself (free) ------------------------------------------------------------------
    @property
    def module(self) -> cst.Module:
        return self.file.module

    @property
    def source(self) -> str:
        return self.file.source

    @property
    def path(self) -> str:
        return self.file.path

    @property
    def settings(self) -> "Settings":
        return self.file.settings

    @property
    def module_scope(self) -> "Scope":
        return self.file.module_scope

    @property
    def names(self) -> "NameResolver":
        """What a name means where it is used (qualified names of imports and aliases)."""
        return self.file.names

    def line_label(self, line: int) -> str:
        """How a message names a line of the file (`line 12`, in a notebook `cell 3, line 2`)."""
        return self.file.line_label(line)

    def displayed(self, statement: cst.BaseSmallStatement) -> bool:
        """Whether a notebook shows the value of this expression statement (a cell's last one)."""
        return self.file.displayed(statement)

    # -- binding-level facts -----------------------------------------------------------------------
    @property
    def semantic(self) -> SemanticModel:
        """Sites, bindings, references and the recorded walk: built by the one walk of the file,
        which has run before any rule is asked anything."""
        return SemanticModel.of(self.file)

    @property
    def literals(self) -> Literals:
        """Literal values names are bound to: a query over the recorded bindings (cheap)."""
        return Literals.of(self.file)

    @property
    def module_state(self) -> ModuleState:
        """Module variables that change after their first binding: a query over the recorded
        bindings (cheap)."""
        return ModuleState.of(self.file)

    @property
    def containers(self) -> Containers:
        """Names bound to Python lists, dicts and sets: a query over the recorded bindings (cheap)."""
        return Containers.of(self.file)

    @property
    def loops(self) -> Loops:
        """What varies from one iteration of a loop to the next: computed per loop asked (a walk of
        that loop's body)."""
        return Loops.of(self.file)

    # -- JAX facts ---------------------------------------------------------------------------------
    @property
    def jax(self) -> JaxNames:
        """Which names are JAX transforms and how a wrapper names one (cheap)."""
        if self._jax is None:
            self._jax = self.file.fact(JaxNames, lambda: JaxNames(self.file.settings))
        return self._jax

    @property
    def traced(self) -> TracedFunctions:
        """Which functions JAX traces and what every expression in them holds: the value flow of
        every traced function, to a fixed point of their summaries (the costliest fact)."""
        if self._traced is None:
            self._traced = self.file.fact(TracedFunctions)
        return self._traced

    @property
    def gradients(self) -> Differentiation:
        """Which functions reverse-mode differentiation reaches, with respect to which of their
        values, and which singular points a `jnp.where` masks (reads `traced`; then one pass over the
        file's calls per level of helpers)."""
        return Differentiation.of(self.file, self.traced)

    def trace_info(self, at: "WalkState") -> "TraceInfo | None":
        """How the function around the walk's position is traced, or None if it is not (cheap once
        `traced` is built)."""
        function = at.function()
        return self.traced.infos.get(id(function)) if function is not None else None

    def module_function(self, expr: cst.BaseExpression, at: "WalkState") -> bool:
        """Whether an attribute expression names a function defined at a module's top level: `mod.f`
        with `mod` bound by `import`, or reached through a module of the project (`from pkg import
        mod`, then `mod.f`). Such a function is the same object at every access (cheap; a project
        question at most)."""
        if not isinstance(expr, cst.Attribute):
            return False
        if reached_through_module(expr, at.scope):
            return True
        project = self.file.project
        dotted = at.qualified_name(expr) if project is not None else None
        return dotted is not None and project.function_at(dotted) is not None

    def named_elsewhere(self, name: str) -> bool:
        """Whether a module of the project that imports this one mentions `name`, so that it may call
        this module's function of that name (a project question; False for a file checked alone)."""
        project = self.file.project
        return project is not None and project.named_elsewhere(name)

    def traced_on_every_path(self, at: "WalkState") -> bool:
        """Whether the function around the walk's position runs under a jit-family trace or a `lax`
        body on every path that reaches it, in this module and from the modules that import it
        (reads `traced`; each function decided once, following its callers)."""
        function = at.function()
        return function is not None and self._trace_paths().traced_on_every_path(function)

    def value(self, expr: cst.BaseExpression, at: "WalkState") -> "Value":
        """What an expression of the function around the walk's position holds: whether it is traced,
        a JAX array, static (each MUST, MAY or NO), and its structure (reads `traced`)."""
        return self.traced.value(expr, at.function())

    def shows_static(self, expr: cst.BaseExpression, at: "WalkState") -> bool:
        """Whether `expr`, in a traced function, shows only static values as text: a literal, a shape
        or dtype (`x.shape`, `len(x)`, `jax.typeof(x)`), a static argument, a local name bound only
        to those, or text, arithmetic and containers made of them (reads `traced`; a walk of the
        expression, and of the values of at most a few local names). False outside a trace."""
        info = self.trace_info(at)
        if info is None or at.scope is None:
            return False
        return StaticDisplay(self.names, at.scope, info).static(expr)

    def parameters_traced_on_every_path(self, at: "WalkState") -> bool:
        """Whether the function around the walk's position runs traced on every path that reaches it
        (`traced_on_every_path`), and each of those paths passes a traced value to every parameter
        the value flow takes as traced (and, for a nested function, so do its enclosing function's):
        a value `value` says must be traced is then a tracer on every run, not only on some calls
        (reads `traced`; each function decided once, following its callers)."""
        function = at.function()
        return function is not None and self._trace_paths().parameters_traced_on_every_path(function)

    def _trace_paths(self) -> TracePaths:
        traced = self.traced
        return self.file.fact(TracePaths, lambda: TracePaths(traced))

    def inside_jitted_function(self, at: "WalkState") -> bool:
        """Whether a function around the walk's position runs once per trace: jitted (decorated, or
        `step = jax.jit(step)` later), a `lax` loop body, or called from one of those with traced
        values. Wrapping or compiling there does not repeat at run time (reads `traced`)."""
        traced = self.traced
        for function in at.enclosing_functions():
            info = traced.info(function)
            if info is not None and info.runs_once:
                return True
        return False

    @property
    def call_graph(self) -> CallGraph:
        """Which functions of the module each function calls (the traced functions' call
        resolution, already built; the edges are listed once, on first use)."""
        return CallGraph.of(self.file)

    @property
    def jit_signatures(self) -> JitSignatures:
        """What JAX asks of a jitted function's arguments: the expressions calls pass at static
        positions, the methods jitted with `self` unbound, what cannot be hashed (reads `traced`;
        each part built on first use)."""
        return JitSignatures.of(self.file)

    @property
    def baked_attributes(self) -> BakedAttributes:
        """Attributes of `self` a method traced with `self` fixed bakes in while a method running
        with it replaces them (reads `traced`; the class's methods scanned once per class asked)."""
        return BakedAttributes.of(self.file)

    @property
    def name_origins(self) -> NameOrigins:
        """Where a name's value comes from (an array, a jitted function, a cache): answered per name
        asked, from the reaching bindings of its scope."""
        return NameOrigins.of(self.file)

    @property
    def configured(self) -> ConfiguredIntegers:
        """The integers a configuration read gives (a dataclass field's default, a command-line
        option's): answered per expression asked, from the bindings of the names in it (a project
        question for an object of another module)."""
        return ConfiguredIntegers.of(self.file)

    @property
    def version_guards(self) -> VersionGuards:
        """The regions of the file guarded by a JAX version check, an x64 switch or an import
        fallback (one pass over the recorded sites)."""
        return VersionGuards.of(self.file)

    @property
    def top_level_runs(self) -> TopLevelRuns:
        """What the module's top level runs and in which order (a query over the recorded walk)."""
        return TopLevelRuns.of(self.file)

    @property
    def pending_work(self) -> PendingWorkFacts:
        """Which values hold JAX work still running when a clock is read: the pending-work flow of
        every scope with a clock read (built on first use)."""
        return PendingWorkFacts.of(self.file)

    @property
    def donated_buffers(self) -> DonatedBuffers:
        """Arrays donated to jitted calls (`donate_argnums`) and the reads of them after the call
        deleted them (reads `traced`; one run of the reaching bindings for each scope that makes a
        donating call)."""
        return DonatedBuffers.of(self.file)

    @property
    def key_flow(self) -> KeyFlowFacts:
        """Where PRNG keys are consumed and reused: the key flow of every scope, to a fixed point of
        the functions' key summaries (costly; built on first use)."""
        return KeyFlowFacts.of(self.file)

    def vmap_broadcast_keys(self) -> list[tuple[cst.Call, str, str]]:
        """(consuming call, key name, how it reaches the function) for keys a vmapped function draws
        from while every batch element sees the same key (reads `key_flow`)."""
        return vmap_broadcast_keys(self.file)
