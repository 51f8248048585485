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
before timing) does not consume the key it is given, nor are keys split only to feed it used. In test code only two direct `jax.random` draws
from one key are reported: tests give one key to the code under test and to a reference on purpose.
In a notebook, a key drawn from in one cell and again in another is not reported: cells run one at a
time, again and out of order, so the text does not say in which order the draws run.

Cost: the file's semantic model (one walk, shared with the other facts) gives what the interpreter
needs ahead of time (call order, names bound to wrapped functions, attribute uses, the identifiers
of each function); a function whose identifiers show no way to hold a key is not interpreted for
findings; a parameter summary is computed only for a function a key is handed to (and what it hands
keys to in turn), and only if it makes a call and has a parameter that can hold a key; while
summaries settle, a function is interpreted again only when a summary it read has changed.

The package: `tables` (what calls and names mean for keys), `state` (what the domain tracks),
`domain` (the key domain on the interpreter), `facts` (`KeyFlowFacts.of(ctx)`: the analysis of one
file, computed once; rules read `.reuses` and `.summary(function)`), `policy` (deliberate use and
test code), `outputs` (whether what a consumption made is read) and `vmap` (keys broadcast by `vmap`).
"""
