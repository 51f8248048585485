"""PRNG key flow: where a key is consumed, and where a consumed key is consumed again.

The model follows JAX's own key-reuse checker (`jax.debug_key_reuse`): every `jax.random` sampler
and `split` consume the key they are given; `fold_in`, `key_data` and `clone` do not. A key handed to
a function of the same module is consumed when that function consumes its parameter (a summary per
function, computed to a fixed point), also when the function is reached through `jax.jit`, `vmap`,
`pmap` or `functools.partial`, or is a method of a class of the module (`obj.method(key)` for
`obj = Class(...)`, `Class.method(key)`, `self.method(key)` unless a subclass here overrides it,
`obj(key)` through `__call__`); a key handed to any other function counts as consumed (the
`unknown-calls-consume-keys` setting), unless the function only inspects or stores it (builtins,
`jax.numpy`, `jax.debug`, class constructors, `assert_*`/`is_*` checks, numpyro's `seed` handler).
Returning a key or putting it in a container does not consume it.

The key domain (`KeyDomain`) runs on the generic interpreter (`dataflow.FlowInterpreter`), which owns
the control flow: each scope (the module's top level and every function) is run in source order;
`if` branches (and `a if t else b`, and the right side of `and`/`or`) are exclusive and merge
afterwards, a path that returns, raises, breaks or continues does not flow on, and loop bodies and
comprehensions run to a fixed point, so that a key consumed in one iteration and not rebound from a
fresh `split` is seen consumed again in the next. At a merge a key consumed on any path is consumed;
a name that holds a key on one path only (`rng = cfg.rng` before a loop whose body rebinds it from a
`split`) is still followed, as a key for sure consumers only. A function given to `jax.tree.map`
runs the same way, once per leaf, where it is called; the body of a `lax.scan`, `fori_loop` or
`while_loop` is probed for carry keys it draws from and returns unchanged, which every iteration
draws from again (reported at the loop call, as JAX's checker does). Code that no path reaches
consumes nothing. Two draws that only shuffle or index arrays (`permutation`, `shuffle`, `choice`, a
`randint` used as an index) are the same order given to several arrays on purpose, to keep a batch
aligned: not reported unless a loop other than one over a dict's arrays (`batch.items()`) repeats
them. A compiled function called for nothing but its compilation (its result thrown away: a warm-up
before timing) does not consume the key it is given. In test code only two direct `jax.random` draws
from one key are reported: tests give one key to the code under test and to a reference on purpose.
In a notebook, a key drawn from in one cell and again in another is not reported: cells run one at a
time, again and out of order, so the text does not say in which order the draws run.

Cost: the file's semantic model (one walk, shared with the other facts) gives what the interpreter
needs ahead of time (call order, names bound to wrapped functions, attribute uses, the identifiers
of each function); a function whose identifiers show no way to hold a key is not interpreted for
findings; a parameter summary is computed only for a function a key is handed to (and what it hands
keys to in turn), and only if it makes a call and has a parameter that can hold a key; while
summaries settle, a function is interpreted again only when a summary it read has changed.

`KeyFlowFacts.of(ctx)` computes everything once per file; rules read `.reuses` and `.summary(function)`.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

import libcst as cst

from ..dataflow import FlowInterpreter, SettledSummaries
from ..dataflow.interpreter import expressions_below
from ..dataflow.marker import Marker
from ..model.settings import DEFAULT_KEY_NAMES
from .jax_names import JIT_FAMILY
from .pending_work import CLOCKS
from .values import STATIC_ATTRIBUTES
from ..semantic.literals import Literals
from ..semantic.model import SemanticModel
from ..semantic.scopes import Scope
from ..semantic.source_file import CELL_BOUNDARY
from ..syntax.arguments import Passing
from ..syntax.positions import node_spans
from ..syntax.walk import last_name, target_names, walk
from .traced import CONTAINER_ANNOTATIONS, LAX_BODIES, LAX_BRANCHES, MODES, TREE_MAPS, Callee, TracedFunctions

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

FunctionNode = cst.FunctionDef | cst.Lambda

#: `jax.random` functions that make a fresh key without consuming one.
KEY_MAKERS = frozenset({"jax.random.key", "jax.random.PRNGKey", "jax.random.wrap_key_data"})
#: `jax.random` functions that return fresh keys from a key.
KEY_DERIVERS = frozenset({"jax.random.split", "jax.random.fold_in", "jax.random.clone"})
#: `jax.random` functions that read a key without consuming it.
NON_CONSUMING_RANDOM = frozenset({
    "jax.random.fold_in", "jax.random.key_data", "jax.random.key_impl", "jax.random.clone",
    "jax.random.wrap_key_data", "jax.random.key", "jax.random.PRNGKey", "jax.random.default_prng_impl",
})
#: Calls that inspect, move or store a key but never draw from it.
NON_CONSUMING_PREFIXES = (
    "builtins.", "jax.numpy.", "numpy.", "jax.debug.", "jax.tree.", "jax.tree_util.", "logging.",
    # lax's slicing and reshaping move keys around without drawing from them
    "jax.lax.dynamic_", "jax.lax.slice", "jax.lax.index_in_dim", "jax.lax.concatenate", "jax.lax.select",
    "jax.lax.squeeze", "jax.lax.expand_dims", "jax.lax.reshape", "jax.lax.broadcast", "jax.lax.transpose",
    "jax.lax.rev", "jax.lax.gather",
    "typing.", "jax.dtypes.", "pickle.", "copy.", "jax.typeof", "jax.device_put", "jax.device_get",
    "jax.block_until_ready", "jax.lax.stop_gradient", "jax.ShapeDtypeStruct", "jax.eval_shape",
    "jax.make_jaxpr", "jax.random.key_data",
    # flax's helpers copy a value to every device or back (`replicate(key)`), drawing nothing
    "flax.jax_utils.",
)
#: Functions that keep a key for later (a handler seeded with it) without drawing from it.
STORING_CALLS = frozenset({"numpyro.handlers.seed"})
#: Called names that check or compare a key rather than draw from it (`assert_equal`, `is_valid_key`).
INSPECTING_NAME = re.compile(r"^_*(assert|is_|has_)")
#: Names of functions that initialise a model's parameters from a key (`model.init`, `init_params`).
INIT_NAME = re.compile(r"^_*(init|initiali[sz]e)(_|$)|_init$")
#: Methods of a jitted function that trace or compile it for the arguments given, without running it.
AHEAD_OF_TIME = frozenset({"lower", "trace"})
#: Transforms whose wrapped function receives the arguments it is called with (`jax.jit(step)(state, key)`).
PASS_THROUGH = frozenset({name for name in MODES if name not in ("jax.make_jaxpr", "jax.eval_shape")})
#: How many times one function is interpreted while summaries settle (a bound on recursive cycles).
MAX_SUMMARY_RUNS = 4
#: Test files: `test_*.py`, `*_test.py`, `conftest.py`.
TEST_FILE = re.compile(r"(^test_.*|_test|^conftest|^tests)\.pyi?$")
#: lax loops (their body runs again and again): a key in their initial carry is consumed by the loop.
LAX_LOOPS = frozenset(LAX_BODIES) - LAX_BRANCHES - {"jax.lax.associative_scan"}
#: lax loops with a carry: (position and keyword of the body, of the initial carry; index of the
#: carry among the body's parameters; whether the body returns `(carry, output)` rather than the carry)
CARRY_LOOPS = {
    "jax.lax.scan": ((0, "f"), (1, "init"), 0, True),
    "jax.lax.fori_loop": ((2, "body_fun"), (3, "init_val"), 1, False),
    "jax.lax.while_loop": ((1, "body_fun"), (2, "init_val"), 0, False),
}
#: `jax.random` draws of indices that reorder or pick elements, by their parameters after the key (with
#: the defaults of those that shape the draw) and the one that names the array drawn from. One key given to
#: several such draws alike (every leaf of a batch, then its targets) gives every array the same order,
#: which keeps the batch aligned. `choice` weighted by `p` samples rather than reorders: not one of them.
ALIGNING_DRAWS: dict[str, tuple[tuple[tuple[str, str | None], ...], str | None]] = {
    "jax.random.permutation": ((("x", None), ("axis", "0"), ("independent", "False")), "x"),
    "jax.random.shuffle": ((("x", None), ("axis", "0")), "x"),
    "jax.random.choice": ((("a", None), ("shape", "()"), ("replace", "True"), ("p", "None"), ("axis", "0"),
                           ("mode", "None")), "a"),
    # aligning only where its result indexes an array (`x[idx]`)
    "jax.random.randint": ((("shape", None), ("minval", None), ("maxval", None), ("dtype", "int")), None),
}
#: Calls that index an array with their arguments (`jnp.take(x, idx, axis=0)`, `lax.dynamic_slice`).
INDEXING_CALLS = frozenset({"take", "take_along_axis", "dynamic_slice", "dynamic_slice_in_dim",
                            "dynamic_index_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim",
                            "dynamic_update_index_in_dim"})

#: Last name of every `jax.random` function that makes or derives a key (a call of one, however
#: imported, is written with this name unless renamed on import).
KEY_SOURCE_NAMES = frozenset({"key", "PRNGKey", "wrap_key_data", "split", "fold_in", "clone"})
#: Words of the annotations KEY_ANNOTATIONS recognises.
KEY_ANNOTATION_WORDS = frozenset({"PRNGKeyArray", "Key", "PRNGKey", "KeyArray"})
#: Parameter names taken for keys by default (`key-names` in the configuration replaces them).
KEY_NAME = re.compile(r"^(key|rng|prng_key|prng|keys|rngs|[A-Za-z0-9_]+_(key|rng|keys|rngs))$")
#: Annotations that mark a parameter as a key.
KEY_ANNOTATIONS = re.compile(r"(PRNGKeyArray|\bKey\[|PRNGKey\b|KeyArray)")
ARRAY_ANNOTATION = re.compile(r"(jax\.Array|\bArray\b)")
#: Attributes a key has; any other attribute use means the name is not a JAX key (a NumPy Generator).
KEY_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size", "reshape", "T", "at", "block_until_ready",
                            "sharding", "devices", "device", "squeeze", "copy", "astype"})


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


@dataclass(frozen=True)
class KeyState:
    """What a tracked name holds: a fresh key, or a key consumed at `consumed`."""

    consumed: Consumption | None = None
    #: a key for sure (made by jax.random, named or annotated as one), not just a parameter
    known: bool = False
    #: the parameter whose value this still is (for summaries)
    param: str | None = None


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
    #: key of its carry and returns it unchanged, `node` being the lax call)
    kind: str = "again"


@dataclass
class Summary:
    #: parameter -> its first consuming call in the body, and whether the consumer is known
    consumed: dict[str, Consumption] = field(default_factory=dict)


#: name -> what it holds: its KeyState, or READ when it holds no key
State = dict[str, "KeyState | object"]


def _same_summary(old: "Summary", new: "Summary") -> bool:
    """The same parameters consumed, each as surely: what a caller's analysis reads of a summary."""
    return set(old.consumed) == set(new.consumed) and all(
        old.consumed[p].certain == new.consumed[p].certain for p in new.consumed)


class KeyFlowFacts:
    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        self._index: _FileIndex | None = None
        self.traced = ctx.fact(TracedFunctions)
        self.functions: list[FunctionNode] = list(self.traced.functions)
        #: which parameters each function consumes, to a fixed point, settled where a key is given
        self.summaries: SettledSummaries[Summary] = SettledSummaries(
            self._summarise, Summary(), _same_summary, MAX_SUMMARY_RUNS, summarised=self._summarised)
        self._function_ids = {id(f) for f in self.functions}
        self.reuses: list[Reuse] = []
        self.test_file = is_test_file(ctx.path)
        self.key_name = key_name_pattern(ctx.settings.key_names)
        self.unknown_calls_consume = ctx.settings.unknown_calls_consume_keys
        #: report deliberate-looking reuse too (the `strict-key-reuse` setting)
        self.strict = ctx.settings.strict_key_reuse
        self._seen: set[int] = set()
        self._carry_reuses: dict[tuple[int, int, bool], list[tuple[int | None, str, Consumption]]] = {}
        #: id(Param) -> the source of its annotation
        self._annotations: dict[int, str] = {}
        #: id(function or module) -> ids of the calls in it whose result indexes an array
        self._index_draws: dict[int, set[int]] = {}
        #: id(stand-in) -> what that function of another module consumes
        self._external_summaries: dict[int, Summary] = {}
        self._compute()

    @property
    def lines(self) -> "_FileIndex":
        if self._index is None:
            self._index = _FileIndex(self.ctx)
        return self._index

    @classmethod
    def of(cls, ctx: "SourceFile") -> "KeyFlowFacts":
        return ctx.fact(cls)

    # -- driver ---------------------------------------------------------------------------------
    def _compute(self) -> None:
        if "random" not in self.ctx.source and "key" not in self.ctx.source:
            return
        # Parameter summaries settle as the runs below hand keys to functions (`read_summary`).
        self._flow(None, summary=False)
        for function in self.functions:
            if self.may_hold_keys(function):
                self._flow(function, summary=False)
        self.reuses.sort(key=lambda r: self.lines.order(r.node))

    def _summarise(self, function: FunctionNode) -> Summary:
        return Summary(self._flow(function, summary=True).param_consumed)

    def _summarised(self, function: FunctionNode) -> bool:
        """A function of the file that makes a call and has a parameter (else it consumes none)."""
        return id(function) in self._function_ids and id(function) in self.lines.calling \
            and _parameter_count(function) > 0

    def summary(self, function: FunctionNode) -> Summary:
        """Which parameters `function` consumes (settled)."""
        external = self.traced.external.get(id(function))
        if external is not None:
            return self._external_summary(function, external)
        return self.summaries.get(function)

    def read_summary(self, function: FunctionNode) -> Summary:
        """`summary`, also while summaries settle: a reader is analysed again if it changes."""
        external = self.traced.external.get(id(function))
        if external is not None:
            return self._external_summary(function, external)
        return self.summaries.read(function)

    def _external_summary(self, function: FunctionNode, external) -> Summary:
        """What a function of another module of the project consumes, as that module's analysis says."""
        found = self._external_summaries.get(id(function))
        if found is None:
            consumed = {}
            for param, use in self.traced.project.key_uses(external.ref).items():
                spelled = cst.Call(func=_spelled(use.consumer))
                consumed[param] = Consumption(spelled, -1, use.certain, direct=True, draw=use.consumer,
                                              where=use.where)
            found = self._external_summaries[id(function)] = Summary(consumed)
        return found

    def may_hold_keys(self, function: FunctionNode) -> bool:
        """Whether a function can hold a key of its own to report on: a key-like name, a key
        annotation, or a call that makes or splits a key (else its interpretation finds nothing)."""
        if self.lines.may_hold_keys(function, self.key_name):
            return True
        params = function.params
        return any(param.annotation is not None and self.key_annotated(param)
                   for param in (*params.posonly_params, *params.params, *params.kwonly_params))

    def key_annotated(self, param: cst.Param) -> bool:
        return bool(KEY_ANNOTATIONS.search(self.annotation_text(param)))

    def annotation_text(self, param: cst.Param) -> str:
        """The source of a parameter's annotation; "" when it names neither a key nor an array."""
        text = self._annotations.get(id(param))
        if text is None:
            annotation = param.annotation.annotation
            text = cst.Module([]).code_for_node(annotation) if _may_name_key_or_array(annotation) else ""
            self._annotations[id(param)] = text
        return text

    def _flow(self, function: FunctionNode | None, summary: bool) -> "KeyDomain":
        """Runs the key domain over a function (or the module's top level, for None)."""
        scope = self.traced.scopes.get(id(function), self.ctx.module_scope) if function else self.ctx.module_scope
        domain = KeyDomain(self, function, scope, summary)
        if function is None:
            FlowInterpreter(domain).run(self.ctx.module)
        else:
            entry = domain.entry(function)
            if entry is not None:
                FlowInterpreter(domain).run(function, entry)
        return domain

    def record(self, reuse: Reuse) -> None:
        if id(reuse.node) not in self._seen:
            self._seen.add(id(reuse.node))
            self.reuses.append(reuse)

    # -- shared questions ---------------------------------------------------------------------
    def callee(self, func: cst.BaseExpression, scope: Scope, depth: int = 0) -> Callee | None:
        """The module function a call of `func` runs: the shared resolver (`TracedFunctions.callee`:
        a `def`, a lambda, `functools.partial` of one, a method through its class, an instance or
        `self`), also through the wrapper of a transform that hands the call's arguments on
        (`jax.jit(f)(...)`, or a name bound once to `jax.pmap(partial(f, a), …)`)."""
        if depth > 4:
            return None
        if isinstance(func, cst.Name):
            found = scope.lookup(func.value)
            if found is not None and len(found[1].nodes) == 1:
                value = self.traced.assigned_calls.get(id(found[1].nodes[0]))
                if value is not None and self._passes_through(value, found[0]):
                    return self.callee(value.args[0].value, found[0], depth + 1)
        elif isinstance(func, cst.Call) and self._passes_through(func, scope):
            return self.callee(func.args[0].value, scope, depth + 1)
        return self.traced.callee(func, scope)

    def compiled(self, func: cst.BaseExpression, reached: Callee, scope: Scope) -> bool:
        """Whether calling `func` runs `reached` compiled by `jax.jit` (or another of its family):
        `jax.jit(f)(...)`, a name bound once to `jax.jit(f)`, or a function decorated with it."""
        resolve = self.ctx.names.qualified_name
        if isinstance(func, cst.Name):
            found = scope.lookup(func.value)
            if found is not None and len(found[1].nodes) == 1:
                value = self.traced.assigned_calls.get(id(found[1].nodes[0]))
                if value is not None and resolve(value.func, found[0]) in JIT_FAMILY:
                    return True
        elif isinstance(func, cst.Call) and resolve(func.func, scope) in JIT_FAMILY:
            return True
        function = reached.function
        outer = self.traced.scopes.get(id(function))
        outer = outer.parent if outer is not None and outer.parent is not None else self.ctx.module_scope
        for decorator in getattr(function, "decorators", ()):
            use = self.traced.transform_use(decorator.decorator, outer)
            if use is not None and use.transform in JIT_FAMILY:
                return True
        return False

    def _passes_through(self, call: cst.Call, scope: Scope) -> bool:
        """`jax.jit(f)`, `jax.vmap(f, …)`: a wrapper whose calls pass their arguments to `f`."""
        return bool(call.args) and call.args[0].keyword is None and not call.args[0].star \
            and self.ctx.names.qualified_name(call.func, scope) in PASS_THROUGH

    # -- deliberate alignment -------------------------------------------------------------------
    def aligned(self, first: Consumption, again: Consumption, kind: str) -> bool:
        """Whether two draws from one key are the same index draw (a permutation, a shuffle, an
        unweighted choice, a random index used to index) made alike for different arrays, so that
        those arrays stay aligned: `jax.tree.map(lambda x: jax.random.permutation(key, x), batch)`,
        then `jax.random.permutation(key, targets)`. Two such draws in a row from the same array, or
        shaped differently, align nothing: they are still reported."""
        first_draw, again_draw = _drawn_by(first), _drawn_by(again)
        if first_draw.draw != again_draw.draw or not self._aligning(first_draw) or not self._aligning(again_draw):
            return False
        if kind == "leaves":
            return True  # the same call, for every leaf
        one, other = _index_draw_arguments(first_draw), _index_draw_arguments(again_draw)
        if one is None or other is None or one[1] != other[1] or one[1].get("p", "None") != "None":
            return False
        if one[0] is None:
            return False  # `randint` twice in a row: nothing tells which arrays its indices are for
        # in one function, the same expression twice is the same array: two equal draws, no alignment
        return one[0] != other[0] or first.via is not None or again.via is not None

    def _aligning(self, draw: Consumption) -> bool:
        if draw.draw not in ALIGNING_DRAWS:
            return False
        if draw.draw == "jax.random.randint":
            if draw.within is None:
                return False
            if id(draw.within) not in self._index_draws:
                self._index_draws[id(draw.within)] = _index_draws(draw.within)
            return id(draw.node) in self._index_draws[id(draw.within)]
        return _index_draw_arguments(draw) is not None

    def carry_reuse(self, function: FunctionNode, carry_index: int, pairs: bool) -> list[tuple[int | None, str, Consumption]]:
        """Keys of the carry that a lax loop body draws from and returns unchanged, so that every
        iteration draws from the same key: (carry position, name in the body, the draw)."""
        cache_key = (id(function), carry_index, pairs)
        found = self._carry_reuses.get(cache_key)
        if found is not None:
            return found
        params = (*function.params.posonly_params, *function.params.params)
        found = self._carry_reuses[cache_key] = []
        if len(params) <= carry_index:
            return found
        scope = self.traced.scopes.get(id(function))
        if scope is None:
            return found
        domain = KeyDomain(self, function, scope, summary=True)
        carry = params[carry_index].name.value
        domain.carry = (carry, pairs)
        FlowInterpreter(domain).run(function, {carry: KeyState(param=_carry_marker(None))})
        found.extend(domain.carry_reused)
        return found

    def in_other_cells(self, one: cst.CSTNode, other: cst.CSTNode) -> bool:
        """Whether two nodes are in different cells of a notebook. Cells are run one at a time, again
        and out of order, and teaching notebooks draw from one key in cell after cell on purpose (an
        exercise per cell, a draw repeated to show it is reproducible): the order the draws run in,
        and whether both run at all, is not in the text."""
        return CELL_BOUNDARY in self.ctx.source and \
            self.ctx.cell_position(self.line(one)) != self.ctx.cell_position(self.line(other))

    def order(self, node: cst.CSTNode) -> int:
        return self.lines.order(node)

    def line(self, node: cst.CSTNode) -> int:
        """The 1-based line of a node."""
        return self.lines.line(node)

    def find_lines(self, nodes: Iterable[cst.CSTNode]) -> None:
        """Finds the lines of several nodes at once, for `line` to answer: each search generates the
        code of the module up to its last node, so one per message made big files quadratic."""
        self.lines.find_lines(nodes)


class _FileIndex:
    """What the interpreter needs to know ahead of time, read from the file's `SemanticModel`:

    * the source order of calls (a pre-order index), and lines of nodes, resolved only when asked;
    * per function (and for the module): the names used in its body with an attribute a JAX key does
      not have (`rng.normal(...)`: a NumPy Generator, never a key);
    * per function: the identifiers written directly in it (not in nested functions), so that a
      function that cannot hold a key (no key-like name, no call that makes one) is not interpreted.
    """

    def __init__(self, file: "SourceFile") -> None:
        model = SemanticModel.of(file)
        self.module = module = file.module
        self.index: dict[int, int] = model.call_order
        #: ids of the functions with a call written directly in them (not only in nested functions)
        self.calling: set[int] = model.calling
        self.identifiers: dict[int, set[str]] = model.identifiers
        self.attribute_uses: dict[int, set[str]] = {
            owner: {name for name, attribute in uses if attribute not in KEY_ATTRIBUTES}
            for owner, uses in model.attribute_uses.items()}
        self.attribute_uses.setdefault(id(module), set())
        #: local names for `jax.random.key/split/...` (`from jax.random import split as jsplit`)
        self.key_aliases: set[str] = set()
        aliases = self.key_aliases
        for node, _, _ in model.sites_of(cst.Assign, cst.ImportAlias):
            kind = type(node)
            if kind is cst.Assign:
                if last_name(node.value) in KEY_SOURCE_NAMES:
                    for target in node.targets:
                        aliases.update(target_names(target.target))
            elif kind is cst.ImportAlias:
                if node.asname is not None and last_name(node.name) in KEY_SOURCE_NAMES \
                        and isinstance(node.asname.name, cst.Name):
                    aliases.add(node.asname.name.value)
        #: id(node) -> its line, for the nodes a message named
        self._lines: dict[int, int] = {}
        #: key-name pattern -> the identifiers of the file that may hold or make a key
        self._holding: dict["re.Pattern[str]", frozenset[str]] = {}

    def order(self, node: cst.CSTNode) -> int:
        return self.index.get(id(node), -1)

    def line(self, node: cst.CSTNode) -> int:
        # positions of the nodes asked for only: messages name a few lines, not every node of the file
        line = self._lines.get(id(node))
        if line is None:
            line = self._lines[id(node)] = node_spans(self.module, [node])[id(node)][0][0]
        return line

    def find_lines(self, nodes: Iterable[cst.CSTNode]) -> None:
        missing = {id(node): node for node in nodes if id(node) not in self._lines}
        if missing:
            try:
                spans = node_spans(self.module, missing.values())
            except KeyError:  # a node of another tree: `line` answers for each alone
                return
            for key in missing:
                self._lines[key] = spans[key][0][0]

    def may_hold_keys(self, function: FunctionNode, key_name: "re.Pattern[str]") -> bool:
        """Whether the function mentions anything a key can come from: a key-like name (a parameter or
        a binding), a key annotation, or a call that makes or splits a key."""
        words = self.identifiers.get(id(function))
        if words is None:
            return True
        holding = self._holding.get(key_name)
        if holding is None:
            # the words of the whole file that can hold or make a key, found once
            every = set().union(*self.identifiers.values())
            holding = self._holding[key_name] = frozenset(
                {word for word in every if _key_like(word, key_name)} | KEY_SOURCE_NAMES | self.key_aliases)
        return not words.isdisjoint(holding)


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


@dataclass(frozen=True)
class CarryElement:
    """`carry[1]`, or `x` of `x, k = carry`, in the body of a lax loop being probed: that element of its carry."""

    position: int


class KeyDomain:
    """The key domain for one scope (a function or the module's top level), run by the generic
    interpreter: names hold a `KeyState` (or READ when they hold no key); `evaluate` says where a
    call consumes a key and what it makes. In `summary` mode it only records which parameters the
    scope consumes; otherwise it records every reuse on `facts`. With `carry` set it probes the
    body of a lax loop for carry keys it draws from and returns unchanged."""

    def __init__(self, facts: KeyFlowFacts, function: FunctionNode | None, scope: Scope, summary: bool) -> None:
        self.facts = facts
        #: the function run (None for the module's top level)
        self.owner = function
        self.scope = scope
        self.summary = summary
        #: id(tree map call) -> the names it found consumed already when it began
        self.consumed_before_map: dict[int, set[str]] = {}
        self.param_consumed: dict[str, Consumption] = {}
        self.not_keys = facts.lines.attribute_uses.get(id(function) if function is not None else id(facts.ctx.module), set())
        self._test_code: bool | None = None
        self._names = facts.ctx.names
        #: ids of the functions being applied in place (a function mapping itself is not run again)
        self.inlined: set[int] = set()
        #: for a lax loop body: (its carry parameter, whether it returns `(carry, output)`)
        self.carry: tuple[str, bool] | None = None
        #: (carry position or None for the whole carry, name, consumption) of carry keys drawn
        #: from and returned unchanged
        self.carry_reused: list[tuple[int | None, str, Consumption]] = []

    @property
    def test_code(self) -> bool:
        """In a test a key given to two functions is how tests compare them, not a mistake."""
        if self._test_code is None:
            self._test_code = self.facts.test_file or in_test_function(self.scope)
        return self._test_code

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        # the scope changes while a function mapped over a pytree is applied in place
        return self._names.qualified_name(expr, self.scope)

    # -- entry ----------------------------------------------------------------------------------
    def entry(self, function: FunctionNode) -> "State | None":
        """The parameters that may hold keys, as the run starts; None in summary mode when none can
        (the summary is then empty without a run)."""
        state: State = {}
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            name = param.name.value
            if name in ("self", "cls"):
                continue
            known = self._param_is_key(param)
            if known is False:
                continue
            if self.summary or known:
                # a parameter only *named* like a key (`key` is also attention's query/key/value)
                # counts as a key for sure consumers only, not for unknown functions
                state[name] = KeyState(known=known == "annotated", param=name)
        if self.summary and not state:
            return None
        return state

    def _param_is_key(self, param: cst.Param) -> "bool | str | None":
        """"annotated": a key type; True: named like a key; False: not one (annotated otherwise, or
        used like a NumPy Generator); None: unknown."""
        name = param.name.value
        if name in self.not_keys:
            return False
        if param.annotation is not None:
            text = self.facts.annotation_text(param)
            if KEY_ANNOTATIONS.search(text):
                if _mixed_container(param.annotation.annotation):
                    # `carry: Tuple[Array, PRNGKey]`: some of its elements are keys, not the value itself
                    return True if self.facts.key_name.match(name) else None
                return "annotated"
            if ARRAY_ANNOTATION.search(text) and self.facts.key_name.match(name):
                return True
            return False
        return True if self.facts.key_name.match(name) else None

    # -- the domain: joins and bindings ---------------------------------------------------------
    def join(self, a, b):
        """Consumed on either path means consumed (the first consumption in source order is the one
        named). A name that holds a key on one path only (`rng = cfg.rng` before a loop whose body
        rebinds it from a `split`) is still followed, as a key for sure consumers only."""
        if a is b or a == b:
            return a
        if type(a) is not KeyState:
            if type(b) is not KeyState:
                return READ
            return KeyState(b.consumed) if b.known or b.param is not None else b
        if type(b) is not KeyState:
            return KeyState(a.consumed) if a.known or a.param is not None else a
        if a.consumed is not None and b.consumed is not None:
            first = a.consumed if a.consumed.line <= b.consumed.line else b.consumed
        else:
            first = a.consumed or b.consumed
        return KeyState(first, a.known and b.known, a.param if a.param == b.param else None)

    def unbound(self, name: str):
        return READ

    def opaque(self, node: cst.CSTNode):
        return NOT_KEY

    def function(self, node: cst.FunctionDef | cst.Lambda):
        return NOT_KEY

    def comprehension(self, node: cst.BaseExpression, elements):
        return NOT_KEY

    def augmented(self, current, operand, operator: cst.BaseAugOp):
        return NOT_KEY

    def assigned(self, name: str, value, source: cst.BaseExpression | None) -> None:
        pass

    def bound(self, name: str, value, target: cst.CSTNode | None, flow: FlowInterpreter):
        """What a name holds once bound: a fresh key state for a key (a name bound to another name's
        key starts fresh: the two are not followed as one), READ for anything else."""
        if type(value) is KeyState:
            value = KEY if value.known else READ
        if value is KEY or value is KEYS:
            return KeyState(known=True) if name not in self.not_keys else READ
        if type(value) is CarryElement:
            return KeyState(param=_carry_marker(value.position))
        if value is MAYBE and self.facts.key_name.match(name) and name not in self.not_keys:
            # `key, x = carry`: named like a key; sure consumers only
            return KeyState(known=False)
        return READ

    def unpack(self, value, count: int, starred: int | None) -> list:
        """`a, b = value`: each target gets a key from a batch of keys; a name read from a name,
        attribute or subscript without a key of its own (`key, x = carry`) may be one."""
        if type(value) is KeyState:
            if value.param == _carry_marker(None) and starred is None:
                # `params, key = carry` in a lax loop body: each element keeps its carry position
                return [CarryElement(position) for position in range(count)]
            value = NOT_KEY if value.known else READ
        if value is KEYS:
            parts = [KEY] * count
            if starred is not None:
                parts[starred] = KEYS
            return parts
        parts = [MAYBE if value is READ else NOT_KEY] * count
        if starred is not None:
            parts[starred] = NOT_KEY
        return parts

    def iterate(self, target: cst.BaseExpression, iterable: cst.BaseExpression, value,
                flow: FlowInterpreter) -> None:
        """`for k in jax.random.split(key, n)` gives keys, so does `for i, k in enumerate(…)`."""
        if value is KEYS:
            flow.bind(target, KEY)
        elif type(iterable) is cst.Call and type(target) is cst.Tuple and len(target.elements) == 2 \
                and self.resolve(iterable.func) == "builtins.enumerate" and iterable.args \
                and flow.value_at(iterable.args[0].value) is KEYS:
            flow.bind(target.elements[0].value, NOT_KEY)
            flow.bind(target.elements[1].value, KEY)
        else:
            flow.bind(target, NOT_KEY)

    def returning(self, node: cst.CSTNode, value, flow: FlowInterpreter) -> None:
        if self.carry is not None and not flow.unreachable:
            returned = node.value if isinstance(node, cst.Return) else node
            if returned is not None:
                self.returned_carry(returned, flow.env)

    # -- expressions ----------------------------------------------------------------------------
    def evaluate(self, node: cst.BaseExpression, flow: FlowInterpreter):
        kind = type(node)
        if kind is cst.Call:
            return self.call(node, flow)
        if kind is cst.Subscript:
            base = flow.eval(node.value)
            for element in node.slice:  # `x[jax.random.randint(key, ...)]` draws too
                index = element.slice
                parts = (index.value,) if type(index) is cst.Index else (index.lower, index.upper, index.step)
                for part in parts:
                    if part is not None:
                        flow.eval(part)
            if type(base) is KeyState:
                if self.carry is not None and base.param == _carry_marker(None):
                    position = _constant_index(node)
                    if position is not None:
                        return CarryElement(position)
                if base.known and type(node.value) is cst.Name:
                    return KEY
            return READ
        if kind is cst.Attribute:
            flow.eval(node.value)
            return READ
        if kind is cst.IfExp:
            flow.eval(node.test)
            flow.alternatives(node.body, node.orelse)
            return NOT_KEY
        if kind is cst.BooleanOperation:
            flow.eval(node.left)
            flow.alternatives(node.right, None)
            return NOT_KEY
        for child in expressions_below(node):
            flow.eval(child)
        return NOT_KEY

    def call(self, node: cst.Call, flow: FlowInterpreter):
        func = node.func
        callee = self.resolve(func)
        if type(func) is cst.Attribute:
            flow.eval(func.value)
        elif type(func) is cst.Call:
            flow.eval(func)
        for arg in node.args:
            flow.eval(arg.value)
        if not flow.unreachable:
            for name, certain, direct, via in self._consumed_arguments(node, callee, flow):
                self.consume(name, node, certain, direct, flow, via, callee if direct else None)
            if callee in TREE_MAPS:
                self.map_over_leaves(node, flow)
            elif callee in CARRY_LOOPS and not self.summary:
                self.carry_loop(node, callee)
        if callee in KEY_MAKERS or callee == "jax.random.fold_in" or callee == "jax.random.clone":
            return KEY
        if callee == "jax.random.split":
            return KEYS
        return NOT_KEY

    def map_over_leaves(self, node: cst.Call, flow: FlowInterpreter) -> None:
        """`jax.tree.map(f, tree)`: `f` runs once per leaf, here, like a loop body, so that a key it
        closes over and draws from is seen consumed again by the next leaf."""
        function = self._function_argument(node, 0, "f")
        if function is None or id(function) in self.inlined:
            return
        inner = self.facts.traced.scopes.get(id(function))
        if inner is None:
            return
        self.consumed_before_map[id(node)] = {
            name for name, held in flow.env.items() if type(held) is KeyState and held.consumed is not None}
        scope = self.scope
        self.scope = inner
        self.inlined.add(id(function))
        flow.apply_in_place(node, function, inner.bindings)
        self.inlined.discard(id(function))
        self.scope = scope

    def carry_loop(self, node: cst.Call, callee: str) -> None:
        """`lax.scan(body, (params, key), xs)`: a body that draws from a key of its carry and returns
        that same key draws the same numbers in every iteration (JAX's checker raises at this call)."""
        (body_at, body_keyword), _, carry_index, pairs = CARRY_LOOPS[callee]
        function = self._function_argument(node, body_at, body_keyword)
        bound = 0
        if function is None:
            # `lax.scan(partial(step, model), carry, xs)`: the carry comes after the bound arguments
            value = self._argument(node, body_at, body_keyword)
            reached = self.facts.callee(value, self.scope) if isinstance(value, cst.Call) else None
            if reached is None or any(a.star for a in reached.prefix):
                return
            function = reached.function
            bound = int(reached.receiver) + sum(1 for a in reached.prefix if a.keyword is None)
        for _, name, first in self.facts.carry_reuse(function, carry_index + bound, pairs):
            if self.test_code and not first.direct:
                continue
            self.facts.record(Reuse(node, name, first, loop=node, kind="carry"))

    @staticmethod
    def _argument(node: cst.Call, index: int, keyword: str) -> cst.BaseExpression | None:
        """The argument given at this position or by this keyword (None after a `*args`)."""
        if any(a.star for a in node.args):
            return None
        positional = [a for a in node.args if a.keyword is None]
        if index < len(positional):
            return positional[index].value
        return next((a.value for a in node.args if a.keyword is not None and a.keyword.value == keyword), None)

    def _function_argument(self, node: cst.Call, index: int, keyword: str) -> FunctionNode | None:
        """The lambda or function of this module given to a call at this position or keyword."""
        value = self._argument(node, index, keyword)
        if isinstance(value, cst.Lambda):
            return value
        if isinstance(value, cst.Name):  # a `def`, or a name bound once to a lambda
            callee = self.facts.traced.callee(value, self.scope)
            if callee is not None and not callee.receiver and not callee.prefix:
                return callee.function
        return None

    def returned_carry(self, value: cst.BaseExpression, state: "State | None") -> None:
        """At a `return` of a lax loop body: the carry keys it returns as they came, after drawing."""
        if state is None:
            return
        carry_param, pairs = self.carry
        if pairs:
            if not isinstance(value, (cst.Tuple, cst.List)) or len(value.elements) != 2:
                return
            value = value.elements[0].value
        if isinstance(value, cst.Name):
            returned = [(None, value.value)]
        elif isinstance(value, (cst.Tuple, cst.List)):
            returned = [(i, e.value.value) for i, e in enumerate(value.elements) if isinstance(e.value, cst.Name)]
        else:
            return
        for position, name in returned:
            held = state.get(name)
            if type(held) is KeyState and held.param == _carry_marker(position) and held.consumed is not None \
                    and held.consumed.certain:
                self.carry_reused.append((position, name, held.consumed))

    def _consumed_arguments(self, node: cst.Call, callee: str | None,
                            flow: FlowInterpreter) -> list[tuple[str, bool, bool, Consumption | None]]:
        """The names holding keys that this call consumes, each with whether the consumer is known,
        whether it is a `jax.random` call itself, and where a module function it reaches consumes it."""
        state = flow.env
        if not state:
            return []
        tracked = [(arg, arg.value.value) for arg in node.args
                   if type(arg.value) is cst.Name and type(state.get(arg.value.value)) is KeyState and not arg.star]
        if callee is not None and callee.startswith("jax.random."):
            if callee in NON_CONSUMING_RANDOM:
                return []
            key_args = [(a, n) for a, n in tracked if a.keyword is None or a.keyword.value == "key"]
            return [(n, True, True, None) for a, n in key_args[:1]
                    if a is node.args[0] or (a.keyword and a.keyword.value == "key")]
        if callee in LAX_LOOPS:
            names = [n for _, n in tracked]
            for arg in node.args:
                if isinstance(arg.value, (cst.Tuple, cst.List)):
                    names += [e.value.value for e in arg.value.elements
                              if isinstance(e.value, cst.Name) and type(state.get(e.value.value)) is KeyState]
            return [(n, False, False, None) for n in names]
        if not tracked:
            return []
        reached = self.facts.callee(node.func, self.scope)
        if reached is not None and not self.facts.strict and _discarded(node, flow) \
                and self.facts.compiled(node.func, reached, self.scope):
            # a warm-up: a compiled function's only effect is its result, and this one is thrown
            # away, so the numbers it draws are never seen (`step(key, x).block_until_ready()`)
            return []
        if reached is not None:
            summary = self.facts.read_summary(reached.function)
            given = {id(arg.value) for arg in node.args}  # not what a `partial` bound elsewhere
            result = []
            for param, passed in reached.bind(node.args).items():
                if param not in summary.consumed or passed.how is not Passing.ARGUMENT:
                    continue
                value = passed.values[0]
                if id(value) in given and isinstance(value, cst.Name) and type(state.get(value.value)) is KeyState:
                    inner = summary.consumed[param]
                    result.append((value.value, inner.certain, False, inner))
            return result
        if callee is not None and (callee.startswith(NON_CONSUMING_PREFIXES) or callee in NON_CONSUMING_RANDOM
                                   or callee in STORING_CALLS):
            return []
        short = last_name(node.func)
        if short in AHEAD_OF_TIME and isinstance(node.func, cst.Attribute):
            return []  # `jax.jit(f).lower(key, x)`: compiled for the key's type, nothing drawn
        if short is None or short[:1].isupper() or INSPECTING_NAME.match(short) or short in (
                # `state.replace(rng=rng)`, `dataclasses.replace(...)`: stored in a new record
                "append", "extend", "insert", "update", "setdefault", "put", "add", "replace", "info", "debug",
                "warning", "log", "write", "format"):
            return []
        if not self.facts.unknown_calls_consume:
            return []
        return [(n, False, False, None) for _, n in tracked]

    def _repeating_loop(self, name: str, flow: FlowInterpreter) -> cst.CSTNode | None:
        """The innermost loop whose previous iteration (or leaf) consumed `name`: a tree map that
        found the key consumed already when it began repeats an enclosing loop's draw, not a leaf's."""
        for loop in reversed(flow.loops):
            if not (isinstance(loop, cst.Call) and name in self.consumed_before_map.get(id(loop), ())):
                return loop
        return None

    def _over_written_out_cases(self, loop: cst.CSTNode) -> bool:
        """`for model in [hmm_a, hmm_b]: fit(model, key)`: each entry of a written-out list is its own
        experiment, given the same key so that the results compare (common random numbers)."""
        return Literals.of(self.facts.ctx).loop_over_written_out(loop, self.scope)

    def _timed_again(self, first: Consumption, again: Consumption) -> bool:
        """`f(key, x)` to compile, a clock read, then `f(key, x)` again to time it: the same call, as
        written, with a clock read between the two (a benchmark runs the same computation twice)."""
        code = cst.Module([]).code_for_node
        if code(first.node) != code(again.node):
            return False
        low, high = first.line, again.line
        # the file's recorded calls, not a walk: at module level that would walk the whole module
        return any(scope.node is self.scope.node and low < self.facts.order(call) < high
                   and self.resolve(call.func) in CLOCKS
                   for call, scope, _ in SemanticModel.of(self.facts.ctx).sites_of(cst.Call))

    def _shape_only(self, first: Consumption) -> bool:
        """`x = jax.random.normal(key, shape)` whose values are never read, only its shape or dtype (a
        shape check, an example input): drawing from the key again cannot repeat anything that is used."""
        if not first.direct or first.draw == "jax.random.split" or first.within is not self.scope.node \
                or self.owner is None:
            return False  # a module-level variable is there for other modules to read
        name = None
        for candidate, binding in self.scope.bindings.items():
            if any(isinstance(statement, cst.Assign) and statement.value is first.node
                   and len(statement.targets) == 1 and isinstance(statement.targets[0].target, cst.Name)
                   for statement in binding.statements):
                if len(binding.nodes) != 1:
                    return False
                name = candidate
                break
        if name is None:
            return False
        target = self.scope.bindings[name].nodes[0]
        reads = 0
        for occurrence, scope, parent in SemanticModel.of(self.facts.ctx).name_occurrences([name]):
            owner = scope.lookup(name)
            if occurrence is target or owner is None or owner[0].node is not self.scope.node:
                continue
            if not (isinstance(parent, cst.Attribute) and parent.value is occurrence
                    and parent.attr.value in STATIC_ATTRIBUTES):
                return False
            reads += 1
        return reads > 0  # a draw nobody reads at all is left to other rules: it may be a leftover

    def _dummy_input(self, first: Consumption, again: Consumption) -> bool:
        """`x = jax.random.normal(key, shape)` then `model.init(key, x)`: the draw only serves as the
        example input whose shape `init` reads, so sharing the key changes no parameter."""
        if not first.direct or first.draw == "jax.random.split" or again.direct:
            return False
        if not INIT_NAME.match(last_name(again.node.func) or ""):
            return False
        for arg in again.node.args:
            value = arg.value
            if value is first.node:
                return True
            if isinstance(value, cst.Name):
                found = self.scope.lookup(value.value)
                if found is not None and any(isinstance(statement, cst.Assign) and statement.value is first.node
                                             for statement in found[1].statements):
                    return True
        return False

    def consume(self, name: str, node: cst.Call, certain: bool, direct: bool, flow: FlowInterpreter,
                via: Consumption | None = None, draw: str | None = None) -> None:
        state = flow.env
        held = state.get(name)
        line = self.facts.order(node)
        consumption = Consumption(node, line, certain, direct, via, draw, self.scope.node)
        if held.consumed is not None:
            if self.test_code and not (direct and held.consumed.direct):
                # tests hand one key to the code under test and to a reference, or twice to check
                # determinism: only two `jax.random` draws from one key are reported there
                return
            if not self.summary and (held.known or (certain and held.consumed.certain)):
                first = held.consumed
                loop, kind = None, "again"
                if first.line >= line:
                    loop = self._repeating_loop(name, flow)  # consumed by the previous iteration (or leaf)
                    if loop is not None:
                        kind = "leaves" if isinstance(loop, cst.Call) else "loop"
                if kind == "loop" and _over_mapping_values(loop):
                    kind = "leaves" if self.facts.aligned(first, consumption, "leaves") else kind
                if kind != "loop" and self.facts.aligned(first, consumption, kind):
                    return  # the same shuffle of several arrays, on purpose: they stay aligned
                if kind == "again" and not self.facts.strict and (
                        _same_run_again(first, consumption) or self._dummy_input(first, consumption)
                        or self._timed_again(first, consumption) or self._shape_only(first)
                        or self.facts.in_other_cells(first.node, consumption.node)):
                    return
                if kind == "loop" and not self.facts.strict and (
                        self._over_written_out_cases(loop) or periodic(loop, node)):
                    return
                self.facts.record(Reuse(node, name, first, loop, kind))
            elif certain and not held.consumed.certain and not self.summary:
                # after a call that may or may not draw from the key (unknown: not reported), a sure
                # draw is what a later sure draw repeats
                state[name] = KeyState(consumption, held.known, held.param)
            return
        state[name] = KeyState(consumption, held.known, held.param)
        if held.param is not None and held.param not in self.param_consumed:
            self.param_consumed[held.param] = consumption


# -- helpers ------------------------------------------------------------------------------------
def _spelled(dotted: str) -> cst.BaseExpression:
    """A dotted name as an expression (`jax.random.normal`), for messages that print a call."""
    parts = [part for part in dotted.split(".") if part.isidentifier()] or ["draw"]
    expr: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(expr, cst.Name(part))
    return expr


def periodic(loop: cst.CSTNode | None, node: cst.CSTNode) -> bool:
    """Whether `node` runs under an `if` of the loop body that tests a remainder (`if step % every ==
    0:`): a periodic evaluation or sample, given the same key each time so that what it shows differs
    only by the model being trained."""
    if not isinstance(loop, (cst.For, cst.While)):
        return False
    periodic: list[bool] = []
    found = False

    def enter(current: cst.CSTNode, _field: str) -> bool:
        nonlocal found
        if isinstance(current, cst.If):  # pushed whatever follows: `leave` pops every `If` entered
            periodic.append(tests_remainder(current.test))
        if found or isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if current is node:
            found = any(periodic)
            return False
        return True

    def leave(current: cst.CSTNode) -> None:
        if isinstance(current, cst.If):
            periodic.pop()

    walk(loop.body, enter, leave)
    return found


def tests_remainder(test: cst.BaseExpression) -> bool:
    """`step % every == 0`, `i % n == 0 or last`: the test of a periodic evaluation or log."""
    stack = [test]
    while stack:
        current = stack.pop()
        if type(current) is cst.BinaryOperation and type(current.operator) is cst.Modulo:
            return True
        if type(current) in (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.BinaryOperation):
            stack.extend(current.children)
        elif type(current) is cst.ComparisonTarget:
            stack.append(current.comparator)
    return False


def _same_run_again(first: Consumption, again: Consumption) -> bool:
    """The same key handed twice to the same function (as written), one jaxlint cannot see into
    (`mcmc.run(key, ...)` for two models, `solve(key, ...)` for two solvers) or a model initialiser
    (`model.init(key, x)` for the online and the target network): the same computation run again from
    the same randomness, which is how runs are made comparable or two models made to start equal."""
    if first.direct or again.direct:
        return False
    code = cst.Module([]).code_for_node
    if code(first.node.func) != code(again.node.func):
        return False
    unknown = first.via is None and again.via is None
    return unknown or bool(INIT_NAME.match(last_name(again.node.func) or ""))


def _over_mapping_values(loop: cst.CSTNode | None) -> bool:
    """`for name, x in batch.items()` / `for x in batch.values()`: a loop over the arrays of one
    structure, as a tree map goes over its leaves (never a loop over epochs or steps)."""
    return isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and not loop.iter.args \
        and isinstance(loop.iter.func, cst.Attribute) and loop.iter.func.attr.value in ("items", "values")


def _discarded_call(value: cst.BaseExpression) -> cst.Call | None:
    """The call whose result an expression statement throws away, also when it only waits for it:
    `f(x)`, `f(x).block_until_ready()`, `jax.block_until_ready(f(x))`."""
    if not isinstance(value, cst.Call):
        return None
    if last_name(value.func) == "block_until_ready":
        if isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Call) and not value.args:
            return value.func.value
        if len(value.args) == 1 and isinstance(value.args[0].value, cst.Call):
            return value.args[0].value
    return value


def _drawn_by(consumption: Consumption) -> Consumption:
    """The `jax.random` draw at the end of a consumption through functions of the module."""
    while consumption.via is not None:
        consumption = consumption.via
    return consumption


def _index_draw_arguments(draw: Consumption) -> tuple[str | None, dict[str, str]] | None:
    """The source of the array an index draw is made from, and of its other parameters (defaults
    filled in); None when a `*args`/`**kwargs` hides them, or a `choice` is weighted by `p`."""
    parameters, population = ALIGNING_DRAWS[draw.draw]
    names = [name for name, _ in parameters]
    code = cst.Module([]).code_for_node
    given: dict[str, str] = {}
    for index, arg in enumerate(draw.node.args[1:]):
        if arg.star:
            return None
        name = arg.keyword.value if arg.keyword is not None else (names[index] if index < len(names) else None)
        if name is None:
            return None
        given[name] = "".join(code(arg.value).split())
    if given.get("p", "None") != "None":
        return None
    shaping = {name: given.get(name, default) for name, default in parameters if name != population}
    return (given.get(population) if population else None), shaping


def _index_draws(within: cst.CSTNode) -> set[int]:
    """The calls in a function (or module) whose result indexes an array: written in a subscript
    (`x[jax.random.randint(...)]`), given as the indices of `jnp.take`/`lax.dynamic_slice`, or bound to
    a name used so. Asked only for an index draw that would otherwise be reported: a rare walk."""
    from ..syntax.walk import walk

    assigned: dict[str, list[int]] = {}
    index_expressions: list[cst.CSTNode] = []

    def enter(node: cst.CSTNode, field: str) -> bool:
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name \
                and isinstance(node.value, cst.Call):
            assigned.setdefault(node.targets[0].target.value, []).append(id(node.value))
        elif type(node) is cst.Subscript:
            index_expressions.extend(element.slice for element in node.slice)
        elif type(node) is cst.Call and last_name(node.func) in INDEXING_CALLS:
            # `jnp.take(x, idx)` and `x.take(idx)` alike: every argument is taken as an index
            index_expressions.extend(arg.value for arg in node.args)
        return True

    walk(within, enter, None)
    found: set[int] = set()

    def mark(node: cst.CSTNode, field: str) -> bool:
        if isinstance(node, cst.Call):
            found.add(id(node))
        elif isinstance(node, cst.Name):
            found.update(assigned.get(node.value, ()))
        return True

    for expression in index_expressions:
        walk(expression, mark, None)
    return found


def is_test_file(path: str | None) -> bool:
    """`test_*.py`, `*_test.py`, `conftest.py`: where fixed seeds and shared keys are deliberate."""
    if not path:
        return False
    return TEST_FILE.search(path.replace("\\", "/").rsplit("/", 1)[-1]) is not None


def in_test_function(scope: Scope | None) -> bool:
    """Whether a scope is, or is nested in, a function named `test*`."""
    while scope is not None:
        node = scope.node
        if type(node) is cst.FunctionDef and node.name.value.startswith("test"):
            return True
        scope = scope.parent
    return False


def _carry_marker(position: int | None) -> str:
    """The `param` of a key state that is the carry of a lax loop body (or its element `position`)."""
    return "<carry>" if position is None else f"<carry {position}>"


def _may_name_key_or_array(annotation: cst.BaseExpression) -> bool:
    """Whether KEY_ANNOTATIONS or ARRAY_ANNOTATION may match the annotation's source: it has a string
    (a forward reference), or a name that holds `PRNGKey` or `KeyArray`, or is `Key` or `Array`."""
    from ..syntax.walk import walk

    found = [False]

    def enter(node: cst.CSTNode, _field: str) -> bool:
        kind = type(node)
        if kind is cst.Name:
            word = node.value
            if word in ("Key", "Array") or "PRNGKey" in word or "KeyArray" in word:
                found[0] = True
        elif kind is cst.SimpleString or kind is cst.ConcatenatedString or kind is cst.FormattedString:
            found[0] = True
        return not found[0]

    walk(annotation, enter, None)
    return found[0]


def _constant_index(node: cst.Subscript) -> int | None:
    """`carry[1]`: 1; None for any other subscript."""
    if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    index = node.slice[0].slice.value
    return index.evaluated_value if type(index) is cst.Integer else None


def _discarded(node: cst.Call, flow: FlowInterpreter) -> bool:
    """Whether the call is the one whose result the expression statement being run throws away."""
    statement = flow.current_statement
    return type(statement) is cst.Expr and _discarded_call(statement.value) is node


def _parameter_count(function: FunctionNode) -> int:
    """Parameters a summary can be about (`self` and `cls` are never keys)."""
    p = function.params
    return sum(1 for x in (*p.posonly_params, *p.params, *p.kwonly_params) if x.name.value not in ("self", "cls"))


def _parameter_names(function: FunctionNode) -> list[str]:
    p = function.params
    return [x.name.value for x in (*p.posonly_params, *p.params)]


#: pattern -> name -> whether it is key-like (cached: names repeat a lot)
_KEY_LIKE: dict["re.Pattern[str]", dict[str, bool]] = {}


def _key_like(word: str, key_name: "re.Pattern[str]") -> bool:
    """A name a key may be bound to, or a word of a key annotation."""
    known = _KEY_LIKE.get(key_name)
    if known is None:
        known = _KEY_LIKE[key_name] = {}
    found = known.get(word)
    if found is None:
        found = bool(key_name.match(word)) or word in KEY_ANNOTATION_WORDS
        if len(known) < 100_000:
            known[word] = found
    return found


_PATTERNS: dict[tuple[str, ...], "re.Pattern[str]"] = {DEFAULT_KEY_NAMES: KEY_NAME}


def key_name_pattern(names: tuple[str, ...]) -> "re.Pattern[str]":
    """One regular expression for the configured key parameter names (glob patterns)."""
    found = _PATTERNS.get(names)
    if found is None:
        found = _PATTERNS[names] = re.compile("|".join(f"(?:{fnmatch.translate(n)})" for n in names) or "(?!)")
    return found


# -- keys broadcast by vmap ---------------------------------------------------------------------
VMAP_TRANSFORMS = frozenset({"jax.vmap", "equinox.filter_vmap", "flax.nnx.vmap"})


def vmap_broadcast_keys(ctx: "SourceFile") -> list[tuple[cst.Call, str, str]]:
    """(consuming call, key name, how it reaches the function) for keys a vmapped function draws from
    while every batch element sees the same key: a parameter mapped with `in_axes=None`, or a key
    closed over from the enclosing scope. Only sure consumers count (samplers, `split`)."""
    facts = KeyFlowFacts.of(ctx)
    traced = ctx.fact(TracedFunctions)
    found: list[tuple[cst.Call, str, str]] = []
    for function in traced.functions:
        for use in traced.applications.get(id(function), ()):
            if use.transform not in VMAP_TRANSFORMS or id(function) in traced.methods:
                continue
            positional = _parameter_names(function)[use.bound_positional:]
            for param in _broadcast(use, positional):
                consumption = facts.summary(function).consumed.get(param)
                if consumption is not None and consumption.certain \
                        and not _given_none(ctx, function, positional.index(param)):
                    found.append((consumption.node, param, "in_axes=None"))
            for node, name in _closed_over_draws(facts, function):
                found.append((node, name, "closure"))
    seen: set[int] = set()
    unique = []
    for item in found:
        if id(item[0]) not in seen:
            seen.add(id(item[0]))
            unique.append(item)
    return unique


def _given_none(ctx: "SourceFile", function: FunctionNode, index: int) -> bool:
    """Whether every call of `jax.vmap(function, ...)(...)` passes a literal `None` at this position
    (`vmap(sample, in_axes=(None, None, 0))(state, None, values)`): no key reaches the function there.
    False when the vmapped function is kept and called elsewhere, out of sight."""
    if not isinstance(function, cst.FunctionDef):
        return False
    name = function.name.value
    applied: list[cst.Call] = []
    called: dict[int, cst.Call] = {}
    for node, _, _ in SemanticModel.of(ctx).sites_of(cst.Call):
        if node.args and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == name \
                and ctx.names.qualified_name(node.func, ctx.module_scope) in VMAP_TRANSFORMS:
            applied.append(node)
        if isinstance(node.func, cst.Call):
            called[id(node.func)] = node
    for vmapped in applied:
        outer = called.get(id(vmapped))
        if outer is None:
            return False
        given = [a for a in outer.args if a.keyword is None]
        if any(a.star for a in given) or index >= len(given):
            return False
        value = given[index].value
        if not (isinstance(value, cst.Name) and value.value == "None"):
            return False
    return bool(applied)


#: Containers whose annotation lists the type of each element (or of the keys and values).
def _mixed_container(annotation: cst.BaseExpression) -> bool:
    """`Tuple[Array, PRNGKey]`: a container whose element types are not all keys."""
    if not isinstance(annotation, cst.Subscript):
        return False
    outer = annotation.value.attr if isinstance(annotation.value, cst.Attribute) else annotation.value
    if not isinstance(outer, cst.Name) or outer.value not in CONTAINER_ANNOTATIONS:
        return False
    code = cst.Module([]).code_for_node
    return any(not (isinstance(e.slice, cst.Index) and KEY_ANNOTATIONS.search(code(e.slice.value))
                    or isinstance(e.slice, cst.Index) and code(e.slice.value).strip() == "...")
               for e in annotation.slice)


def _broadcast(use, positional: list[str]) -> list[str]:
    axes = use.keywords.get("in_axes", use.extra_positional[0] if use.extra_positional else None)
    if axes is None:
        return []
    if isinstance(axes, cst.Name) and axes.value == "None":
        return list(positional)
    if isinstance(axes, (cst.Tuple, cst.List)):
        return [name for name, element in zip(positional, axes.elements)
                if isinstance(element.value, cst.Name) and element.value.value == "None"]
    return []


def _closed_over_draws(facts: KeyFlowFacts, function: FunctionNode) -> list[tuple[cst.Call, str]]:
    """Sampler/split calls in the function body whose key is a name from an enclosing scope."""
    from ..syntax.walk import walk

    scope = facts.traced.scopes.get(id(function))
    if scope is None:
        return []
    local = set(scope.bindings)
    draws: list[tuple[cst.Call, str]] = []

    def enter(node: cst.CSTNode, field: str) -> bool:
        if node is not function and type(node) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            return False
        if type(node) is cst.Call and node.args and node.args[0].keyword is None:
            callee = facts.ctx.names.qualified_name(node.func, scope)
            key = node.args[0].value
            if callee is not None and callee.startswith("jax.random.") and callee not in NON_CONSUMING_RANDOM \
                    and isinstance(key, cst.Name) and key.value not in local and _is_outer_key(facts, scope, key.value):
                draws.append((node, key.value))
        return True

    body = function.body
    walk(body, enter, None)
    return draws


def _is_outer_key(facts: KeyFlowFacts, scope: Scope, name: str) -> bool:
    """Whether an enclosing scope binds `name` to a key (made by jax.random, or a key-named parameter)."""
    found = scope.lookup(name)
    if found is None:
        return False
    owner, binding = found
    for node in binding.nodes:
        if isinstance(node, cst.Param):
            if not facts.key_name.match(name):
                return False
            continue
        return False if not _bound_to_key(facts, owner, node) else True
    return bool(binding.nodes)


def _bound_to_key(facts: KeyFlowFacts, owner: Scope, target: cst.CSTNode) -> bool:
    """A Name target assigned from `jax.random.key/PRNGKey/split/fold_in(...)` (directly or unpacked)."""
    from ..syntax.walk import walk

    result = [False]

    def enter(node: cst.CSTNode, field: str) -> bool:
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            if any(_contains(t.target, target) for t in node.targets):
                callee = facts.ctx.names.qualified_name(node.value.func, owner)
                result[0] = callee in KEY_MAKERS or callee in KEY_DERIVERS
            return False
        return not isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) or node is owner.node

    walk(owner.node, enter, None)
    return result[0]


def _contains(target: cst.BaseExpression, node: cst.CSTNode) -> bool:
    if target is node:
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_contains(e.value, node) for e in target.elements)
    if isinstance(target, cst.StarredElement):
        return _contains(target.value, node)
    return False
