"""The framework table shipped with jaxlint (`data/frameworks.toml`): how JAX and the libraries
built on it (Equinox, Flax NNX and Linen, Haiku, NumPyro, Diffrax) trace the functions users hand them.
Loaded once per process; the JAX layer derives its lists from it."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

TABLE = Path(__file__).resolve().parent / "data" / "frameworks.toml"

MODES = frozenset({"jit", "lax", "vmap", "grad", "abstract", "call"})
LEAVES = frozenset({"all", "arrays"})
#: the modes a project's own transform may be declared with (`extend-transforms`): `lax` needs the
#: positions of its bodies, and `call` traces nothing
DECLARABLE_MODES = tuple(sorted(MODES - {"lax", "call"}))
RETURNS = frozenset({"outputs", "grad", "value_and_grad"})


@dataclass(frozen=True)
class Transform:
    """One function that takes a function and traces it (see the table's header for each field)."""

    name: str
    mode: str
    #: "all": every leaf of the arguments is traced; "arrays": only array leaves
    leaves: str
    premise: str
    returns: str | None = None
    new_function: bool = False
    #: lax-style calls: positions and keywords of the arguments that are traced bodies
    body_positions: tuple[int, ...] = ()
    body_keywords: tuple[str, ...] = ()
    branch: bool = False
    broadcasts_keys: bool = False
    #: inside another trace it still spreads the work over devices: not inlined like a nested jit
    partitions: bool = False


@dataclass(frozen=True)
class LibraryTrace:
    """A library call that traces the functions it is given (`NUTS(model)`, `ODETerm(field)`)."""

    name: str
    #: where the call takes the functions it traces
    function_positions: tuple[int, ...]
    function_keywords: tuple[str, ...]
    mode: str
    #: the positions of the function's parameters that arrive traced (the others are concrete)
    traced: tuple[int, ...]
    #: a NumPyro latent sample site (`numpyro.sample` without `obs=`) returns a tracer in them
    latent_samples: bool
    premise: str
    #: what runs the trace, where that is not the call itself (a term's vector field is traced by
    #: the solver it is given to), as messages name it
    traced_by: str | None = None

    @property
    def label(self) -> str:
        return self.traced_by or self.name


@dataclass(frozen=True)
class FrameworkTable:
    transforms: dict[str, Transform]
    host_callbacks: frozenset[str]
    tree_maps: dict[str, int]
    haiku_transforms: dict[str, int]
    #: flax.linen's module classes, whose `apply`/`init` call one of their methods
    linen_module_bases: frozenset[str]
    #: decorators of Linen modules' methods that call them with the arguments given (`nn.compact`)
    linen_method_decorators: frozenset[str]
    #: `apply`/`init`/... -> how many leading arguments come before the method's own
    linen_apply_methods: dict[str, int]
    #: the keywords `apply`/`init` keep for themselves (`method`, `rngs`, `mutable`, ...)
    linen_apply_keywords: frozenset[str]
    #: the methods of those that draw the module's parameters from their leading key (`init`)
    linen_drawing_methods: frozenset[str]
    static_pytree_registrations: frozenset[str]
    nnx_pytree_bases: frozenset[str]
    nnx_variables: frozenset[str]
    nnx_variable_leaves: frozenset[str]
    numpyro_kernels: frozenset[str]
    #: decorators and base classes that make a class a dataclass pytree (its fields are leaves)
    pytree_dataclass_decorators: frozenset[str]
    pytree_dataclass_bases: frozenset[str]
    #: a library's dataclass pytree -> (its leaf fields, its static fields)
    pytree_class_fields: dict[str, tuple[frozenset[str], frozenset[str]]]
    managed_rng_methods: frozenset[str]
    managed_rng_functions: frozenset[str]
    library_traces: dict[str, LibraryTrace]
    #: section -> the premise that pins it, for the sections that are not transforms
    premises: dict[str, str]

    def names(self, *, mode: str | None = None, leaves: str | None = None,
              partitions: bool | None = None) -> frozenset[str]:
        """The transforms with this mode, these leaves and this `partitions` (any may be left out)."""
        return frozenset(t.name for t in self.transforms.values()
                         if (mode is None or t.mode == mode) and (leaves is None or t.leaves == leaves)
                         and (partitions is None or t.partitions is partitions))


class TableError(ValueError):
    """The table says something the loader does not understand: a typo in a shipped data file."""


def _transform(name: str, entry: dict) -> Transform:
    known = {"mode", "leaves", "premise", "returns", "new_function", "bodies", "branch", "broadcasts_keys", "partitions"}
    unknown = set(entry) - known
    if unknown:
        raise TableError(f"{name}: unknown fields {sorted(unknown)}")
    if entry.get("mode") not in MODES:
        raise TableError(f"{name}: mode {entry.get('mode')!r} is not one of {sorted(MODES)}")
    if entry.get("leaves") not in LEAVES:
        raise TableError(f"{name}: leaves {entry.get('leaves')!r} is not one of {sorted(LEAVES)}")
    if "returns" in entry and entry["returns"] not in RETURNS:
        raise TableError(f"{name}: returns {entry['returns']!r} is not one of {sorted(RETURNS)}")
    if not entry.get("premise"):
        raise TableError(f"{name}: no premise names the test that pins it")
    bodies = entry.get("bodies", {})
    return Transform(
        name=name, mode=entry["mode"], leaves=entry["leaves"], premise=entry["premise"],
        returns=entry.get("returns"), new_function=bool(entry.get("new_function", False)),
        body_positions=tuple(bodies.get("positions", ())), body_keywords=tuple(bodies.get("keywords", ())),
        branch=bool(entry.get("branch", False)), broadcasts_keys=bool(entry.get("broadcasts_keys", False)),
        partitions=bool(entry.get("partitions", False)),
    )


def _library_trace(name: str, entry: dict) -> LibraryTrace:
    known = {"functions", "mode", "traced", "latent_samples", "premise", "traced_by"}
    unknown = set(entry) - known
    if unknown:
        raise TableError(f"{name}: unknown fields {sorted(unknown)}")
    if entry.get("mode") not in MODES:
        raise TableError(f"{name}: mode {entry.get('mode')!r} is not one of {sorted(MODES)}")
    if not entry.get("premise"):
        raise TableError(f"{name}: no premise names the test that pins it")
    functions = entry.get("functions", {})
    if not functions.get("positions") and not functions.get("keywords"):
        raise TableError(f"{name}: no position or keyword says where the traced function is given")
    return LibraryTrace(
        name=name, function_positions=tuple(functions.get("positions", ())),
        function_keywords=tuple(functions.get("keywords", ())), mode=entry["mode"],
        traced=tuple(entry.get("traced", ())), latent_samples=bool(entry.get("latent_samples", False)),
        premise=entry["premise"], traced_by=entry.get("traced_by"))


def _without_premise(section: dict) -> dict:
    return {key: value for key, value in section.items() if key != "premise"}


@lru_cache(maxsize=None)
def load_frameworks(path: Path = TABLE) -> FrameworkTable:
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    sections = ("host_callbacks", "tree_maps", "haiku_transforms", "linen_apply", "static_pytrees", "nnx",
                "numpyro", "managed_randomness", "pytree_classes")
    premises = {}
    for section in sections:
        premise = data[section].get("premise")
        if not premise:
            raise TableError(f"[{section}]: no premise names the test that pins it")
        premises[section] = premise
    randomness = data["managed_randomness"]
    return FrameworkTable(
        transforms={name: _transform(name, entry) for name, entry in data["transforms"].items()},
        host_callbacks=frozenset(data["host_callbacks"]["names"]),
        tree_maps=_without_premise(data["tree_maps"]),
        haiku_transforms=_without_premise(data["haiku_transforms"]),
        linen_module_bases=frozenset(data["linen_apply"]["module_bases"]),
        linen_method_decorators=frozenset(data["linen_apply"]["method_decorators"]),
        linen_apply_methods=dict(data["linen_apply"]["methods"]),
        linen_apply_keywords=frozenset(data["linen_apply"]["keywords"]),
        linen_drawing_methods=frozenset(data["linen_apply"]["draws"]),
        static_pytree_registrations=frozenset(data["static_pytrees"]["registrations"]),
        nnx_pytree_bases=frozenset(data["nnx"]["pytree_bases"]),
        nnx_variables=frozenset(data["nnx"]["variables"]),
        nnx_variable_leaves=frozenset(data["nnx"]["variable_leaves"]),
        numpyro_kernels=frozenset(data["numpyro"]["kernels"]),
        pytree_dataclass_decorators=frozenset(data["pytree_classes"]["decorators"]),
        pytree_dataclass_bases=frozenset(data["pytree_classes"]["bases"]),
        pytree_class_fields={name: (frozenset(entry["leaves"]), frozenset(entry["static"]))
                             for name, entry in data["pytree_classes"]["fields"].items()},
        managed_rng_methods=frozenset(randomness["methods"]),
        managed_rng_functions=frozenset(randomness["functions"]),
        library_traces={name: _library_trace(name, entry) for name, entry in data["library_traces"].items()},
        premises=premises,
    )
