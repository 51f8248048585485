"""What the key analysis knows of JAX's and the user's names: which calls make, derive, read or
store keys, which loops carry them, which names and annotations mark a key."""
from __future__ import annotations

import fnmatch
import re

import libcst as cst

from ...model.settings import DEFAULT_KEY_NAMES
from ..transforms import FRAMEWORKS



FunctionNode = cst.FunctionDef | cst.Lambda


#: `jax.random` functions that make a fresh key without consuming one.
KEY_MAKERS = frozenset({"jax.random.key", "jax.random.PRNGKey", "jax.random.wrap_key_data"})
#: Functions of the libraries that manage randomness and give a fresh key on every call
#: (`hk.next_rng_key()`; the framework table's [managed_randomness]): each result is a new key.
MANAGED_KEY_FUNCTIONS = FRAMEWORKS.managed_rng_functions - {"numpyro.sample"}
#: Methods that give a fresh key on every call, by name: Linen's `self.make_rng("dropout")`.
MANAGED_KEY_METHODS = frozenset(m.rpartition(".")[2] for m in FRAMEWORKS.managed_rng_methods
                                if m.startswith("flax.linen."))
#: Linen's `module.init(key, x)`: the methods that draw the module's parameters from the key they are given.
LINEN_DRAWING_METHODS = FRAMEWORKS.linen_drawing_methods
#: Factories of `jax.nn.initializers` (re-exported by Flax) whose initializer draws from the key it is
#: called with: `init = glorot_normal(); w = init(key, shape)` is a draw (`zeros`, `ones` and
#: `constant(v)` ignore the key).
DRAWING_INITIALIZERS = frozenset(
    f"{module}.{name}" for module in ("jax.nn.initializers", "flax.linen.initializers", "flax.nnx.initializers")
    for name in ("delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
                 "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal", "orthogonal",
                 "truncated_normal", "uniform", "variance_scaling", "xavier_normal", "xavier_uniform"))
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
#: How many times one function is interpreted while summaries settle (a bound on recursive cycles).
MAX_SUMMARY_RUNS = 4
#: Test files: `test_*.py`, `*_test.py`, `conftest.py`.
TEST_FILE = re.compile(r"(^test_.*|_test|^conftest|^tests)\.pyi?$")
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


#: pattern -> name -> whether it is key-like (cached: names repeat a lot)
_KEY_LIKE: dict["re.Pattern[str]", dict[str, bool]] = {}


def key_like(word: str, key_name: "re.Pattern[str]") -> bool:
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


def may_name_key_or_array(annotation: cst.BaseExpression) -> bool:
    """Whether KEY_ANNOTATIONS or ARRAY_ANNOTATION may match the annotation's source: it has a string
    (a forward reference), or a name that holds `PRNGKey` or `KeyArray`, or is `Key` or `Array`."""
    from ...syntax.walk import walk

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
