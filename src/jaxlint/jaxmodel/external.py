"""Functions of other modules of the project, as the analysis of one module sees them.

A module's analysis meets calls of functions that live in other modules of the project (`from
losses import clipped_loss`). It sees each such function as a *stand-in*: a `def` with the real
function's parameters and an empty body, so that everything that binds arguments, counts static
positions or applies `functools.partial` works on it as on a function of the module. What the
stand-in's body would tell is asked of the project instead (`ProjectView`): what a call returns
given its argument kinds, which parameters it consumes as keys. The other way round, when a traced
function of the module calls a stand-in with traced arguments, the module reports a `Seed` to the
project, which makes that function traced in its own module, with the chain of calls that explains
why (`TraceStep`).

Nothing here knows how modules are found or analysed; `project/` implements `ProjectView`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import libcst as cst

if TYPE_CHECKING:
    from .values import Kind, Value


#: Names jaxlint knows from its own tables: never followed into a module, even when the project
#: checked holds their source (JAX's own repository), since the tables say what they do under a trace.
TABLE_PREFIXES = ("builtins.", "jax.", "jaxlib.", "numpy.")


@dataclass(frozen=True)
class FunctionRef:
    """A function of a module of the project: `pkg.losses` and `clipped_loss` or `Model.__call__`."""

    module: str
    qualname: str

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.qualname}"


@dataclass(frozen=True)
class TraceStep:
    """One link of the chain that makes a function traced from another module: `caller` (at `path`,
    `line`) calls the next function of the chain while it is traced by `transform`."""

    path: str
    line: int
    #: the calling function's name; "" where the transform is applied to the function itself at
    #: module level (`fast = jax.jit(normalize)`)
    caller: str
    transform: str
    #: in a notebook, the cell (counted from 0) and `line` is the line in it
    cell: int | None = None

    @property
    def where(self) -> str:
        if self.cell is None:
            return f"{self.path}:{self.line}"
        return f"{self.path}, cell {self.cell + 1}, line {self.line}"

    @property
    def action(self) -> str:
        if not self.caller:
            return f"`{self.transform}` is applied to it"
        return f"`{self.caller}` calls it under `{self.transform}`"

    def describe(self) -> str:
        if not self.caller:
            return f"`{self.transform}` is applied to it ({self.where})"
        return f"`{self.caller}` ({self.where}) calls it under `{self.transform}`"


@dataclass(frozen=True)
class Seed:
    """A function traced because a function of another module calls it while traced."""

    qualname: str
    #: parameter -> the kind of value it receives (traced parameter, container of traced leaves)
    param_kinds: "tuple[tuple[str, Kind], ...]"
    modes: frozenset[str]
    #: the transform that traces the chain's outermost function (`jax.jit`)
    transform: str
    #: outermost caller first; the last step is the direct caller
    chain: tuple[TraceStep, ...]

    def joined(self, other: "Seed") -> "Seed":
        """Both ways of being traced: the larger parameter kinds, every mode; the first chain."""
        kinds = dict(self.param_kinds)
        for name, kind in other.param_kinds:
            if kinds.get(name) is None or kinds[name] < kind:
                kinds[name] = kind
        return Seed(self.qualname, tuple(sorted(kinds.items())), self.modes | other.modes,
                    self.transform, self.chain)


@dataclass(frozen=True)
class KeyUse:
    """A parameter of another module's function that the function consumes as a PRNG key."""

    #: consumed by a known consumer (a sampler, `split`), not a guess about an unknown call
    certain: bool
    #: what consumes it there (`jax.random.normal`), and where (`utils.py:12`)
    consumer: str
    where: str
    #: where the function's return value carries what it makes from the key (positions in a returned
    #: tuple, `()` for the whole value; none when nothing leaves it); None when not known
    returned: "frozenset[tuple[int, ...]] | None" = None


@dataclass(frozen=True)
class ConfiguredInteger:
    """An integer the configuration gives, and where it comes from."""

    value: int
    #: what gives it, as a message says it: "the default of `Config.num_steps`"
    what: str
    line: int
    #: the file that says it, as a message names it; None: the file being checked
    path: str | None = None
    #: a default the command line may change
    command_line: bool = False

    def to_json(self) -> list:
        return [self.value, self.what, self.line, self.path, self.command_line]

    @classmethod
    def from_json(cls, data: list | None) -> "ConfiguredInteger | None":
        return cls(*data) if data else None


@dataclass(frozen=True)
class ExternalFunction:
    """A function of another module: its reference and its parameters (a libcst `Parameters`,
    shared with that module's tree or parsed from a stored signature)."""

    ref: FunctionRef
    params: cst.Parameters
    #: a method reached through its class or an instance: `self` is its first parameter
    method: bool = False

    def stand_in(self) -> cst.FunctionDef:
        """A `def` with these parameters and an empty body."""
        return cst.FunctionDef(
            name=cst.Name(self.ref.qualname.rpartition(".")[2]), params=self.params,
            body=cst.SimpleStatementSuite([cst.Expr(cst.Ellipsis())]))


class ProjectView(Protocol):
    """What the analysis of one module may ask of the project it belongs to."""

    #: the module's dotted name (`pkg.losses`)
    module: str

    def function_at(self, dotted: str, bound: bool = False) -> ExternalFunction | None:
        """The project function a dotted name reaches (`pkg.losses.clipped_loss`, also through a
        package's re-export), or None when it is not a function of another module of the project.
        `bound`: `dotted` names a method of a class, called on an instance."""

    def wrapper(self, ref: FunctionRef) -> str | None:
        """What a decorator of the function makes of a call (`TRANSFORM_WRAPPERS`' value for
        `@jax.jit` and the like); None for a plain function or when not known."""

    def returned(self, ref: FunctionRef, signature: object) -> "Value | None":
        """What the function's body returns when called with `signature` (argument kinds, whether
        the caller is traced, static leaves), or None when not known."""

    def key_uses(self, ref: FunctionRef) -> dict[str, KeyUse]:
        """The parameters the function consumes as PRNG keys."""

    def returns_array(self, ref: FunctionRef) -> bool:
        """Whether the function returns a JAX array on every path."""

    def returns_compiled(self, ref: FunctionRef) -> bool:
        """Whether the function returns, on every path, a function whose calls run transformed by
        JAX (`return jax.jit(step)`): a factory of compiled functions."""

    def pytree_attributes(self, dotted: str) -> "tuple[tuple[str, Kind], ...] | None":
        """The attributes of an instance of the project class `dotted` names (also through a
        package's re-export), as `Value.attributes`, where it is a dataclass pytree: its leaf fields
        traced, the others not known. None for another class, or a name that is not a class of
        another module of the project."""

    def configured(self, dotted: str, how: str, field: str) -> ConfiguredInteger | None:
        """The integer `field` of the object `dotted` names in another module gives (`how`: read as
        it is, or made by calling it; `configured.ConfiguredIntegers.exported`), with where it is
        said; None when it is not a configuration value known there."""

    def seeds(self) -> list[Seed]:
        """The functions of this module that functions of other modules trace."""

    def named_elsewhere(self, name: str) -> bool:
        """Whether a module of the project that imports this one mentions `name`, so that it may
        call this module's function of that name (outside any trace, for all that is known)."""
