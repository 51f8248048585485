"""Which calls queue JAX work that finishes later, and which operations wait for a JAX result.

Outside a trace, JAX returns from a jitted call, a `jax.numpy`/`jax.lax`/`jax.random` operation or
a transfer (`jax.device_put`) as soon as the work is queued: the array it returns is a placeholder
that the device fills in later ("asynchronous dispatch"; true on the CPU backend too). Reading the
value waits for it: `.block_until_ready()`, `jax.block_until_ready(tree)`, `float()`/`int()`/
`bool()`, `.item()`/`.tolist()`, NumPy conversion, `jax.device_get`, printing or formatting it.
A device runs its queue in order, so waiting for one result also waits for everything queued
before it.

* `Dispatch.of(ctx).call(call, scope)`: WORK when the call queues a computation or transfer,
  KEYS when it only makes or splits PRNG keys (cheap bookkeeping), None when it is not known to
  queue anything (a function of unknown origin, a shape or dtype helper, a function factory).
* `jitted(expr, scope)`: the expression names a callable made by `jax.jit`/`pmap`/`grad`/`vmap`
  (a decorated function of the module, a name bound to `jax.jit(f)`, a compiled executable, what a
  function of the module returns when it returns one of those on every path, what a t5x-style
  partitioner's `partition(f, …)` returns); calling it outside a trace dispatches asynchronously.
* `jax_value(expr, scope)`: the expression holds JAX arrays on every path through the scope,
  which makes arithmetic and array methods on it dispatches too.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from .external import TABLE_PREFIXES
from .name_origins import ARRAY_METHODS, AT_METHODS, NameOrigins
from ..semantic.scopes import Scope
from .traced import TracedFunctions
from .values import ARRAY_MODULES, CONCRETIZING_METHODS, CONVERSIONS, STATIC_CALLS
from ..syntax.walk import last_name, walk, written_number

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

WORK = "work"
KEYS = "keys"

#: Transform modes (`traced.MODES`) whose wrapped function, called outside a trace, runs JAX work:
#: the jit family compiles and dispatches; grad and vmap evaluate eagerly, one dispatch per operation.
DISPATCH_MODES = frozenset({"jit", "grad", "vmap"})
#: Classes whose `partition(fn, …)` returns `fn` compiled with `pjit` (t5x's partitioners, and the copy
#: of them in whisper-jax): calling what it returns dispatches like calling a jitted function.
PARTITIONERS = frozenset({
    "t5x.partitioning.PjitPartitioner", "t5x.partitioning.BasePjitPartitioner",
    "whisper_jax.PjitPartitioner", "whisper_jax.partitioner.PjitPartitioner",
    "whisper_jax.partitioner.BasePjitPartitioner",
})
#: Functions that move data onto devices, asynchronously.
TRANSFERS = frozenset({
    "jax.device_put", "jax.device_put_replicated", "jax.device_put_sharded", "jax.make_array_from_callback",
})
#: PRNG key management: it dispatches, but so little that leaving it unwaited does not skew a timing.
KEY_FUNCTIONS = frozenset(f"jax.random.{name}" for name in (
    "key", "PRNGKey", "split", "fold_in", "key_data", "wrap_key_data", "clone",
))
#: Functions of the array modules that queue no device work: helpers on shapes and dtypes, factories
#: of functions, print options, key metadata.
NO_WORK = STATIC_CALLS | frozenset({
    *(f"jax.numpy.{name}" for name in (
        "broadcast_shapes", "can_cast", "einsum_path", "finfo", "iinfo", "dtype", "frompyfunc", "vectorize",
        "get_printoptions", "set_printoptions", "printoptions", "iscomplexobj", "isdtype", "isrealobj", "isscalar",
        "issubdtype", "iterable", "ndim", "shape", "size", "promote_types", "result_type", "ndarray", "ufunc",
    )),
    *(f"jax.lax.{name}" for name in (
        "axis_size", "broadcast_shapes", "conv_dimension_numbers", "conv_general_permutations",
        "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose_shape_tuple", "dtype", "padtype_to_pads",
        "reduce_window_shape_tuple",
    )),
    "jax.nn.get_scaled_dot_general_config", "jax.random.key_dtype", "jax.random.key_impl",
})
#: Prefixes of the array modules whose functions build functions rather than arrays.
NO_WORK_PREFIXES = ("jax.nn.initializers.",)
#: `jnp.float32(x)` and friends: scalar constructors, as cheap as key bookkeeping.
_SCALAR_TYPES = re.compile(r"jax\.numpy\.(bfloat16|bool_?|u?int\d*|float\w*|complex\w*|double|single|cdouble|csingle)$")
#: Functions that wait for the JAX values passed to them (they read them on the host).
WAIT_FUNCTIONS = CONVERSIONS | frozenset({
    "jax.block_until_ready", "jax.device_get", "numpy.asarray", "numpy.array", "numpy.asanyarray",
    "numpy.ascontiguousarray", "numpy.copy", "numpy.save", "numpy.savez", "jax.numpy.save", "jax.numpy.savez",
    "jax.numpy.array_repr", "jax.numpy.array_str", "builtins.str", "builtins.repr", "builtins.format", "builtins.print",
})
#: Methods of a JAX array that wait for its value.
WAIT_METHODS = CONCRETIZING_METHODS | frozenset({
    "block_until_ready", "__array__", "__complex__", "__format__", "__str__", "__repr__",
})
#: Methods of a JAX array that queue a new computation.
WORK_METHODS = (ARRAY_METHODS - {"copy", "block_until_ready"}) | frozenset({
    "conjugate", "all", "any", "argsort", "sort", "take", "repeat", "diagonal", "trace", "nonzero", "choose",
    "compress", "ptp",
})
#: Functions and methods named like this are taken to wait for everything queued (`sync_global_devices`).
SYNC_NAMES = re.compile(r"sync|block|wait|barrier|ready", re.IGNORECASE)
#: Annotations that declare a parameter to be a JAX array.
ARRAY_ANNOTATIONS = frozenset({"jax.Array", "jax.numpy.ndarray"})
_MAX_DEPTH = 6


class Dispatch:
    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        self.origins = NameOrigins.of(ctx)
        self._visiting: set[tuple[int, str]] = set()
        self._visiting_values: set[tuple[int, str]] = set()

    @classmethod
    def of(cls, ctx: "SourceFile") -> "Dispatch":
        return ctx.fact(cls)

    # -- questions ------------------------------------------------------------------------------
    def call(self, call: cst.Call, scope: Scope) -> str | None:
        """WORK or KEYS when the call queues JAX work (returning before it is done), else None."""
        func = call.func
        if type(func) is cst.Call:
            if self._transform_call(func, scope):
                return KEYS if self._transforms_key_bookkeeping(func, scope) else WORK
            # a compiled executable, a partitioned function, what a factory of jitted functions returns
            return WORK if self.jitted(func, scope) else None
        qname = self.ctx.names.qualified_name(func, scope)
        if qname is not None:
            if qname in KEY_FUNCTIONS or _SCALAR_TYPES.match(qname):
                return KEYS
            if qname in TRANSFERS:
                return WORK
            if qname.startswith(ARRAY_MODULES):
                if qname in NO_WORK or qname.startswith(NO_WORK_PREFIXES) or qname in WAIT_FUNCTIONS:
                    return None
                if qname.rsplit(".", 1)[1][:1].isupper():  # classes: `lax.Precision`, `lax.GatherDimensionNumbers`
                    return None
                return WORK
        if isinstance(func, cst.Name) and self.jitted(func, scope):
            return KEYS if self._names_key_bookkeeping(func, scope) else WORK
        if type(func) is cst.Name and self._returns_queued_work(call, scope):
            return WORK
        if type(func) is cst.Attribute:
            method, receiver = func.attr.value, func.value
            if method in AT_METHODS and _is_at(receiver) and self.jax_value(receiver.value.value, scope):
                return WORK
            if method in WORK_METHODS and self.jax_value(receiver, scope):
                return WORK
        return None

    def jitted(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """Whether calling `expr` runs a jitted (or grad/vmap-transformed) function outside a trace."""
        if depth > _MAX_DEPTH:
            return False
        if type(expr) is cst.Call:
            if self._transform_call(expr, scope) or self._compiled(expr, scope) or self._partitioned(expr, scope):
                return True
            # `functools.partial(step, config)` of a jitted `step`
            if (self.ctx.names.qualified_name(expr.func, scope) == "functools.partial" and expr.args
                    and expr.args[0].keyword is None and not expr.args[0].star):
                return self.jitted(expr.args[0].value, scope, depth + 1)
            # `make_train_step(config)`: a function of the file that returns a jitted function on every path
            returned = self.origins.helper_returns(expr, scope)
            if returned:
                return all(self.jitted(value, owner, depth + 1) for value, owner in returned)
            return self._project_factory(expr, scope)
        if not isinstance(expr, cst.Name):
            return False
        found = self.origins.origins(expr.value, scope)
        if found is None:
            return False
        owner, origins = found
        key = (id(owner.node), expr.value)
        if key in self._visiting or not origins:
            return False
        self._visiting.add(key)
        try:
            decided = [self._jitted_origin(o, owner, depth) for o in origins if o.kind != "annotation"]
        finally:
            self._visiting.discard(key)
        if not decided or not decided[-1]:
            return False
        bindings = [o for o in origins if o.kind != "annotation"]
        if _wraps_itself(bindings[-1], expr.value):
            return True  # `update = jax.jit(update)`: what it was before is what it wraps now
        # `def step(...)` followed by `step = jax.jit(step)`: the plain definition is shadowed
        return all(ok or _is_def(o) for ok, o in zip(decided, bindings))

    def returns_compiled(self, function: cst.FunctionDef) -> bool:
        """Whether a function of the module returns a jitted function on every path (a factory:
        `def make_step(cfg): ...; return jax.jit(step)`)."""
        returned = self.origins.function_returns(function)
        return bool(returned) and all(self.jitted(value, owner, 1) for value, owner in returned)

    def _project_factory(self, call: cst.Call, scope: Scope) -> bool:
        """`utils.make_step(cfg)`: a factory of jitted functions in another module of the project."""
        project = self.ctx.project
        if project is None:
            return False
        dotted = self.ctx.names.qualified_name(call.func, scope)
        if dotted is None or dotted.startswith(TABLE_PREFIXES):
            return False
        function = project.function_at(dotted)
        return function is not None and not function.method and project.returns_compiled(function.ref)

    def jax_value(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """Whether `expr` holds JAX arrays (or a pytree of them) on every path: never NumPy or Python values."""
        if depth > _MAX_DEPTH:
            return False
        if type(expr) is cst.Call:
            return self.call(expr, scope) is not None
        if type(expr) is cst.BinaryOperation:
            # NumPy defers to JAX arrays (`__array_priority__`): the result is a JAX array either way
            return self.jax_value(expr.left, scope, depth + 1) or self.jax_value(expr.right, scope, depth + 1)
        if type(expr) is cst.UnaryOperation:
            return not isinstance(expr.operator, cst.Not) and self.jax_value(expr.expression, scope, depth + 1)
        if type(expr) is cst.Subscript:
            return self.jax_value(expr.value, scope, depth + 1)
        if type(expr) is cst.Attribute:
            return expr.attr.value in ("T", "mT", "real", "imag") and self.jax_value(expr.value, scope, depth + 1)
        if isinstance(expr, cst.Name):
            return self._name_is_jax_value(expr.value, scope, depth)
        return False

    # -- helpers --------------------------------------------------------------------------------
    def _returns_queued_work(self, call: cst.Call, scope: Scope) -> bool:
        """`train(state)` of a function of the file that returns what JAX work makes on every path
        (`return lax.scan(step, state, xs)`) and waits for nothing: it returns once that work is
        queued, as the operation itself would."""
        returned = self.origins.helper_returns(call, scope)
        if not returned:
            return False
        function = returned[0][1].node
        key = (id(function), "")
        if key in self._visiting_values:
            return False
        self._visiting_values.add(key)
        try:
            return not self._waits(function, returned[0][1]) and all(
                self.jax_value(value, owner, 1) for value, owner in returned)
        finally:
            self._visiting_values.discard(key)

    def _waits(self, function: cst.CSTNode, scope: Scope) -> bool:
        """Whether a function's body may wait for a JAX result: a call that reads a value on the host
        (`float(x)`, `.block_until_ready()`, `np.asarray(x)`, `print(x)`) or a call by a name that says
        it synchronises. Names are resolved: `jnp.array(results)` queues work where `np.array` waits."""
        resolve = self.ctx.names.qualified_name
        found = False

        def enter(node: cst.CSTNode, _field: str) -> bool:
            nonlocal found
            if found:
                return False
            if type(node) is cst.Call:
                found = self._call_waits(node, resolve(node.func, scope))
            return not found

        walk(function, enter, lambda node: None)
        return found

    @staticmethod
    def _call_waits(call: cst.Call, qname: str | None) -> bool:
        if qname is not None and qname.startswith(ARRAY_MODULES):
            return qname in WAIT_FUNCTIONS  # JAX's own functions: known either way
        if qname is not None and qname in WAIT_FUNCTIONS:
            return True
        name = last_name(call.func)
        if name is None:
            return False
        if type(call.func) is cst.Attribute and name in WAIT_METHODS:
            return True  # `x.block_until_ready()`, `loss.item()`
        # an unresolved name that says it waits (`np.array` through an alias, `sync_global_devices`)
        return qname is None and name in _WAITING_NAMES or SYNC_NAMES.search(name) is not None

    def _transform_call(self, call: cst.Call, scope: Scope) -> bool:
        """`jax.jit(f)`, `partial(jax.jit, …)(f)`, `jax.grad(f)`, `jax.vmap(f)`: a transformed callable."""
        found = self.ctx.fact(TracedFunctions).application(call, scope)
        return found is not None and found[0].mode in DISPATCH_MODES

    def _transforms_key_bookkeeping(self, call: cst.Call, scope: Scope) -> bool:
        """`jax.vmap(lambda k, n: jax.random.split(k[0], n))`: the transformed function only makes or
        splits keys, so that calling it is as cheap as calling `jax.random.split` itself."""
        args = call.args
        if not args or args[0].keyword is not None or args[0].star:
            return False
        function = args[0].value
        if isinstance(function, cst.Name):
            found = scope.lookup(function.value)
            nodes = found[1].nodes if found is not None else ()
            if len(nodes) != 1 or not isinstance(nodes[0], cst.FunctionDef):
                return False
            function = nodes[0]
        return self._only_keys_in(function, scope)

    def _names_key_bookkeeping(self, name: cst.Name, scope: Scope) -> bool:
        """`split_all = jax.vmap(lambda k: jax.random.split(k))` or a `@jax.jit` function that only
        splits keys, bound once."""
        found = self.origins.origins(name.value, scope)
        if found is None:
            return False
        owner, origins = found
        origins = [o for o in origins if o.kind != "annotation"]
        if len(origins) != 1:
            return False
        origin = origins[0]
        if origin.kind == "value" and isinstance(origin.value, cst.Call):
            return self._transform_call(origin.value, owner) and self._transforms_key_bookkeeping(origin.value, owner)
        return isinstance(origin.node, cst.FunctionDef) and self._only_keys_in(origin.node, owner)

    def _only_keys_in(self, function: cst.BaseExpression | cst.FunctionDef, scope: Scope) -> bool:
        """The function's results are keys made by key functions, and it computes nothing else."""
        if isinstance(function, cst.Lambda):
            return self._key_expression(function.body, scope, bare_names=False)
        if not isinstance(function, cst.FunctionDef) or not isinstance(function.body, cst.IndentedBlock):
            return False
        # straight-line bodies only: `k1, k2 = jax.random.split(key)` … `return k1, k2`
        made = False
        for line in function.body.body:
            if not isinstance(line, cst.SimpleStatementLine):
                return False
            for small in line.body:
                if isinstance(small, cst.Assign) and self._key_expression(small.value, scope, bare_names=False):
                    made = True
                elif isinstance(small, cst.Return) and small.value is not None:
                    if self._key_expression(small.value, scope, bare_names=False):
                        made = True
                    elif not self._key_expression(small.value, scope, bare_names=True):
                        return False
                elif not (isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)):
                    return False
        return made

    def _key_expression(self, expr: cst.BaseExpression, scope: Scope, bare_names: bool) -> bool:
        """`jax.random.split(k[0], n)`, `jax.random.split(key)[1]`, `(fold_in(k, 1), fold_in(k, 2))`;
        with `bare_names`, names bound earlier in the body (`return k1, k2`) too."""
        if isinstance(expr, cst.Call):
            qname = self.ctx.names.qualified_name(expr.func, scope)
            return qname is not None and (qname in KEY_FUNCTIONS or _SCALAR_TYPES.match(qname) is not None) \
                and not any(self._calls_other_than_keys(arg.value, scope) for arg in expr.args)
        if isinstance(expr, cst.Subscript):
            return self._key_expression(expr.value, scope, bare_names)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return bool(expr.elements) and all(
                self._key_expression(element.value, scope, bare_names) for element in expr.elements)
        return bare_names and isinstance(expr, cst.Name)

    def _calls_other_than_keys(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        other = False

        def enter(node: cst.CSTNode, _field: str) -> bool:
            nonlocal other
            if type(node) is cst.Call:
                qname = self.ctx.names.qualified_name(node.func, scope)
                other = qname is None or not (qname in KEY_FUNCTIONS or _SCALAR_TYPES.match(qname))
            return not other

        walk(expr, enter, None)
        return other

    def _compiled(self, call: cst.Call, scope: Scope) -> bool:
        """`jitted.lower(x).compile()`: a compiled executable, whose calls dispatch like the jitted function's."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "compile"):
            return False
        lowered = func.value
        if not (isinstance(lowered, cst.Call) and isinstance(lowered.func, cst.Attribute)
                and lowered.func.attr.value == "lower"):
            return False
        return self.jitted(lowered.func.value, scope, 1)

    def _partitioned(self, call: cst.Call, scope: Scope) -> bool:
        """`partitioner.partition(step, in_specs, out_specs)` of a partitioner the scope makes itself."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "partition" and isinstance(func.value, cst.Name)):
            return False
        found = self.origins.origins(func.value.value, scope)
        if found is None:
            return False
        owner, origins = found
        made = [o for o in origins if o.kind != "annotation"]
        return bool(made) and all(
            o.kind == "value" and isinstance(o.value, cst.Call)
            and self.ctx.names.qualified_name(o.value.func, owner) in PARTITIONERS for o in made)

    def _jitted_origin(self, origin, owner: Scope, depth: int) -> bool:
        if origin.kind == "value" and origin.value is not None:
            return self.jitted(origin.value, owner, depth + 1)
        node = origin.node
        if origin.kind == "other" and isinstance(node, cst.FunctionDef) and node.decorators:
            use = self.ctx.fact(TracedFunctions).transform_use(node.decorators[0].decorator, owner)
            return use is not None and use.mode in DISPATCH_MODES
        return False

    def _name_is_jax_value(self, name: str, scope: Scope, depth: int) -> bool:
        found = self.origins.origins(name, scope)
        if found is None:
            return False
        owner, origins = found
        key = (id(owner.node), name)
        if key in self._visiting_values:
            return True  # `x = x @ w`: the other bindings decide
        self._visiting_values.add(key)
        try:
            # `total = 0.0`, then `total += loss` in a loop: a Python number plus a JAX array is one,
            # and where nothing was added the number holds no work
            accumulates = any(origin.kind == "augmented" and origin.value is not None
                              and self.jax_value(origin.value, owner, depth + 1) for origin in origins)
            decided = accumulates
            for origin in origins:
                if origin.kind in ("annotation", "augmented"):
                    continue
                if accumulates and written_number(origin.value):
                    continue
                decided = True
                if origin.kind in ("value", "element", "iteration"):
                    # `params, loss = step(params, batch)`, `for row in x`: parts of JAX values are JAX values
                    if origin.value is None or not self.jax_value(origin.value, owner, depth + 1):
                        return False
                elif origin.kind == "param":
                    if not self._annotated_array(origin.node, owner):
                        return False
                else:
                    return False
            return decided
        finally:
            self._visiting_values.discard(key)

    def _annotated_array(self, param: cst.CSTNode | None, scope: Scope) -> bool:
        if not isinstance(param, cst.Param) or param.annotation is None:
            return False
        annotation = param.annotation.annotation
        if isinstance(annotation, cst.Subscript) and annotation.slice:  # jaxtyping: Float[Array, "n"]
            first = annotation.slice[0].slice
            annotation = first.value if isinstance(first, cst.Index) else annotation
        return self.ctx.names.qualified_name(annotation, scope) in ARRAY_ANNOTATIONS


def _wraps_itself(origin, name: str) -> bool:
    """`name = jax.jit(name, …)`: a binding that wraps the name's own earlier value."""
    value = origin.value if origin.kind == "value" else None
    return type(value) is cst.Call and bool(value.args) and value.args[0].keyword is None \
        and type(value.args[0].value) is cst.Name and value.args[0].value.value == name


def _is_def(origin) -> bool:
    return origin.kind == "other" and isinstance(origin.node, cst.FunctionDef)


def _is_at(expr: cst.BaseExpression) -> bool:
    """`x.at[i]`"""
    return (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute)
            and expr.value.attr.value == "at")


#: The last part of the names of functions that wait for JAX values, where the name cannot be resolved.
_WAITING_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in WAIT_FUNCTIONS)
