"""Hypothesis strategies for JAX-shaped programs: the code the analyzer is written for, at random.

`jax_program_texts()` draws a module as a JAX user writes one: imports of `jax`, `jax.numpy`,
`random`, `lax`; functions under `jax.jit`, `partial(jax.jit, static_argnums=...)`, `vmap`, `grad`;
bodies for `lax.scan`, `fori_loop`, `cond`, `while_loop`; keys split and drawn from; Python
`if`/`for`/`while` on parameters; `x[i] = v` and `.at[].set`; prints, globals, side effects; nested
and async functions, lambdas, comprehensions, `try`, `match`, the walrus, classes with methods,
dataclasses, pytrees, Flax and Equinox modules; script code that times and loops.
`spliced_program_texts()` takes real JAX code instead, the fixtures' and examples' top-level
statements, recombines a few and mutates them (statements inserted, repeated, dropped, put under an
`if` or a loop, expressions and names swapped). The `..._bytes()` strategies vary the text the ways
real files vary: line endings (LF, CRLF, CR), a byte-order mark, a latin-1 coding cookie, no final
newline. `jax_notebooks()` gives an `.ipynb` whose code cells hold a drawn program, with markdown
cells and IPython magics in between.

Every program is valid Python (drawn programs by construction, spliced ones by undoing a mutation
that CPython rejects); the fuzz tests compile each one, so a generator slip shows as a failure of
its own. Nesting stays shallow: deep nesting and its cost are tested on their own, and a fuzz
example must stay fast.
"""
from __future__ import annotations

import ast
import json
import re
import sys
import warnings
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st

# -- vocabulary --------------------------------------------------------------------------------
ARRAYS = ("x", "y", "w", "out", "acc", "h", "xs", "params", "state", "grads")
KEYS = ("key", "rng", "subkey", "k1", "k2", "prng_key", "dropout_rng")
INTS = ("n", "i", "k", "steps", "batch_size", "num_layers")
#: names that can collide with the conventional aliases (JAX601 renames `np` to `jnp`)
ALIAS_NAMES = ("np", "jnp", "jax", "lax", "random", "partial")

NUMBERS = ("0", "1", "2", "-1", "0.5", "2.5", "1e-3", "0x1f", "1_000", "3j", "10", "100", "1000")
STRINGS = ('"a"', "'b'", '"{x}"', "'{}'", 'b"raw"', 'r"\\d+"', '"é"', '"loss: "', '"""doc"""', "'it''s'",
           '"%s" % n', '"tab\\tnew\\nline"', '"{{}}"', '"ß→"')
PLAIN_ATOMS = ("None", "True", "False", "...", "x.shape[0]", "x.shape", "x.T", "x.dtype", "x.ndim",
               "self.w", "CONFIG.scale", "params['w']", "jnp.float32", "jnp.pi", "jnp.inf", "COUNTER",
               "history", "table", "cache", "training", "deterministic", "args", "kwargs", "__name__")

FUNCTIONS = ("jnp.sum", "jnp.zeros", "jnp.ones", "jnp.where", "jnp.dot", "jnp.asarray", "jnp.array",
             "jnp.arange", "jnp.tanh", "jnp.exp", "jnp.max", "jnp.mean", "jnp.nonzero", "jnp.unique",
             "jnp.zeros_like", "jnp.concatenate", "jnp.stack", "np.asarray", "np.array", "np.zeros",
             "np.random.rand", "np.random.normal", "float", "int", "bool", "len", "range", "list", "tuple",
             "sum", "max", "abs", "jax.nn.relu", "jax.nn.softmax", "lax.stop_gradient", "jax.device_get",
             "jax.device_put", "jax.tree_map", "jax.tree.map", "jax.tree_util.tree_map", "jax.tree_leaves",
             "jnp.round_", "jnp.clip", "jnp.trapz", "jax.host_id", "jax.numpy.row_stack", "jnp.linalg.norm",
             "jax.lax.dtypes.canonicalize_dtype", "time.time", "time.perf_counter", "random.choice",
             "jax.debug.print", "jax.block_until_ready", "isinstance", "helper", "step", "loss_fn",
             "model.apply", "self.apply", "update", "jax.jit(f)", "jax.vmap(f)", "jax.grad(loss_fn)",
             "jax.value_and_grad(loss_fn)", "jax.jit(lambda v: v * 2)", "jnp.float64", "jnp.int64")
KEY_DRAWS = ("jax.random.normal", "random.normal", "random.uniform", "jax.random.bernoulli",
             "random.categorical", "random.randint", "random.permutation", "jr.normal", "random.choice",
             "jax.random.truncated_normal", "random.gumbel")
KEY_MAKERS = ("random.PRNGKey(0)", "jax.random.PRNGKey(SEED)", "jax.random.key(0)", "random.key(seed)",
              "jax.random.PRNGKey(i)", "jr.PRNGKey(42)")
METHODS = ("sum()", "item()", "tolist()", "reshape(-1)", "astype(jnp.float64)", "astype(jnp.float32)",
           "block_until_ready()", "mean(axis=0)", "copy()", "at[i].set(0.0)", "at[1:].add(1)",
           "at[0].get()", "at[..., 0].multiply(2)", "devices()", "device()", "append(x)", "numpy()")
INDEXES = ("0", "i", "-1", "1:", ":n", "::2", "..., 0", ":, 1", "None", "i, j", "x > 0", "jnp.arange(3)",
           "(0, 1)", "n - 1", "i + 1", "k", "-i", "[0, 1]", "1:n:2", "idx")
BINARY = ("+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>")
COMPARE = ("<", ">", "==", "!=", "<=", ">=", "is", "is not", "in", "not in")
AUGMENTED = ("+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>=", "@=")
CONDITIONS = ("x > 0", "jnp.any(x > 0)", "n > 2", "x.shape[0] > 1", "key is None", "isinstance(n, int)",
              "len(xs) > 1", "(m := jnp.max(x)) > 0", "x.ndim == 2", "training", "not deterministic",
              "float(x) > 0", "bool(x.sum())", "i % 2 == 0", "x", "y is not None", "jnp.all(x)", "x.sum() > n",
              "step % 10 == 0", "0 < i < n", "self.training", "CONFIG.debug")

DECORATORS = ("@jax.jit", "@jit", "@partial(jax.jit, static_argnums=(1,))", "@partial(jax.jit, static_argnums=1)",
              "@functools.partial(jax.jit, static_argnames=('n',))", "@jax.vmap", "@jax.grad", "@vmap",
              "@jax.checkpoint", "@partial(jax.vmap, in_axes=(0, None))", "@jax.custom_jvp",
              "@eqx.filter_jit", "@partial(jax.jit, donate_argnums=0)", "@jax.jit  # compiled once",
              "@partial(\n    jax.jit,\n    static_argnums=(1,),\n)", "@functools.lru_cache", "@staticmethod",
              "@jax.named_call", "@partial(jax.pmap, axis_name='i')", "@jax.remat", "@(jax.jit)",
              "@jax.jit if DEBUG else (lambda f: f)", "@functools.wraps(step)", "@jax.custom_vjp",
              "@jax.jit\n@jax.vmap", "@property")
PARAMETER_LISTS = ("x", "x, key", "key, x", "x, n", "params, x, y", "x, n: int = 3", "x: jax.Array, key",
                   "x, *args, **kwargs", "x, /, n", "x, *, training=False", "state, batch", "carry, x_t",
                   "i, val", "rng, shape=(3,)", "self, x", "x, y=None", "", "params, key, x", "np, x",
                   "jnp, x", "x, i, j", "xs, idx")

IMPORTS = ("import jax", "import jax.numpy as jnp", "from jax import random, lax", "from jax import random",
           "from jax import lax", "from jax import jit, vmap, grad", "from functools import partial",
           "import functools", "import numpy as np", "import time", "import dataclasses",
           "from dataclasses import dataclass", "import jax.numpy as np", "from jax import numpy as np",
           "import flax.linen as nn", "import equinox as eqx", "from typing import NamedTuple",
           "from jax.config import config", "import jax.random as jr", "import jax.numpy as jnp, numpy as onp",
           "from jax.experimental import optimizers", "import jax.experimental.stax as stax",
           "try:\n    import jax.numpy as np\nexcept ImportError:\n    import numpy as np",
           "if TYPE_CHECKING:\n    import jax")
MODULE_STATEMENTS = ("SEED = 0", "COUNTER = 0", "history = []", "cache = {}", "table = jnp.zeros(3)",
                     "CONFIG = None", "jax.config.update('jax_enable_x64', True)",
                     "config.update('jax_enable_x64', True)", "key = random.PRNGKey(SEED)", "x = jnp.ones((4, 3))",
                     "params = {'w': jnp.zeros((3, 3)), 'b': jnp.zeros(3)}", "n = 3", "training = True",
                     "np = None", "jnp = jax.numpy", "__all__ = ['np', 'step']", "w = np.zeros(3)",
                     "xs = [1, 2, 3]", "state = jnp.zeros(2)", "steps = 100", "table[0] = 1.0",
                     "x[1:] += 2", "print(x)", "del table[0]")
#: rarer syntax, valid in every Python version jaxlint supports (3.10 and later)
UNUSUAL_STATEMENTS = (
    "raise ValueError(x) from None", "del (x), [y]", "x: int", "count: int = 0", "__all__ += ['step']",
    "first, *middle, last = x", "(a, b), c = pair, 3", "[a, b] = xs", "a = b = c = jnp.zeros(3)",
    "x = 'a' 'b' f'{n}'", "x = 1_0.5e-3j + 0o17 + 0b101", "x = not not x", "x = y if n else z if i else w",
    "x = (yield_ := 3)", "x = lambda v=x, *, w=y: v + w", "x = [*xs, *ys]", "x = {**params, 'lr': 1e-3}",
    "x = params['w']['b'][0]", "x = a.b.c.d.e", "x = jnp.sum(*xs, **kwargs)", "x = -~+x", "x = x @ w @ w.T",
    "x = jnp.zeros(3)[None, :, ...]", "x = (\n    jnp.ones(3)\n    + 1\n)", "x = [\n    1,\n    2,\n]",
    'x = """multi\nline"""', "x = jax.tree_map(lambda a: a, params)", "x = jax.tree_util.tree_map(f, xs)",
    "x = jnp.round_(x) + jnp.trapz(y)", "assert isinstance(x, jax.Array), f'{type(x)}'",
    "x = random.PRNGKey(0) if key is None else key", "print(*[x], sep='')", "print(x, file=sys.stderr)",
    "print(f'{x!r:>10}', f'{n:{k}}')", "print('%d' % n, x)", "print(x, end='')", "x = print", "print",
    "jax.debug.print('{x}', x=x)", "x = jax.jit(step, static_argnums=(1,))(x, 3)",
    "import jax.numpy as jnp, numpy as np", "from jax import numpy as jnp", "from . import helpers",
    "from .models import helpers", "x = __debug__ and x", "x = type(x).__name__",
    "x = (lambda: (yield_ := 1))()", "x = [[v * w for v in row] for row in x]",
    "x = {k: v for k, v in zip(keys, xs) if (m := v) is not None}",
)
#: what an f-string's braces hold in the programs drawn
FSTRING_VALUES = ("x", "x.shape", "jnp.sum(x)", "n", "i + 1", "x[0]", "float(x)", "key", "step(x)", "x.sum()",
                  "[v for v in xs]", "(m := 2)", "x if n else y", "x[i, j]", "self.w", "loss", "x.dtype")
MAGICS = ("%timeit step(x)", "!pip install jax", "%matplotlib inline", "files = !ls", "jnp.sum?",
          "%load_ext autoreload", "%%time", "x = %env HOME", "%time y = jax.tree_map(np.abs, [step(x)])",
          "%timeit -n 1 -r 1 jax.random.normal(key, (2,))", "%prun -q x = step(x); print(x)")


# -- drawing state -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Where:
    """Where the statement being drawn goes: it decides which statements are valid there."""

    depth: int = 0
    in_function: bool = False
    in_loop: bool = False
    in_class: bool = False
    #: the parameters of the function the statement is in (a nested function may declare them `nonlocal`)
    function_locals: tuple[str, ...] = ()
    #: the indentation unit (four spaces or a tab)
    unit: str = "    "

    def inner(self, **changes) -> "Where":
        return replace(self, depth=self.depth + 1, **changes)


@dataclass
class Program:
    """The drawing in progress: the `draw` of the composite strategy, and the functions the program
    defined so far (later code calls them)."""

    draw: object
    functions: list[str] = field(default_factory=lambda: ["helper"])
    counter: int = 0

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}_{self.counter}"

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 999)) < p * 1000


def _indented(text: str, indent: str) -> list[str]:
    return [indent + line if line else line for line in text.split("\n")]


# -- expressions -------------------------------------------------------------------------------
def operand(p: Program, depth: int) -> str:
    """An expression that can stand as an operand, a call's function or a subscript's value."""
    choice = p.draw(st.integers(0, 14 if depth > 0 else 3))
    if choice == 0:
        return p.pick(ARRAYS + INTS + KEYS)
    if choice == 1:
        return p.pick(NUMBERS + STRINGS)
    if choice == 2:
        return p.pick(PLAIN_ATOMS)
    if choice == 3:
        return p.pick(ALIAS_NAMES + tuple(p.functions))
    if choice == 4:
        return call(p, depth - 1)
    if choice == 5:
        return f"{operand(p, depth - 1)}[{p.pick(INDEXES)}]"
    if choice == 6:
        return f"{p.pick(ARRAYS)}.{p.pick(METHODS)}"
    if choice == 7:
        return f"{p.pick(KEY_DRAWS)}({p.pick(KEYS)}, {p.pick(('(3,)', 'x.shape', '(n, 2)', 'shape'))})"
    if choice == 8:
        return f"({expression(p, depth - 1)})"
    if choice == 9:
        return display(p, depth - 1)
    if choice == 10:
        return comprehension(p, depth - 1)
    if choice == 11:
        return fstring(p)
    if choice == 12:
        return f"({p.pick(ARRAYS + ('m', 't'))} := {expression(p, depth - 1)})"
    if choice == 13:
        return p.pick(KEY_MAKERS)
    return f"{p.pick(('jax.random.split', 'random.split', 'random.fold_in'))}({p.pick(KEYS)}{p.pick(('', ', 2', ', n', ', i'))})"


def expression(p: Program, depth: int) -> str:
    """Any expression that is valid on its own (the right-hand side of `=`, an argument)."""
    choice = p.draw(st.integers(0, 9 if depth > 0 else 0))
    left = operand(p, depth)
    if choice <= 2:
        return left
    if choice == 3:
        return f"{left} {p.pick(BINARY)} {operand(p, depth - 1)}"
    if choice == 4:
        return f"{left} {p.pick(COMPARE)} {operand(p, depth - 1)}"
    if choice == 5:
        return f"{left} {p.pick(('and', 'or'))} {operand(p, depth - 1)}"
    if choice == 6:
        return f"{p.pick(('-', '+', '~', 'not '))}{left}"
    if choice == 7:
        return f"{left} if {p.pick(CONDITIONS)} else {operand(p, depth - 1)}"
    if choice == 8:
        params = p.pick(("", "v", "v, w=1", "*a, **k", "carry, x_t", "i, val", "k"))
        return f"lambda {params}: {expression(p, depth - 1)}"
    return f"{left} {p.pick(BINARY)} {operand(p, depth - 1)} {p.pick(BINARY)} {operand(p, 0)}"


def call(p: Program, depth: int) -> str:
    function = p.pick(FUNCTIONS + tuple(p.functions))
    if p.chance(0.1):
        # a generator expression as the only argument needs no parentheses of its own
        return f"{function}({expression(p, 0)} for {p.pick(('v', 'k', '_'))} in {p.pick(ARRAYS)})"
    args = [expression(p, depth) for _ in range(p.draw(st.integers(0, 3)))]
    if p.chance(0.3):
        args.append(f"{p.pick(('axis', 'dtype', 'a_min', 'a_max', 'static_argnums', 'in_axes', 'key', 'n'))}="
                    f"{operand(p, 0)}")
    if p.chance(0.1):
        args.append(p.pick(("*args", "**kwargs", "*xs", "**params")))
    return f"{function}({', '.join(args)})"


def display(p: Program, depth: int) -> str:
    items = [expression(p, depth) for _ in range(p.draw(st.integers(0, 3)))]
    kind = p.draw(st.integers(0, 4))
    if kind == 0:
        return f"[{', '.join(items)}]"
    if kind == 1:
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if kind == 2:
        return "{" + ", ".join(f"'{name}': {item}" for name, item in zip("abcd", items)) + "}"
    if kind == 3:
        return "{" + ", ".join(items) + "}" if items else "set()"
    return f"[*{p.pick(ARRAYS)}, {expression(p, 0)}]"


def comprehension(p: Program, depth: int) -> str:
    variable = p.pick(("v", "k", "i", "row", "np", "key"))
    source = p.pick(("xs", "range(n)", "x", "jax.random.split(key, 4)", "zip(x, y)", "enumerate(xs)", "keys"))
    element = expression(p, depth)
    condition = f" if {p.pick(CONDITIONS)}" if p.chance(0.3) else ""
    inner = f" for {p.pick(('u', 'j'))} in range(3)" if p.chance(0.2) else ""
    kind = p.draw(st.integers(0, 3))
    body = f"{element} for {variable} in {source}{inner}{condition}"
    if kind == 0:
        return f"[{body}]"
    if kind == 1:
        return f"{{{variable}: {element} for {variable} in {source}{condition}}}"
    if kind == 2:
        return f"{{{body}}}"
    return f"({body})"


def fstring(p: Program) -> str:
    """An f-string; what goes in its braces has no quotes or backslashes (Python < 3.12 rejects them)."""
    quote = p.pick(('"', "'"))
    parts = []
    for _ in range(p.draw(st.integers(1, 3))):
        text = p.pick(("loss ", "x=", "", "step {{}} ", "é ", "value: ", "{{x}} "))
        value = p.pick(FSTRING_VALUES)
        suffix = p.pick(("", ":.3f", "!r", ":>8", ":{n}", ":.{k}e", "!s:^10"))
        if p.chance(0.1) and value.replace("_", "").replace(".", "").isalnum():
            suffix = "=" + suffix
        parts.append(f"{text}{{{value}{suffix}}}")
    return p.pick(("f", "rf", "F")) + quote + "".join(parts) + quote


# -- statements --------------------------------------------------------------------------------
def simple_statement(p: Program, where: Where) -> str:
    """One line (possibly several statements joined by `;`)."""
    choice = p.draw(st.integers(0, 26))
    array, key, number = p.pick(ARRAYS), p.pick(KEYS), p.pick(INTS)
    if choice == 0:
        return f"{p.pick(ARRAYS + INTS + ('m', 'np', 'jnp'))} = {rhs(p, where)}"
    if choice == 1:
        return f"{key}, {p.pick(KEYS)} = {p.pick(('jax.random.split', 'random.split', 'jr.split'))}({key})"
    if choice == 2:
        return f"{key} = {p.pick(('jax.random.fold_in', 'random.fold_in'))}({key}, {number})"
    if choice == 3:
        return f"{array} = {p.pick(KEY_DRAWS)}({key}, {p.pick(('(3,)', 'x.shape', '(n, 2)'))})"
    if choice == 4:
        return f"{array}[{p.pick(INDEXES)}] = {rhs(p, where)}"
    if choice == 5:  # a fresh array updated in place: the shape JAX401 fixes
        made = p.pick(("jnp.zeros(3)", "jnp.ones((n, 2))", "jnp.array([1, 2, 3])", "jnp.arange(n)", "x * 2", "-x",
                       "jnp.asarray(xs)"))
        return f"{array} = {made}; {array}[{p.pick(INDEXES)}] {p.pick(AUGMENTED + ('=',))} {rhs(p, where)}"
    if choice == 6:
        return f"{array}[{p.pick(INDEXES)}] {p.pick(AUGMENTED)} {rhs(p, where)}"
    if choice == 7:
        return p.pick((f"del {array}[{p.pick(INDEXES)}]", f"{array}[0], {p.pick(ARRAYS)}[1] = a, b",
                       f"self.{array}[0] = 1", f"{array}[0][1] = 2", f"{array}[i] = {array}[j] = 0",
                       f"{array}[0]: float = 1.0", f"{array}.at[0] = 1", f"{array}[0] = {array}[1] = v"))
    if choice in (8, 9):
        return print_call(p)
    if choice == 10:
        return f"{array} = {array}.at[{p.pick(INDEXES)}].{p.pick(('set', 'add', 'multiply', 'min', 'get'))}({expression(p, 1)})"
    if choice == 11:
        return p.pick(("history.append(x)", "cache[n] = x", "self.count += 1", "self.w = x", "COUNTER += 1",
                       "state.append(jnp.sum(x))", "x.block_until_ready()", "time.sleep(0)", "log.append(float(x))",
                       "jax.debug.print('{}', x)", "jax.debug.callback(print, x)", "assert x.shape[0] > 0",
                       "assert n > 0, 'positive'", "pass", "...", "self.history.append(y)", "setattr(self, 'x', x)"))
    if choice == 12:
        return f"{p.pick(ARRAYS)}: {p.pick(('jax.Array', 'int', 'float', 'jnp.ndarray'))} = {expression(p, 1)}"
    if choice == 13:
        return f"{p.pick(ARRAYS)}, *{p.pick(('rest', '_'))} = {p.pick(ARRAYS)}"
    if choice == 14:
        return f"{simple_statement(p, where)}; {simple_statement(p, where)}"
    if choice == 15:
        return f"{p.pick(('f', 'g', 'body', 'loss_fn'))} = {p.pick(transform_wrappers(p))}"
    if choice == 16:
        return f"{array} = {p.pick(loop_primitives())}"
    if choice == 17 and where.in_function:
        return p.pick(("return " + expression(p, 2), "return", "return x, key", "yield x", f"{array}[0] = yield",
                       "raise ValueError(x)", "return jnp.sum(x)", "return (yield)", "return lax.cond(x > 0, f, g, x)"))
    if choice == 18 and where.in_loop:
        return p.pick(("break", "continue"))
    if choice == 20:
        value = p.pick(('.sum()', '[0]', '.T', ' @ w', ' * 2.0', '.reshape(-1)'))
        comment = p.pick(('noqa', 'noqa: JAX401', 'note', 'type: ignore', 'noqa: JAX301,JAX101'))
        return f"{array} = {array}{value}  # {comment}"
    if choice == 21:
        arguments = p.pick(("", ", a_min=0", ", 2", ", axis=0", ", a_min=0, min=1", ", a_min=0, a_max=1", ", 0, a_max=1, max=2",
                            ", a_max=1, **kwargs", ", a=1"))
        return f"{p.pick(('jnp', 'np', 'jax.numpy'))}.{p.pick(('sum', 'zeros', 'round_', 'clip'))}({array}{arguments})"
    if choice == 22:
        start = p.pick(('start', 't0', 'begin'))
        return f"{start} = time.time(); {array} = step({array}); {p.pick(('elapsed', 'dt'))} = time.time() - {start}"
    if choice == 23:
        return p.pick(("import jax.numpy as np", "from jax import numpy as np", "import numpy as np",
                       "from jax import random", "import jax", f"{array} = np.asarray({array})"))
    if choice == 24:
        return p.pick(UNUSUAL_STATEMENTS)
    if choice == 25:
        # a backslash continuation inside the statement
        return f"{array} = {expression(p, 1)} + \\\n{where.unit}{expression(p, 0)}"
    return f"{p.pick(ARRAYS)} = {comprehension(p, 1)}"


def rhs(p: Program, where: Where) -> str:
    choice = p.draw(st.integers(0, 9))
    if choice == 0:
        return f"{expression(p, 1)}, {expression(p, 0)}"  # a tuple without parentheses
    if choice == 1:
        return f"*{p.pick(ARRAYS)}, {expression(p, 0)}"
    if choice == 2 and where.in_function and not where.in_class:
        return p.pick(("yield", "yield x", "yield from xs"))
    return expression(p, 2)


def print_call(p: Program) -> str:
    args = []
    for _ in range(p.draw(st.integers(0, 3))):
        kind = p.draw(st.integers(0, 5))
        if kind == 0:
            args.append(p.pick(STRINGS))
        elif kind == 1:
            args.append(fstring(p))
        elif kind == 2:
            args.append(p.pick(ARRAYS + KEYS + INTS))
        else:
            args.append(expression(p, 1))
    if p.chance(0.1):
        # a bare generator expression must be the only argument
        return f"print({p.pick(ARRAYS)} for _ in range(2))"
    if p.chance(0.15):
        args.append(p.pick(("sep=''", "end='\\n'", "*xs", "file=sys.stderr", "flush=True")))
    return f"print({', '.join(args)})"


def transform_wrappers(p: Program) -> tuple[str, ...]:
    function = p.pick(tuple(p.functions))
    return (f"jax.jit({function})", f"jax.vmap({function}, in_axes=(0, None))", f"jax.grad({function})",
            f"jax.value_and_grad({function}, argnums=1)", f"jax.jit({function}, static_argnums=(1,))",
            f"partial(jax.jit, static_argnames='n')({function})", f"jax.jit(lambda v: {function}(v) * 2)",
            f"vmap({function})", f"jax.checkpoint({function})", f"eqx.filter_jit({function})",
            f"jax.jit(jax.vmap({function}))", f"jax.jit(partial({function}, n=3))")


def loop_primitives() -> tuple[str, ...]:
    return ("lax.scan(body, init, xs)", "lax.fori_loop(0, n, body_fn, x)", "lax.cond(x > 0, f, g, x)",
            "lax.while_loop(lambda s: s[0] < n, body, (0, x))", "lax.switch(i, [f, g], x)",
            "lax.cond(pred, lambda v: v, lambda v: -v, x)", "jax.lax.map(f, xs)", "lax.fori_loop(0, 10, lambda i, v: v + i, x)",
            "jax.vmap(lambda k: random.normal(k, (2,)))(keys)", "jax.jit(step)(x)", "step(x)", "jax.jit(lambda v: v)(x)",
            "lax.scan(lambda c, t: (c + t, c), 0.0, xs)")


def block(p: Program, where: Where) -> list[str]:
    """The statements of a block, each already indented by one unit (the caller indents further)."""
    count = p.draw(st.integers(1, max(1, 5 - where.depth)))
    lines: list[str] = []
    for _ in range(count):
        lines.extend(_indented(statement(p, where), where.unit))
    return lines


def statement(p: Program, where: Where) -> str:
    """A simple or compound statement, as text relative to the block's indentation."""
    if where.depth >= 4 or p.chance(0.55):
        text = simple_statement(p, where)
        if p.chance(0.05):
            text = f"# {p.pick(('a comment', 'noqa', 'TODO: x[i] = 0', 'print(x)'))}\n{text}"
        return text
    choice = p.draw(st.integers(0, 11))
    if choice == 0:
        return if_statement(p, where)
    if choice == 1:
        return for_statement(p, where)
    if choice == 2:
        return while_statement(p, where)
    if choice == 3:
        return with_statement(p, where)
    if choice == 4:
        return try_statement(p, where)
    if choice == 5:
        return match_statement(p, where)
    if choice == 6 and p.chance(0.1):
        return async_function(p, where)
    if choice in (6, 7):
        return function(p, where)
    if choice == 8 and where.depth < 2:
        return class_definition(p, where)
    if choice == 9:
        return f"if {p.pick(CONDITIONS)}: {simple_statement(p, where)}"
    if choice == 10:
        return loop_body_definition(p, where)
    header = f"for {p.pick(('i', 'v', '_'))} in {p.pick(('range(n)', 'x', 'range(1000)'))}:"
    return f"{header} {simple_statement(p, where.inner(in_loop=True))}"


def _join(header: str, body: list[str]) -> str:
    return "\n".join([header, *body])


def if_statement(p: Program, where: Where) -> str:
    inner = where.inner()
    parts = [_join(f"if {p.pick(CONDITIONS)}:", block(p, inner))]
    for _ in range(p.draw(st.integers(0, 2))):
        parts.append(_join(f"elif {p.pick(CONDITIONS)}:", block(p, inner)))
    if p.chance(0.5):
        parts.append(_join("else:", block(p, inner)))
    return "\n".join(parts)


def for_statement(p: Program, where: Where) -> str:
    header = p.pick(("for i in range(n):", "for i in range(3):", "for v in x:", "for i, v in enumerate(xs):",
                     "for a, b in zip(x, y):", "for step in range(1000):", "for k in jax.random.split(key, 4):",
                     "for _ in range(x.shape[0]):", "for i in jnp.arange(n):", "for row in x:",
                     "for key in keys:", "for epoch in range(steps):", "for np in xs:"))
    text = _join(header, block(p, where.inner(in_loop=True)))
    if p.chance(0.15):
        text += "\n" + _join("else:", block(p, where.inner()))
    return text


def while_statement(p: Program, where: Where) -> str:
    header = p.pick(("while i < n:", "while jnp.any(x > 0):", "while True:", "while x.sum() > 0:",
                     "while (n := n - 1) > 0:", "while not done:"))
    body = block(p, where.inner(in_loop=True))
    body.append(where.unit + p.pick(("i += 1", "break", "x = x - 1", "done = True")))
    return _join(header, body)


def with_statement(p: Program, where: Where) -> str:
    header = p.pick(("with jax.ensure_compile_time_eval():", "with open(path) as fh:",
                     "with jax.default_device(device):", "with jax.disable_jit():",
                     "with jax.profiler.trace('/tmp/t'), jax.checking_leaks():", "with (jax.disable_jit() as a, lock):"))
    return _join(header, block(p, where.inner()))


def try_statement(p: Program, where: Where) -> str:
    inner = where.inner()
    parts = [_join("try:", block(p, inner))]
    for _ in range(p.draw(st.integers(0 if p.chance(0.3) else 1, 2))):
        kind = p.pick(("Exception", "(ValueError, TypeError) as e", "jax.errors.ConcretizationTypeError",
                       "ImportError", "KeyError as err"))
        parts.append(_join(f"except {kind}:", block(p, inner)))
    if len(parts) == 1:
        parts.append(_join("finally:", block(p, inner)))
        return "\n".join(parts)
    if p.chance(0.3):
        parts.append(_join("else:", block(p, inner)))
    if p.chance(0.3):
        parts.append(_join("finally:", block(p, inner)))
    return "\n".join(parts)


def match_statement(p: Program, where: Where) -> str:
    inner = where.inner()
    patterns = ("0", "1 | 2", "[a, b]", "[first, *rest]", "{'w': w}", "Point(x=0)", "str() as s", "(k1, k2)",
                "None", "n if n > 2", "jnp.ndarray()", "{'b': 1, **rest}", "-1", "'text'")
    chosen = p.draw(st.lists(st.sampled_from(patterns), min_size=1, max_size=3))
    cases = []
    for pattern in chosen:
        case_body = block(p, inner.inner())
        cases.append(_join(f"{where.unit}case {pattern}:", [where.unit + line for line in case_body]))
    if p.chance(0.5):  # a wildcard anywhere but last is a SyntaxError
        cases.append(_join(f"{where.unit}case _:", [where.unit + line for line in block(p, inner.inner())]))
    return "\n".join([f"match {p.pick(ARRAYS + INTS + ('x.shape', 'command'))}:", *cases])


#: module-level names a function may declare `global`: never a parameter or an annotated name
GLOBAL_NAMES = ("COUNTER", "table", "history", "np", "cache")


def parameter_names(params: str) -> tuple[str, ...]:
    arguments = ast.parse(f"def f({params}): pass").body[0].args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    return tuple(a.arg for a in every if a is not None)


def function_body(p: Program, where: Where, params: str) -> list[str]:
    """A function's body, `global`/`nonlocal` declarations first (CPython rejects a declaration
    after a use of the name), one unit deeper than `where`."""
    own = parameter_names(params)
    body = block(p, where.inner(in_function=True, in_loop=False, in_class=False, function_locals=own))
    declared = ()
    if p.chance(0.15):
        declared = (p.pick([n for n in GLOBAL_NAMES if n not in own]),)
        body.insert(0, where.unit + f"global {declared[0]}")
    outer = [n for n in where.function_locals if n not in own + declared and n not in ARRAYS and n != "self"]
    if where.in_function and outer and p.chance(0.3):
        body.insert(0, where.unit + f"nonlocal {p.pick(outer)}")
    return body


def function(p: Program, where: Where) -> str:
    name = p.fresh(p.pick(("step", "loss_fn", "update", "body", "apply", "sample", "f", "train_step", "inner")))
    p.functions.append(name)
    decorators = [p.pick(DECORATORS) for _ in range(p.draw(st.integers(0, 2)))]
    params = p.pick(PARAMETER_LISTS)
    if where.in_class and not params.startswith("self"):
        params = "self, " + params if params else "self"
    returns = p.pick(("", " -> jax.Array", " -> tuple[jax.Array, jax.Array]", " -> None"))
    body = function_body(p, where, params)
    if p.chance(0.3):
        body.insert(0, where.unit + p.pick(('"""Docstring."""', "'''One step: x[i] = v is fine here.'''")))
    if p.chance(0.6):
        body.append(where.unit + p.pick(("return x", "return x, key", "return out", "return jnp.sum(x)",
                                         "return carry, x_t", "return val", "return acc")))
    header = f"def {name}({params}){returns}:"
    if sys.version_info >= (3, 12) and p.chance(0.03):
        header = f"def {name}[T]({params}){returns}:"
    return "\n".join([*decorators, header, *body])


def async_function(p: Program, where: Where) -> str:
    """An `async def`: `await` and `async for/with` are valid only there; no `yield` (a `return`
    with a value in an async generator is a SyntaxError)."""
    name = p.fresh("fetch")
    unit = where.unit
    body = p.draw(st.lists(st.sampled_from((
        "await asyncio.sleep(0)", "x = await step(x)", f"async for batch in stream:\n{unit}x = x + batch",
        f"async with lock:\n{unit}x = jnp.sum(x)", "return await step(x)", "print(x)", "x[0] = await step(x)",
        "y = [await f(v) async for v in stream]")), min_size=1, max_size=4))
    lines = [line for statement in body for line in _indented(statement, unit)]
    decorator = [p.pick(("@jax.jit", "@functools.lru_cache"))] if p.chance(0.3) else []
    return "\n".join([*decorator, f"async def {name}(x, key=None):", *lines])


def loop_body_definition(p: Program, where: Where) -> str:
    """A body for `lax.scan`/`fori_loop`/`cond`/`vmap` and the call that traces it."""
    kind = p.draw(st.integers(0, 3))
    unit = where.unit
    if kind == 0:
        return "\n".join(["def body(carry, x_t):", *function_body(p, where, "carry, x_t"), f"{unit}return carry, x_t",
                          "carry, ys = lax.scan(body, init, xs)"])
    if kind == 1:
        return "\n".join(["def body_fn(i, val):", *function_body(p, where, "i, val"), f"{unit}return val",
                          "x = lax.fori_loop(0, n, body_fn, x)"])
    if kind == 2:
        return "\n".join(["def true_fn(v):", *function_body(p, where, "v"), f"{unit}return v", "def false_fn(v):",
                          f"{unit}return -v", "out = lax.cond(x.sum() > 0, true_fn, false_fn, x)"])
    return "\n".join(["def sample_one(key):", *function_body(p, where, "key"), f"{unit}return random.normal(key, (2,))",
                      "samples = jax.vmap(sample_one)(jax.random.split(key, 8))"])


def class_definition(p: Program, where: Where) -> str:
    name = p.fresh(p.pick(("Model", "State", "Config", "MLP", "Linear", "Sampler", "Point")))
    kind = p.draw(st.integers(0, 5))
    unit = where.unit
    inner = Where(depth=where.depth + 1, in_class=True, unit=unit)
    lines: list[str] = []
    if kind == 0:
        lines = [f"class {name}:", f"{unit}def __init__(self, n):", f"{unit}{unit}self.n = n",
                 f"{unit}{unit}self.w = jnp.zeros(n)", f"{unit}{unit}self.count = 0"]
    elif kind == 1:
        lines = [p.pick(("@dataclasses.dataclass(frozen=True)", "@dataclass", "@dataclass(frozen=True)")),
                 f"class {name}:", f"{unit}n: int = 3", f"{unit}scale: float = 1.0", f"{unit}w: jax.Array = None"]
    elif kind == 2:
        lines = ["@jax.tree_util.register_pytree_node_class", f"class {name}:",
                 f"{unit}def __init__(self, w, n):", f"{unit}{unit}self.w, self.n = w, n",
                 f"{unit}def tree_flatten(self):", f"{unit}{unit}return (self.w,), (self.n,)",
                 f"{unit}@classmethod", f"{unit}def tree_unflatten(cls, aux, children):",
                 f"{unit}{unit}return cls(*children, *aux)"]
    elif kind == 3:
        lines = [f"class {name}(nn.Module):", f"{unit}features: int = 8", f"{unit}@nn.compact",
                 f"{unit}def __call__(self, x, training: bool = False):", f"{unit}{unit}x = nn.Dense(self.features)(x)",
                 *[unit + line for line in function_body(p, Where(depth=where.depth + 1, unit=unit), "self, x, training")],
                 f"{unit}{unit}return x"]
    elif kind == 4:
        lines = [f"class {name}(eqx.Module):", f"{unit}w: jax.Array", f"{unit}b: jax.Array",
                 f"{unit}def __call__(self, x):", f"{unit}{unit}return self.w @ x + self.b"]
    else:
        lines = [f"class {name}(NamedTuple):", f"{unit}step: int", f"{unit}params: jax.Array"]
    for _ in range(p.draw(st.integers(0, 2))):
        lines.extend(_indented(function(p, inner), unit))
    if p.chance(0.2):
        lines.append(f"{unit}{p.pick(('np = 1', 'count = 0', 'x[0] = 1', 'print(x)', 'key = random.PRNGKey(0)'))}")
    return "\n".join(lines)


# -- whole programs ----------------------------------------------------------------------------
@st.composite
def jax_program_texts(draw) -> str:
    """A JAX-shaped module as text, with `\\n` line endings."""
    p = Program(draw)
    unit = p.pick(("    ", "    ", "  ", "\t"))
    where = Where(unit=unit)
    out: list[str] = []
    if p.chance(0.3):
        out.append(p.pick(('"""A training script."""', "'''Utilities: x[i] = v is not allowed.'''", "# a comment")))
    imports = draw(st.lists(st.sampled_from(IMPORTS), min_size=1, max_size=8, unique=True))
    if p.chance(0.1):
        out.append("from __future__ import annotations")
    out.extend(imports)
    if not any("jax" in line for line in out):
        out.append("import jax")
    for _ in range(draw(st.integers(1, 6))):
        choice = draw(st.integers(0, 9))
        if choice <= 1:
            out.append(p.pick(MODULE_STATEMENTS))
        elif choice <= 5:
            out.append(function(p, where))
        elif choice == 6:
            out.append(class_definition(p, where))
        elif choice == 7:
            out.append(loop_body_definition(p, where))
        else:
            out.append(statement(p, where))
        if p.chance(0.5):
            out.append(p.pick(("", "", "", "\x0c", "# section", "    ")))
    if p.chance(0.3):
        main = _join('if __name__ == "__main__":', block(p, where.inner()))
        out.append(main)
    return "\n".join(out) + "\n"


# -- programs spliced from the fixtures -----------------------------------------------------------
#: real JAX code, written to exercise every rule: what the spliced programs are made of
CORPUS_FOLDERS = (Path(__file__).resolve().parents[1] / "fixtures", Path(__file__).resolve().parents[2] / "examples")


@lru_cache(maxsize=None)
def corpus() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The import statements and the other top-level statements (functions, classes, assignments,
    script code) of the fixture and example files, each as its source text."""
    imports: dict[str, None] = {}
    pieces: list[str] = []
    for folder in CORPUS_FOLDERS:
        for path in sorted(folder.glob("*.py")):
            text = path.read_text(encoding="utf-8")
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue  # the JAX000 fixture
            lines = text.splitlines()
            for node in tree.body:
                piece = "\n".join(lines[_first_line(node) - 1:node.end_lineno])
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
                        imports[piece] = None
                elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):  # docstrings
                    pieces.append(piece)
    return tuple(imports), tuple(pieces)


def _first_line(node: ast.stmt) -> int:
    """Where a statement begins: a decorated definition at its first decorator."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def _statement_places(tree: ast.Module, lines: list[str]) -> list[tuple[ast.stmt, Where]]:
    """Statements that begin their line, with where they are (so what is inserted before one is
    valid there)."""
    places: list[tuple[ast.stmt, Where]] = []

    def visit(body: list[ast.stmt], where: Where) -> None:
        for node in body:
            line = lines[_first_line(node) - 1]
            if len(line) - len(line.lstrip()) == node.col_offset and not isinstance(node, (ast.Global, ast.Nonlocal)):
                places.append((node, where))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = Where(depth=1, in_function=not isinstance(node, ast.AsyncFunctionDef))
                visit(node.body, inner if not isinstance(node, ast.AsyncFunctionDef) else Where(depth=4))
                continue
            if isinstance(node, ast.ClassDef):
                visit(node.body, Where(depth=4, in_class=True))
                continue
            looping = isinstance(node, (ast.For, ast.While, ast.AsyncFor))
            for field_name in ("body", "orelse", "finalbody"):
                visit(getattr(node, field_name, []), replace(where, in_loop=where.in_loop or looping and field_name == "body"))
            for handler in getattr(node, "handlers", []):
                visit(handler.body, where)
            for case in getattr(node, "cases", []):
                visit(case.body, where)

    visit(tree.body, Where(depth=4))
    return places


def _compiles(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<spliced>", "exec", dont_inherit=True)
        except SyntaxError:
            return False
    return True


def _mutated(p: Program, text: str) -> str:
    """`text` with a few statements changed (see `_mutate`); a change that CPython rejects (a
    statement moved before its `global`) is undone."""
    lines = text.split("\n")
    places = _statement_places(ast.parse(text), lines)
    if not places:
        return text
    chosen = p.draw(st.lists(st.integers(0, len(places) - 1), min_size=1, max_size=6, unique=True))
    touched = len(lines) + 1
    # bottom up, so the lines of the statements still to change stay where the tree says; a
    # statement around one already changed is left alone
    for node, where in sorted((places[i] for i in chosen), key=lambda place: -place[0].lineno):
        if node.end_lineno >= touched:
            continue
        before = list(lines)
        _mutate(p, lines, node, where)
        if _compiles("\n".join(lines)):
            touched = _first_line(node)
        else:
            lines[:] = before
    return "\n".join(lines)


def _mutate(p: Program, lines: list[str], node: ast.stmt, where: Where) -> None:
    """Change one statement in `lines`: a drawn statement inserted before it, the statement twice,
    dropped, put under an `if` or a loop, an expression or a name in it swapped for another."""
    first, last = _first_line(node) - 1, node.end_lineno
    indent = lines[first][: node.col_offset]
    kind = p.draw(st.integers(0, 6))
    if kind <= 1:
        lines[first:first] = _indented(simple_statement(p, replace(where, depth=4)), indent)
    elif kind == 2:  # a key drawn from again, a second update
        lines[first:first] = lines[first:last]
    elif kind == 3:
        lines[first:last] = [indent + "pass"]
    elif kind == 4:  # traced control flow, a loop around a jit
        header = p.pick((f"if {p.pick(CONDITIONS)}:", "for i in range(n):", "for _ in range(3):",
                         "with jax.ensure_compile_time_eval():", "while n > 0:"))
        lines[first:last] = [indent + header] + ["    " + line if line.strip() else line for line in lines[first:last]]
    elif kind == 5:  # on the statement's first line (ast columns count UTF-8 bytes)
        line = lines[first].encode("utf-8")
        spans = sorted({(e.col_offset, e.end_col_offset) for e in ast.walk(node)
                        if isinstance(e, ast.expr) and e.lineno == e.end_lineno == _first_line(node)
                        and isinstance(getattr(e, "ctx", ast.Load()), ast.Load)})
        if spans:
            start, end = p.pick(spans)
            lines[first] = (line[:start] + f"({expression(p, 1)})".encode("utf-8") + line[end:]).decode("utf-8")
    else:
        names = sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)})
        if names:
            pattern = re.compile(rf"\b{re.escape(p.pick(names))}\b")
            other = p.pick(ARRAYS + KEYS + INTS + ALIAS_NAMES)
            lines[first:last] = [pattern.sub(other, line) for line in lines[first:last]]


@st.composite
def spliced_program_texts(draw) -> str:
    """A module of the fixtures' and examples' imports and a few of their top-level statements,
    mutated: real JAX code, with the statements the analysis must follow moved around."""
    p = Program(draw)
    imports, pieces = corpus()
    chosen = draw(st.lists(st.sampled_from(pieces), min_size=1, max_size=5))
    return _mutated(p, "\n".join(imports) + "\n\n\n" + "\n\n\n".join(chosen) + "\n")


@st.composite
def spliced_program_bytes(draw) -> bytes:
    """A spliced program as a file's bytes, its line endings, coding and final newline varied."""
    text = draw(spliced_program_texts())
    return encode_program(text, draw(st.sampled_from(("\n", "\n", "\r\n", "\r"))), draw(st.booleans()) or draw(st.booleans()),
                          draw(st.sampled_from(("utf-8", "utf-8", "utf-8-sig", "latin-1"))))


def encode_program(text: str, line_ending: str, final_newline: bool, encoding: str) -> bytes:
    """The bytes of a file holding `text` (written with `\\n`), the way an editor could have saved it."""
    if not final_newline:
        text = text.rstrip("\n")
    text = text.replace("\n", line_ending)
    if encoding == "latin-1":
        try:
            return ("# -*- coding: latin-1 -*-" + line_ending + text).encode("latin-1")
        except UnicodeEncodeError:
            pass
    if encoding == "utf-8-sig":
        return text.encode("utf-8-sig")
    return text.encode("utf-8")


@st.composite
def jax_program_bytes(draw) -> bytes:
    """A JAX-shaped module as the bytes of a file: line endings, coding and final newline varied."""
    text = draw(jax_program_texts())
    line_ending = draw(st.sampled_from(("\n", "\n", "\n", "\r\n", "\r")))
    final_newline = draw(st.booleans()) or draw(st.booleans())
    encoding = draw(st.sampled_from(("utf-8", "utf-8", "utf-8", "utf-8-sig", "latin-1")))
    return encode_program(text, line_ending, final_newline, encoding)


@st.composite
def jax_notebooks(draw) -> str:
    """An nbformat 4 notebook (JSON text) whose code cells hold a JAX-shaped program, split at
    top-level statements, with markdown cells and IPython magics in between."""
    text = draw(jax_program_texts())
    chunks, current = [], []
    for line in text.splitlines(keepends=True):
        starts_statement = line[:1] not in ("", " ", "\t", "\n", ")", "]", "}") and not line.startswith(
            ("else", "elif", "except", "finally"))
        if current and starts_statement and not current[-1].startswith("@") and draw(st.booleans()):
            chunks.append("".join(current))
            current = []
        current.append(line)
    chunks.append("".join(current))
    cells = []
    for chunk in chunks:
        if draw(st.integers(0, 9)) == 0:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": ["# Notes\n", "x[i] = v"]})
        if draw(st.integers(0, 5)) == 0:
            magic = draw(st.sampled_from(MAGICS))
            chunk = magic + "\n" + chunk if magic != "%%time" else "%%time\n" + chunk
        source = chunk.rstrip("\n") if draw(st.booleans()) else chunk
        lines = source.splitlines(keepends=True) if draw(st.booleans()) else source
        cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": lines})
    notebook = {"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, indent=draw(st.sampled_from((1, 2, None))), ensure_ascii=draw(st.booleans())) + "\n"
