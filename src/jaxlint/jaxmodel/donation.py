"""Buffers donated to a jitted call (`donate_argnums`, `donate_argnames`) and the reads of them after
the call.

A jitted function called with an argument at a donated position hands that argument's buffers to
XLA, which writes its outputs into them: the JAX array passed in (every array leaf of a pytree) is
deleted, and any later use of it raises `RuntimeError: Array has been deleted`. Its metadata
(`.shape`, `.dtype`, …) stays readable. A NumPy array or a Python number passed there is copied
to the device first, and the copy is donated: the caller's value is untouched. Inside a trace
donation does nothing (the inner jit is inlined).

The donations are read from the transforms the tracing analysis found (`jax.jit`, `pjit`,
`jax.pmap` applied as a decorator, bound to a name, or called at once), at the calls that reach the
wrapper outside any trace; which argument reaches a donated parameter is the binder's answer. Where
a donated name is read again is a def-use question: the reaching bindings of the call's scope are
run with each donating call consuming the names it donates (`dataflow.reaching`), and a read that a
consumption reaches reads the deleted buffer:

* every binding that reaches the read is a consumption: after the call, on every path;
* the call runs on every iteration of a loop that never rebinds the name before the read, written
  at or before the call in that loop: from the second iteration on (`out = step(params)`);
* the same name at a donated position and at another argument of the one call (`f(x, x)`): JAX
  refuses to use a buffer the call also donates.

Only a value known to hold JAX arrays is followed: a JAX array, the outputs of a jitted call, what
`jax.device_put` places; a name whose value may be a NumPy array, a Python number or a parameter of
unknown origin is left alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ..dataflow.reaching import Origin, ScopeFacts, scope_facts
from ..semantic.model import SemanticModel
from ..semantic.scopes import Scope
from ..syntax.arguments import Passing
from ..syntax.positions import node_spans
from ..syntax.walk import COMPREHENSIONS, walk
from .calls import Application, CallSite
from .name_origins import NameOrigins
from .signatures import positional_params
from .traced import TracedFunctions
from .transforms import int_literals, string_literals
from .values.tables import STATIC_ATTRIBUTES

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

#: JAX's jit family: they take `donate_argnums`/`donate_argnames`, and what their wrappers return
#: is JAX arrays (equinox's `filter_jit` and flax's `nnx.jit` donate by other rules)
DONATING_TRANSFORMS = frozenset({"jax.jit", "jax.experimental.pjit.pjit", "jax.pmap"})
#: What can be asked of a deleted array without touching its buffer
SURVIVING_ATTRIBUTES = STATIC_ATTRIBUTES | {"is_deleted"}
SURVIVING_CALLS = frozenset({"builtins.len", "builtins.type", "builtins.isinstance", "builtins.id"})
#: Functions that place a pytree's leaves on a device as JAX arrays
PLACING = frozenset({"jax.device_put", "jax.device_put_replicated", "jax.device_put_sharded"})
#: Expressions that run their parts only on some paths, or later: a call below them is conditional
_CONDITIONAL = frozenset({cst.If, cst.Try, cst.Match, cst.For, cst.While, cst.IfExp, cst.BooleanOperation,
                          cst.FunctionDef, cst.ClassDef, cst.Lambda, *COMPREHENSIONS})
if hasattr(cst, "TryStar"):
    _CONDITIONAL = _CONDITIONAL | {cst.TryStar}
_MAX_DEPTH = 8


@dataclass(frozen=True)
class Donation:
    """A name passed at a donated position of a jitted call."""

    call: cst.Call
    argument: cst.Name
    #: how the configuration is written (`donate_argnums=0`, `donate_argnames=("cache",)`)
    configured: str


@dataclass(frozen=True)
class DeletedRead:
    """A read of a donated buffer: `when` is "after" (the call ran on every path to it), "loop" (an
    earlier iteration's call donated it) or "same call" (passed again to the donating call)."""

    read: cst.Name
    donation: Donation
    when: str


class DonatedBuffers:
    """The donations of the file and the reads of what they deleted (see the module docstring):
    built on first use from the traced functions, with one run of the reaching bindings per scope
    that makes a donating call."""

    def __init__(self, file: "SourceFile") -> None:
        self.file = file
        self._lines: dict[int, int] | None = None
        self.traced = file.fact(TracedFunctions)
        self.origins = NameOrigins.of(file)
        #: ids of the calls of a jit-family wrapper outside a trace: what they return is JAX arrays
        self._jit_outputs: set[int] = set()
        self.donations: list[Donation] = self._donations()
        self.reads: list[DeletedRead] = self._deleted_reads() if self.donations else []

    @classmethod
    def of(cls, file: "SourceFile") -> "DonatedBuffers":
        return file.fact(cls)

    def line(self, call: cst.Call) -> int:
        """The line of a donating call that a read follows (the calls' lines found in one pass)."""
        if self._lines is None:
            calls = {id(read.donation.call): read.donation.call for read in self.reads}
            spans = node_spans(self.file.module, calls.values())
            self._lines = {key: spans[key][0][0] for key in calls}
        return self._lines[id(call)]

    # -- where buffers are donated --------------------------------------------------------------
    def _donations(self) -> list[Donation]:
        traced = self.traced
        found: list[Donation] = []
        for function in traced.functions:
            for use in traced.applications.get(id(function), ()):
                if use.transform not in DONATING_TRANSFORMS:
                    continue
                sites = [site for site in self._sites(function, use) if self._untraced(site.call)]
                self._jit_outputs.update(id(site.call) for site in sites)
                donated = _donated_params(function, use)
                if not donated:
                    continue
                for site in sites:
                    found.extend(self._donated_at(site, donated))
        return found

    def _sites(self, function: cst.CSTNode, use: Application) -> list[CallSite]:
        """The calls of the wrapper: those this application made (`fast = jax.jit(f)`), or for a
        decorator those that reach the decorated name itself (not another transform's wrapper)."""
        if use.sites is not None:
            return list(use.sites)
        callees = self.traced.callees
        return [site for site in self.traced.call_sites.get(id(function), ())
                if (callee := callees.get(id(site.call))) is not None and callee.function is function]

    def _untraced(self, call: cst.Call) -> bool:
        """The call runs outside any trace: donation happens only there."""
        return self.traced.info(self.traced.function_of_call(call)) is None

    def _donated_at(self, site: CallSite, donated: dict[str, str]) -> list[Donation]:
        arguments = {id(arg.value) for arg in site.call.args if not arg.star}
        found = []
        for param, passed in site.bind().items():
            configured = donated.get(param)
            if configured is None or passed.how is not Passing.ARGUMENT:
                continue
            value = passed.values[0]
            if type(value) is cst.Name and id(value) in arguments:
                found.append(Donation(site.call, value, configured))
        return found

    # -- where they are read again --------------------------------------------------------------
    def _deleted_reads(self) -> list[DeletedRead]:
        by_scope: dict[int, tuple[Scope, list[Donation]]] = {}
        scopes = self.traced.call_scopes
        for donation in self.donations:
            scope = scopes.get(id(donation.call))
            if scope is not None and scope.kind in ("function", "module"):
                by_scope.setdefault(id(scope), (scope, []))[1].append(donation)
        reads: list[DeletedRead] = []
        for scope, donations in by_scope.values():
            reads.extend(self._reads_in(scope, donations))
        return reads

    def _reads_in(self, scope: Scope, donations: list[Donation]) -> list[DeletedRead]:
        consumed: dict[int, tuple[str, ...]] = {}
        for donation in donations:
            names = consumed.get(id(donation.call), ())
            if donation.argument.value not in names:
                consumed[id(donation.call)] = (*names, donation.argument.value)
        facts = scope_facts(scope, consumed)
        arrays = {id(d.argument): self._holds_arrays(d.argument, scope, facts) for d in donations}
        by_call = {}
        for donation in donations:
            by_call.setdefault(id(donation.call), {})[donation.argument.value] = donation
        reads: list[DeletedRead] = []
        for donation in donations:
            if arrays[id(donation.argument)]:
                reads.extend(self._same_call(donation))
        names = {d.argument.value for d in donations}
        model = SemanticModel.of(self.file)
        for occurrence in model.names_in_statements(names):
            read = occurrence.node
            held = facts.reaching.get(id(read))
            if not held or self._survives(read, occurrence.parent, occurrence.grandparent, scope):
                continue
            by = [o for o in held if o.kind == "consumed"]
            if not by:
                continue
            donated = [by_call[id(o.node)][read.value] for o in by]
            if not all(arrays[id(d.argument)] for d in donated):
                continue
            if len(by) == len(held):
                reads.append(DeletedRead(read, donated[0], "after"))
                continue
            for donation in donated:
                loop = facts.consumed_in.get(id(donation.call))
                if loop is not None and type(loop) in (cst.For, cst.While) and _every_iteration(loop, donation, read):
                    reads.append(DeletedRead(read, donation, "loop"))
                    break
        return reads

    def _same_call(self, donation: Donation) -> list[DeletedRead]:
        """The donated name passed again to the same call, at any other argument."""
        name = donation.argument.value
        return [DeletedRead(arg.value, donation, "same call") for arg in donation.call.args
                if not arg.star and type(arg.value) is cst.Name and arg.value.value == name
                and arg.value is not donation.argument]

    def _survives(self, read: cst.Name, parent: cst.CSTNode, grandparent: cst.CSTNode | None, scope: Scope) -> bool:
        """A use that reads only what a deleted array keeps: its metadata, its type, its identity."""
        if type(parent) is cst.Attribute and parent.value is read:
            return parent.attr.value in SURVIVING_ATTRIBUTES
        if type(parent) is cst.Arg and type(grandparent) is cst.Call:
            return self.file.names.qualified_name(grandparent.func, scope) in SURVIVING_CALLS
        if type(parent) is cst.Comparison:
            return all(type(c.operator) in (cst.Is, cst.IsNot) for c in parent.comparisons)
        if type(parent) is cst.ComparisonTarget:
            return type(parent.operator) in (cst.Is, cst.IsNot)
        return False

    # -- what the donated name holds ------------------------------------------------------------
    def _holds_arrays(self, name: cst.Name, scope: Scope, facts: ScopeFacts, depth: int = 0) -> bool:
        """Every binding that reaches the name (past the consumptions) holds JAX arrays."""
        held = [o for o in facts.reaching.get(id(name), ()) if o.kind not in ("consumed", "augmented", "annotation")]
        return bool(held) and all(self._origin_holds_arrays(o, scope, facts, depth) for o in held)

    def _origin_holds_arrays(self, origin: Origin, scope: Scope, facts: ScopeFacts, depth: int) -> bool:
        if origin.kind == "value":
            return self._expression_holds_arrays(origin.value, scope, facts, depth)
        if origin.kind == "element" and type(origin.value) is cst.Call:
            # an element of a jitted call's outputs, or of what `device_put` placed
            return self._placed(origin.value, scope)
        return False

    def _expression_holds_arrays(self, value: cst.BaseExpression | None, scope: Scope, facts: ScopeFacts,
                                 depth: int) -> bool:
        """A JAX array, or a pytree (a tuple, list or dict display) whose every leaf is one."""
        if value is None or depth > _MAX_DEPTH:
            return False
        kind = type(value)
        if kind is cst.Call and self._placed(value, scope):
            return True
        if kind is cst.Name:
            return self._holds_arrays(value, scope, facts, depth + 1)
        if kind in (cst.Tuple, cst.List):
            return bool(value.elements) and all(
                type(e) is cst.Element and self._expression_holds_arrays(e.value, scope, facts, depth + 1)
                for e in value.elements)
        if kind is cst.Dict:
            return bool(value.elements) and all(
                type(e) is cst.DictElement and self._expression_holds_arrays(e.value, scope, facts, depth + 1)
                for e in value.elements)
        return self.origins.certain_array(value, scope)

    def _placed(self, call: cst.Call, scope: Scope) -> bool:
        """Every leaf of what the call returns is a JAX array: a jitted function's outputs, or what
        `jax.device_put` places on a device."""
        return id(call) in self._jit_outputs or self.file.names.qualified_name(call.func, scope) in PLACING


def _donated_params(function: cst.CSTNode, use: Application) -> dict[str, str]:
    """The parameters a transform donates, each with how its configuration is written; empty when
    a number or name is computed (not known here). JAX turns `donate_argnums` into the names of the
    parameters and the other way round, so a parameter is donated however a call passes it."""
    numbers, names = use.keywords.get("donate_argnums"), use.keywords.get("donate_argnames")
    if numbers is None and names is None:
        return {}
    numbered, named = int_literals(numbers), string_literals(names)
    if numbers is not None and not numbered and not _empty(numbers) \
            or names is not None and not named and not _empty(names):
        return {}
    positional = positional_params(function)[use.bound_positional:]
    donated: dict[str, str] = {}
    for number in numbered:
        number -= use.skip
        if 0 <= number < len(positional):
            donated[positional[number]] = f"donate_argnums={_written(numbers)}"
    for name in named:
        donated.setdefault(name, f"donate_argnames={_written(names)}")
    return donated


def _empty(node: cst.BaseExpression) -> bool:
    return type(node) in (cst.Tuple, cst.List) and not node.elements


def _written(node: cst.BaseExpression) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _every_iteration(loop: cst.For | cst.While, donation: Donation, read: cst.Name) -> bool:
    """The donating call runs on every iteration of `loop` (no branch, inner loop or function
    between them), and `read` is in the loop, at or before the call: the next iteration reads the
    buffer the call deleted. One walk of the loop's body."""
    call = donation.call
    # the read's place: 0 before the call or in its arguments (read before it runs), 1 after it
    found: list[int] = []
    conditional, in_call = [0], [False]
    at_call: list[int] = []

    def enter(node: cst.CSTNode, _field: str) -> bool:
        if node is call:
            at_call.append(conditional[0])
            in_call[0] = True
        elif node is read:
            found.append(0 if in_call[0] or not at_call else 1)
        if type(node) in _CONDITIONAL:
            conditional[0] += 1
        return True

    def leave(node: cst.CSTNode) -> None:
        if type(node) in _CONDITIONAL:
            conditional[0] -= 1
        if node is call:
            in_call[0] = False

    walk(loop.body, enter, leave)
    return at_call == [0] and found == [0]
