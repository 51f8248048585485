"""What the key domain tracks: a key's state, where it was consumed, a reuse, a function's summary."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import libcst as cst

from ...dataflow.marker import Marker
from ...semantic.scopes import Scope
from ..calls import Callee
from ..traced import TracedFunctions

if TYPE_CHECKING:
    from ...semantic.source_file import SourceFile

FunctionNode = cst.FunctionDef | cst.Lambda


@dataclass
class Consumption:
    node: cst.Call
    #: source order of the node (KeyFlowFacts.line gives its line)
    line: int
    #: consumed by a known consumer (a sampler, `split`, a module function that does): not a guess
    certain: bool
    #: consumed by a `jax.random` call itself, not by a function it was passed to
    direct: bool = False
    #: consumed by a module function (or method): where that function consumes its parameter
    via: "Consumption | None" = None
    #: the `jax.random` function of a direct draw
    draw: str | None = None
    #: the function (or module) whose code makes the draw
    within: cst.CSTNode | None = None
    #: a draw in another module of the project: where (`utils.py:12`); `node` then only spells the
    #: consuming call, it is not in this file's tree
    where: str | None = None
    #: the small statement the consuming call is in (where its outputs are bound or thrown away)
    statement: cst.CSTNode | None = None
    #: the function of the module (or its stand-in for another module's) given the key, and the
    #: parameter that receives it
    reached: "tuple[FunctionNode, str] | None" = None
    #: of another module's function: where its return value carries what it makes from the key
    #: (`outputs.returned_positions`); None when not known
    returned: "frozenset[tuple[int, ...]] | None" = None
    #: a draw from a key the function takes from the code around it (a global, a closed-over name)
    outside: bool = False
    #: the function and parameter whose default key, made once where the function is defined, a
    #: call that passes no key draws from
    default_of: "tuple[str, str] | None" = None


@dataclass(frozen=True)
class KeyState:
    """What a tracked name holds: a fresh key, or a key consumed at `consumed`."""

    consumed: Consumption | None = None
    #: a key for sure (made by jax.random, named or annotated as one), not just a parameter
    known: bool = False
    #: the parameter whose value this still is (for summaries)
    param: str | None = None
    #: the object's key this name was bound to (`rng = self.key`): using one uses the other
    alias: str | None = None


@dataclass
class Reuse:
    """A key consumed again: `node` is the second consuming call."""

    node: cst.Call
    name: str
    first: Consumption
    #: the loop (For, While, comprehension, a `jax.tree.map` call, a lax loop) whose next iteration
    #: consumes it again, if that is how
    loop: cst.CSTNode | None = None
    #: "again" (two uses in a row), "loop" (Python loop or comprehension), "leaves" (a function mapped
    #: over a pytree draws from a closed-over key once per leaf), "carry" (a lax loop body draws from a
    #: key of its carry and returns it unchanged, `node` being the lax call), "lax" (a lax loop body
    #: draws from a key of the code around it, the same in every iteration)
    kind: str = "again"


@dataclass
class Summary:
    #: parameter -> its first consuming call in the body, and whether the consumer is known
    consumed: dict[str, Consumption] = field(default_factory=dict)


#: name -> what it holds: its KeyState, or READ when it holds no key
State = dict[str, "KeyState | object"]


def same_summary(old: "Summary", new: "Summary") -> bool:
    """The same parameters consumed, each as surely: what a caller's analysis reads of a summary."""
    return set(old.consumed) == set(new.consumed) and all(
        old.consumed[p].certain == new.consumed[p].certain for p in new.consumed)


#: Values of expressions (a name holding a key holds its `KeyState`):
#: no key (a call's result, a literal, a function, …)
NOT_KEY = Marker("not a key")
#: read from a name, attribute or subscript that holds no key of its own: unpacking it may give keys
#: (`key, x = carry`), each one a key if named like one; every name that holds no key holds this
READ = Marker("read")
#: a fresh key (`jax.random.key(0)`, `fold_in(key, i)`, `keys[0]`)
KEY = Marker("key")
#: a batch of fresh keys (`jax.random.split(key, n)`): unpacking or iterating it gives keys
KEYS = Marker("keys")
#: an element unpacked from a READ: a key for sure consumers when named like one
MAYBE = Marker("maybe a key")
#: a test whose outcome the code fixes (`sampler == "NUTS"` with `sampler = "NUTS"` the only binding
#: that reaches it): only one branch of its `if` ever runs
HOLDS = Marker("a test that holds")
FAILS = Marker("a test that fails")


@dataclass(frozen=True)
class CarryElement:
    """`carry[1]`, or `x` of `x, k = carry`, in the body of a lax loop being probed: that element of its carry."""

    position: int


def carry_marker(position: int | None) -> str:
    """The `param` of a key state that is the carry of a lax loop body (or its element `position`)."""
    return "<carry>" if position is None else f"<carry {position}>"


class KeyFacts(Protocol):
    """What the key domain asks of the file's key analysis (`facts.KeyFlowFacts`), which runs it."""

    ctx: "SourceFile"
    traced: TracedFunctions
    #: the configured key parameter names, as one pattern
    key_name: "re.Pattern[str]"
    #: a test file: only direct draws from one key are reported there
    test_file: bool
    #: the `unknown-calls-consume-keys` setting
    unknown_calls_consume: bool
    #: the `strict-key-reuse` setting: report deliberate-looking reuse too
    strict: bool
    #: the file's index of what the semantic model says (`facts.FileIndex`: attribute uses, order)
    lines: Any

    def order(self, node: cst.CSTNode) -> int: ...

    def read_summary(self, function: FunctionNode) -> Summary: ...

    def annotation_text(self, param: cst.Param) -> str: ...

    def callee(self, func: cst.BaseExpression, scope: Scope, depth: int = 0) -> Callee | None: ...

    def compiled(self, func: cst.BaseExpression, reached: Callee, scope: Scope) -> bool: ...

    def discarded(self, node: cst.Call, statement: cst.BaseSmallStatement) -> bool: ...

    def warm_up(self, node: cst.Call, statement: cst.CSTNode | None, scope: Scope) -> bool: ...

    def drawing_initializer(self, func: cst.BaseExpression, scope: Scope) -> str | None: ...

    def fixed_truth(self, test: cst.Comparison, scope: Scope) -> bool | None: ...

    def outside_draws(self, function: FunctionNode | None) -> "list[tuple[str, Scope, Consumption]]": ...

    @property
    def draws_from_outside(self) -> bool: ...

    def aligned(self, first: Consumption, again: Consumption, kind: str) -> bool: ...

    def carry_reuse(self, function: FunctionNode, carry_index: int,
                    pairs: bool) -> list[tuple[int | None, str, Consumption]]: ...

    def in_other_cells(self, one: cst.CSTNode, other: cst.CSTNode) -> bool: ...

    def dead(self, consumption: Consumption, until: Consumption | None = None) -> bool: ...
