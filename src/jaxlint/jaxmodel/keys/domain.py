"""The key domain on the generic flow interpreter: what each expression holds (a fresh key, a
consumed one, a batch of keys, no key) and where a consumed key is consumed again."""
from __future__ import annotations

import dataclasses

import libcst as cst

from ...dataflow import FlowInterpreter
from ...dataflow.interpreter import expressions_below
from ..pending_work import CLOCKS
from ..values import STATIC_ATTRIBUTES
from ...semantic.literals import Literals
from ...semantic.model import SemanticModel
from ...semantic.scopes import Scope
from ...syntax.arguments import Passing
from ...syntax.walk import last_name
from ..signatures import CONTAINER_ANNOTATIONS
from ..transforms import LAX_BODIES, LAX_LOOPS, PASS_THROUGH, TREE_MAPS
from .policy import (alternatives_on_the_same_inputs, in_test_function, over_mapping_values, periodic,
    same_run_again)
from .state import (CarryElement, Consumption, FAILS, HOLDS, KEY, KEYS, KeyFacts, KeyState, MAYBE, NOT_KEY, READ, Reuse, State,
    carry_marker)
from .tables import (AHEAD_OF_TIME, ARRAY_ANNOTATION, CARRY_LOOPS, DRAWING_INITIALIZERS, INIT_NAME, INSPECTING_NAME, KEY_ANNOTATIONS,
    KEY_MAKERS, LINEN_DRAWING_METHODS, MANAGED_KEY_FUNCTIONS, MANAGED_KEY_METHODS, NON_CONSUMING_PREFIXES, NON_CONSUMING_RANDOM, STORING_CALLS)

FunctionNode = cst.FunctionDef | cst.Lambda


class KeyDomain:
    """The key domain for one scope (a function or the module's top level), run by the generic
    interpreter: names hold a `KeyState` (or READ when they hold no key); `evaluate` says where a
    call consumes a key and what it makes. In `summary` mode it only records which parameters the
    scope consumes; otherwise also every reuse (`found`). With `carry` set it probes the
    body of a lax loop for carry keys it draws from and returns unchanged."""

    def __init__(self, facts: KeyFacts, function: FunctionNode | None, scope: Scope, summary: bool) -> None:
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
        #: ids of the lax loop bodies among them: traced once, whatever Python runs there runs once
        self.traced_bodies: set[int] = set()
        #: keys of objects are followed (`agent.key`, drawn from by `agent.act(x)`)
        self.object_keys = False
        #: for a lax loop body: (its carry parameter, whether it returns `(carry, output)`)
        self.carry: tuple[str, bool] | None = None
        #: (carry position or None for the whole carry, name, consumption) of carry keys drawn
        #: from and returned unchanged
        self.carry_reused: list[tuple[int | None, str, Consumption]] = []
        #: the reuses this run found (not in summary mode), in the order met; the file's analysis
        #: keeps those of the run whose summaries it read are settled
        self.found: list[Reuse] = []

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
                if mixed_container(param.annotation.annotation):
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

    @staticmethod
    def known_truth(value) -> bool | None:
        """A test the code fixes (`HOLDS`, `FAILS`): the other branch never runs."""
        return True if value is HOLDS else False if value is FAILS else None

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

    def store(self, target: cst.BaseExpression, value, flow: FlowInterpreter) -> None:
        """`self.key = key`, `self.rng, sub = jax.random.split(self.rng)`: the object's key is
        replaced; followed as a name of its own (`self.rng`) within the method."""
        flow.eval(target.value)
        if type(target) is cst.Subscript:
            for element in target.slice:
                if type(element.slice) is cst.Index:
                    flow.eval(element.slice.value)
        location = self._own_attribute(target)
        if location is None and type(target) is cst.Attribute and type(target.value) is cst.Name and flow.env:
            other = f"{target.value.value}.{target.attr.value}"  # `agent.key = ...`: that object's key
            location = other if other in flow.env else None
        if location is None or flow.env is None:
            return
        if type(value) is KeyState:
            value = KEY if value.known else READ
        flow.env[location] = KeyState(known=True) if value is KEY or value is KEYS else READ

    def bound(self, name: str, value, target: cst.CSTNode | None, flow: FlowInterpreter):
        """What a name holds once bound: a fresh key state for a key (a name bound to another name's
        key starts fresh: the two are not followed as one), READ for anything else."""
        if self.object_keys and flow.env:
            # another object under this name: the keys followed on the one it held are not its
            for location in [held for held in flow.env if held.startswith(name + ".")]:
                del flow.env[location]
        if type(value) is KeyState and value.alias is not None:
            return KeyState(value.consumed, value.known, alias=value.alias) if name not in self.not_keys else READ
        if type(value) is KeyState:
            value = KEY if value.known else READ
        if value is KEY or value is KEYS:
            return KeyState(known=True) if name not in self.not_keys else READ
        if type(value) is CarryElement:
            return KeyState(param=carry_marker(value.position))
        if value is MAYBE and self.facts.key_name.match(name) and name not in self.not_keys:
            # `key, x = carry`: named like a key; sure consumers only
            return KeyState(known=False)
        return READ

    def unpack(self, value, count: int, starred: int | None) -> list:
        """`a, b = value`: each target gets a key from a batch of keys; a name read from a name,
        attribute or subscript without a key of its own (`key, x = carry`) may be one."""
        if type(value) is KeyState:
            if value.param == carry_marker(None) and starred is None:
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

    @staticmethod
    def iterates(node: cst.For) -> bool:
        """A `for` loop is taken to run its body at least once (but over a written-out empty
        sequence): a key consumed before the loop and rebound in every iteration is fresh after it,
        and a reuse only on the path where the loop never runs is not what its author wants to hear."""
        iterable = node.iter
        return not (type(iterable) in (cst.List, cst.Tuple) and not iterable.elements)

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
                if self.carry is not None and base.param == carry_marker(None):
                    position = _constant_index(node)
                    if position is not None:
                        return CarryElement(position)
                if base.known and type(node.value) is cst.Name:
                    return KEY
            return READ
        if kind is cst.Attribute:
            flow.eval(node.value)
            location = self._own_attribute(node)
            if location is not None and flow.env is not None:
                held = flow.env.get(location)
                if held is None and self.facts.key_name.match(location[5:]) and location[5:] not in self.not_keys:
                    held = flow.env[location] = KeyState(known=False)
                if type(held) is KeyState:
                    return KeyState(held.consumed, held.known, alias=location)  # `rng = self.key`
            return READ
        if kind is cst.Comparison:
            for child in expressions_below(node):
                flow.eval(child)
            truth = self.facts.fixed_truth(node, self.scope)
            return NOT_KEY if truth is None else HOLDS if truth else FAILS
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
        callee = self.resolve(func) or self.facts.drawing_initializer(func, self.scope)
        if type(func) is cst.Attribute:
            flow.eval(func.value)
        elif type(func) is cst.Call:
            flow.eval(func)
        for arg in node.args:
            flow.eval(arg.value)
        if not flow.unreachable:
            for name, certain, direct, via, reached in self._consumed_arguments(node, callee, flow):
                self.consume(name, node, certain, direct, flow, via, callee if direct else None, reached)
            if self.object_keys and flow.env:
                self._forget_replaced_keys(node, flow.env)
            if callee in TREE_MAPS:
                self.map_over_leaves(node, flow)
            elif callee in LAX_LOOPS:
                self.run_loop_body(node, callee, flow)
                if callee in CARRY_LOOPS and not self.summary:
                    self.carry_loop(node, callee)
        if callee in KEY_MAKERS or callee == "jax.random.fold_in" or callee == "jax.random.clone" \
                or callee in MANAGED_KEY_FUNCTIONS:
            return KEY
        if type(func) is cst.Attribute and func.attr.value in MANAGED_KEY_METHODS:
            return KEY
        if callee == "jax.random.split":
            return KEYS
        return NOT_KEY

    def map_over_leaves(self, node: cst.Call, flow: FlowInterpreter) -> None:
        """`jax.tree.map(f, tree)`: `f` runs once per leaf, here, like a loop body, so that a key it
        closes over and draws from is seen consumed again by the next leaf."""
        self._apply_here(node, self._function_argument(node, 0, "f"), flow)

    def run_loop_body(self, node: cst.Call, callee: str, flow: FlowInterpreter) -> None:
        """`lax.fori_loop(0, n, body, x)`: the body is traced once and runs every iteration, so a key
        it closes over (or takes from a Python generator with `next`, which runs once, while tracing)
        is the same key in every iteration. Run here, like a loop body, a draw from it is seen
        consumed again by the next iteration."""
        positions, keywords = LAX_BODIES[callee]
        for index, keyword in zip(positions, keywords):
            function = self._function_argument(node, index, keyword)
            if function is not None:
                self.traced_bodies.add(id(function))
                self._apply_here(node, function, flow)

    def _apply_here(self, node: cst.Call, function: FunctionNode | None, flow: FlowInterpreter) -> None:
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
            self.found.append(Reuse(node, name, first, loop=node, kind="carry"))

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
            if type(held) is KeyState and held.param == carry_marker(position) and held.consumed is not None \
                    and held.consumed.certain:
                self.carry_reused.append((position, name, held.consumed))

    def _consumed_arguments(self, node: cst.Call, callee: str | None,
                            flow: FlowInterpreter) -> list[tuple[str, bool, bool, Consumption | None,
                                                                 tuple[FunctionNode, str] | None]]:
        """The names holding keys that this call consumes, each with whether the consumer is known,
        whether it is a `jax.random` call itself, where a module function it reaches consumes it, and
        that function with the parameter given the key."""
        state = flow.env
        if state is None:
            return []
        if self.facts.draws_from_outside:
            for name, _, draw in self.facts.outside_draws(self.scope.node):
                if draw.node is node and type(state.get(name)) is not KeyState:
                    state[name] = KeyState()  # a global's or an enclosing function's key: sure draws only
        tracked = [(arg, arg.value.value) for arg in node.args
                   if type(arg.value) is cst.Name and type(state.get(arg.value.value)) is KeyState and not arg.star]
        tracked += self._own_keys(node, state)
        if callee is not None and (callee.startswith("jax.random.") or callee in DRAWING_INITIALIZERS):
            if callee in NON_CONSUMING_RANDOM:
                return []
            if id(self.scope.node) in self.traced_bodies:
                tracked += self._taken_while_tracing(node, state)
            key_args = [(a, n) for a, n in tracked if a.keyword is None or a.keyword.value == "key"]
            return [(n, True, True, None, None) for a, n in key_args[:1]
                    if a is node.args[0] or (a.keyword and a.keyword.value == "key")]
        if callee in LAX_LOOPS:
            names = [n for _, n in tracked]
            for arg in node.args:
                if isinstance(arg.value, (cst.Tuple, cst.List)):
                    names += [e.value.value for e in arg.value.elements
                              if isinstance(e.value, cst.Name) and type(state.get(e.value.value)) is KeyState]
            return [(n, False, False, None, None) for n in names]
        if not tracked and not self.facts.draws_from_outside:
            return []
        reached = self.facts.callee(node.func, self.scope, call=node)
        if not tracked and reached is None:
            return []
        if not self.facts.strict and self.facts.warm_up(node, flow.current_statement, self.scope):
            return []
        if reached is not None:
            summary = self.facts.read_summary(reached.function)
            given = {id(arg.value) for arg in node.args}  # not what a `partial` bound elsewhere
            # a key the library keeps for itself (`model.init(key, x)`, `net.apply(params, key, x)`)
            # is drawn from by code the analysis does not read: as a key handed to an unknown call
            kept = {id(arg) for arg in reached.kept_by_library(node.args)}
            # ...but Linen's `init` draws the parameters from its leading key for sure
            draws = type(node.func) is cst.Attribute and node.func.attr.value in LINEN_DRAWING_METHODS
            result = [(n, draws and arg.keyword is None, False, None, None) for arg, n in tracked
                      if id(arg) in kept and self.facts.unknown_calls_consume]
            for param, passed in reached.bind(node.args).items():
                if param not in summary.consumed or passed.how is not Passing.ARGUMENT:
                    continue
                value = passed.values[0]
                if id(value) in given and isinstance(value, cst.Name) and type(state.get(value.value)) is KeyState:
                    inner = summary.consumed[param]
                    result.append((value.value, inner.certain, False, inner, (reached.function, param)))
            return result + self._drawn_from_outside(reached, node, state) \
                + self._drawn_from_default(reached, summary, node, state)
        if callee is not None and (callee.startswith(NON_CONSUMING_PREFIXES) or callee in NON_CONSUMING_RANDOM
                                   or callee in STORING_CALLS):
            return []
        if type(node.func) is cst.Call and self.facts.unknown_calls_consume:
            if self.resolve(node.func.func) in PASS_THROUGH:
                # a transform's wrapper of a function unseen (`jax.vmap(self.buffer.init)(keys)`) says
                # nothing of whether it draws; of a name bound to one of several functions of the
                # module, it draws where every one of them does
                names = {n for _, n in tracked}
                return [(n, certain, False, None, None)
                        for n, certain in self.facts.used_by_every_binding(node, self.scope).items() if n in names]
            # what a call returned, called (`Predictive(model, samples)(key, x)`): a function unseen
            return [(n, False, False, None, None) for _, n in tracked]
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
        return [(n, False, False, None, None) for _, n in tracked]

    def _drawn_from_outside(self, reached, node: cst.Call, state: "State") -> list:
        """The keys a function of the module called here draws from where it takes them from the
        code around it (`KEY` of `def sample(x): return jax.random.normal(KEY, x.shape)`): every
        call draws from that same key again, as if it were handed in."""
        found = []
        for name, owner, draw in self.facts.outside_draws(reached.function):
            if owner is None:  # `self.key` of the method called: the object's, as the call names it
                receiver = node.func.value if type(node.func) is cst.Attribute else node.func
                if type(receiver) is not cst.Name or not reached.receiver:
                    continue
                location = f"{receiver.value}.{name[5:]}"
                if type(state.get(location)) is not KeyState:
                    state[location] = KeyState()
                    self.object_keys = True
                found.append((location, draw.certain, False, draw, None))
                continue
            seen = self.scope.lookup(name)
            if seen is None or seen[0] is not owner:
                continue  # a name of its own here: another key
            if type(state.get(name)) is not KeyState:
                if name in state:
                    continue  # rebound here to something else
                state[name] = KeyState()  # for sure draws only, as every call makes this one
            found.append((name, draw.certain, False, draw, None))
        return found

    def _drawn_from_default(self, reached, summary, node: cst.Call, state: "State") -> list:
        """The default key of a parameter the function called here draws from, when the call passes
        none (`def sample(x, key=jax.random.key(0))`): the default is made once, where the function is
        defined, so every such call draws from that same key."""
        function = reached.function
        if type(function) is not cst.FunctionDef or any(arg.star for arg in node.args):
            return []  # `*args`/`**kwargs` may pass it
        params = function.params
        passed = reached.bind(node.args)
        found = []
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            name = param.name.value
            inner = summary.consumed.get(name)
            if param.default is None or type(param.default) is not cst.Call or name in passed \
                    or inner is None or not inner.certain:
                continue
            own = self.facts.traced.scopes.get(id(function))
            if own is None or own.parent is None \
                    or self._names.qualified_name(param.default.func, own.parent) not in KEY_MAKERS:
                continue
            location = f"{function.name.value}({name}=…)"
            if type(state.get(location)) is not KeyState:
                state[location] = KeyState()
            drawn = dataclasses.replace(inner, default_of=(function.name.value, name))
            found.append((location, True, False, drawn, None))
        return found

    def _forget_replaced_keys(self, node: cst.Call, state: "State") -> None:
        """Drops the keys of an object (`agent.key`) that the call may replace: the object handed to
        it (`reseed(agent)`), or a method of the object that may store a new one (`agent.refresh()`)."""
        handed = {arg.value.value for arg in node.args if type(arg.value) is cst.Name}
        receiver = node.func.value.value if type(node.func) is cst.Attribute and type(node.func.value) is cst.Name else None
        for location in [loc for loc in state if "." in loc and not loc.startswith("self.") and "(" not in loc]:
            owner, _, attribute = location.partition(".")
            if owner in handed or (owner == receiver and not self.facts.keeps_object_key(node, attribute, self.scope)):
                del state[location]

    def _own_attribute(self, expr: cst.BaseExpression) -> str | None:
        """`self.rng` in a method (`self` its first parameter): the object's attribute, as the name
        the domain follows it by; None for anything else."""
        if type(expr) is not cst.Attribute or type(expr.value) is not cst.Name or type(self.owner) is not cst.FunctionDef:
            return None
        params = self.owner.params.params
        found = self.scope.lookup("self")
        if not params or params[0].name.value != "self" or expr.value.value != "self" \
                or found is None or found[0] is not self.scope:
            return None
        return f"self.{expr.attr.value}"

    def _own_keys(self, node: cst.Call, state: "State") -> list[tuple[cst.Arg, str]]:
        """The arguments that are the object's own key (`jax.random.normal(self.rng, shape)`): one
        stored in the method (`self.rng = ...`), or named like a key (`self.key`, `self.rng`), then
        followed for sure consumers only, as a parameter named like one is."""
        found = []
        for arg in node.args:
            location = self._own_attribute(arg.value) if not arg.star else None
            if location is None and not arg.star and type(arg.value) is cst.Attribute \
                    and self.facts.object_key(arg.value, self.scope):
                location = f"{arg.value.value.value}.{arg.value.attr.value}"  # `agent.key`: that object's key
                if type(state.get(location)) is not KeyState:
                    state[location] = KeyState(known=True)
                self.object_keys = True
                found.append((arg, location))
                continue
            if location is None:
                continue
            held = state.get(location)
            if held is None and self.facts.key_name.match(location[5:]) and location[5:] not in self.not_keys:
                held = state[location] = KeyState(known=False)
            if type(held) is KeyState:
                found.append((arg, location))
        return found

    def _taken_while_tracing(self, node: cst.Call, state: "State") -> list[tuple[cst.Arg, str]]:
        """`jax.random.randint(next(keys), …)` in a lax loop body, `keys` a generator of the code
        around it: `next` runs once, while the body is traced, so every iteration gets that one key.
        Followed as a name of its own, `next(keys)`."""
        taken = []
        for arg in node.args:
            value = arg.value
            if type(value) is cst.Call and len(value.args) == 1 and type(value.args[0].value) is cst.Name \
                    and self.resolve(value.func) == "builtins.next" \
                    and value.args[0].value.value not in self.scope.bindings:
                name = f"next({value.args[0].value.value})"
                if type(state.get(name)) is not KeyState:
                    state[name] = KeyState(known=True)
                taken.append((arg, name))
        return taken

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
        # the scope's recorded calls, not a walk: at module level that would walk the whole module
        return any(self.resolve(call.func) in CLOCKS
                   for call in SemanticModel.of(self.facts.ctx).calls_in_scope(self.scope, after=low, before=high))

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
        for occurrence, scope, parent in SemanticModel.of(self.facts.ctx).name_occurrences([name], self.scope.node):
            owner = scope.lookup(name)
            if occurrence is target or owner is None or owner[0].node is not self.scope.node:
                continue
            if not (isinstance(parent, cst.Attribute) and parent.value is occurrence
                    and parent.attr.value in STATIC_ATTRIBUTES):
                return False
            reads += 1
        return reads > 0  # a draw nobody reads at all has dead outputs (`facts.dead`), decided there

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
                via: Consumption | None = None, draw: str | None = None,
                reached: tuple[FunctionNode, str] | None = None) -> None:
        state = flow.env
        held = state.get(name)
        line = self.facts.order(node)
        consumption = Consumption(node, line, certain, direct, via, draw, self.scope.node,
                                  statement=flow.current_statement, reached=reached)
        aliased = state.get(held.alias) if held.alias is not None else None
        if type(aliased) is KeyState:
            # `rng = self.key`: the two names hold one key; what consumes one consumes the other
            if aliased.consumed is None and certain:
                state[held.alias] = KeyState(consumption, aliased.known, aliased.param)
            elif aliased.consumed is not None and held.consumed is None:
                held = state[name] = KeyState(aliased.consumed, held.known, held.param, held.alias)
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
                    if isinstance(loop, cst.Call):
                        kind = "lax" if self.resolve(loop.func) in LAX_LOOPS else "leaves"
                    elif loop is not None:
                        kind = "loop"
                if kind == "lax" and not (certain and first.certain):
                    return  # handed to a function not read here, maybe with the loop index to fold in
                if kind == "loop" and over_mapping_values(loop):
                    kind = "leaves" if self.facts.aligned(first, consumption, "leaves") else kind
                if kind not in ("loop", "lax") and self.facts.aligned(first, consumption, kind):
                    return  # the same shuffle of several arrays, on purpose: they stay aligned
                if kind == "again" and not self.facts.strict and self.facts.in_other_cells(first.node, consumption.node):
                    # a cell of its own: what it draws is compared with its own later draws
                    state[name] = KeyState(consumption, held.known, held.param)
                    return
                if kind == "again" and not self.facts.strict and (
                        same_run_again(first, consumption) or alternatives_on_the_same_inputs(first, consumption)
                        or self._dummy_input(first, consumption)
                        or self._timed_again(first, consumption) or self._shape_only(first)):
                    return
                if kind == "loop" and not self.facts.strict and (
                        self._over_written_out_cases(loop) or periodic(loop, node)):
                    return
                if self.facts.dead(first, consumption):
                    # nothing reads what the first use made: this use is the first whose numbers count
                    state[name] = KeyState(consumption, held.known, held.param)
                    return
                if self.facts.dead(consumption):
                    return  # nothing reads what this use makes: it repeats no number anyone sees
                self.found.append(Reuse(node, name, first, loop, kind))
            elif certain and not held.consumed.certain and not self.summary:
                # after a call that may or may not draw from the key (unknown: not reported), a sure
                # draw is what a later sure draw repeats
                state[name] = KeyState(consumption, held.known, held.param)
            return
        state[name] = KeyState(consumption, held.known, held.param)
        if held.param is not None and held.param not in self.param_consumed:
            self.param_consumed[held.param] = consumption


# -- helpers ------------------------------------------------------------------------------------


def dotted_expression(dotted: str) -> cst.BaseExpression:
    """A dotted name as an expression (`jax.random.normal`), for messages that print a call."""
    parts = [part for part in dotted.split(".") if part.isidentifier()] or ["draw"]
    expr: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(expr, cst.Name(part))
    return expr


def _constant_index(node: cst.Subscript) -> int | None:
    """`carry[1]`: 1; None for any other subscript."""
    if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    index = node.slice[0].slice.value
    return index.evaluated_value if type(index) is cst.Integer else None


def parameter_count(function: FunctionNode) -> int:
    """Parameters a summary can be about (`self` and `cls` are never keys)."""
    p = function.params
    return sum(1 for x in (*p.posonly_params, *p.params, *p.kwonly_params) if x.name.value not in ("self", "cls"))


def parameter_names(function: FunctionNode) -> list[str]:
    p = function.params
    return [x.name.value for x in (*p.posonly_params, *p.params)]


def mixed_container(annotation: cst.BaseExpression) -> bool:
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
