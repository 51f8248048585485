"""The key analysis of one file: runs the key domain over every scope that can hold a key, settles
the parameter summaries, and keeps the reuses found, in source order."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable

import libcst as cst

from ...dataflow import FlowInterpreter, SettledSummaries
from ..jax_names import JIT_FAMILY
from ...semantic.model import SemanticModel
from ...semantic.scopes import Scope
from ...semantic.source_file import CELL_BOUNDARY
from ...syntax.arguments import Passing
from ...syntax.positions import node_spans
from ...syntax.walk import COMPREHENSIONS, last_name, target_names, target_parts, walk
from ..calls import Callee
from ..dispatch import Dispatch
from ..name_origins import NameOrigins
from ..traced import TracedFunctions
from .domain import KeyDomain, dotted_expression, parameter_count
from .outputs import ConsumptionOutputs
from .policy import discarded_call, drawn_by, index_draw_arguments, index_draws, is_test_file
from .state import Consumption, KeyState, Reuse, Summary, carry_marker, same_summary
from .tables import (ALIGNING_DRAWS, DRAWING_INITIALIZERS, KEY_ANNOTATIONS, KEY_ATTRIBUTES, KEY_DERIVERS, KEY_MAKERS,
    KEY_SOURCE_NAMES, MAX_SUMMARY_RUNS, NON_CONSUMING_RANDOM,
    key_like, key_name_pattern, may_name_key_or_array)

#: Expressions that may leave some of what they hold unevaluated.
_CONDITIONAL = frozenset({cst.IfExp, cst.BooleanOperation, cst.Lambda, *COMPREHENSIONS})

if TYPE_CHECKING:
    from ...semantic.source_file import SourceFile

FunctionNode = cst.FunctionDef | cst.Lambda


class KeyFlowFacts:
    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        self._index: FileIndex | None = None
        self.traced = ctx.fact(TracedFunctions)
        self.functions: list[FunctionNode] = list(self.traced.functions)
        #: which parameters each function consumes, to a fixed point, settled where a key is given
        self.summaries: SettledSummaries[Summary] = SettledSummaries(
            self._summarise, Summary(), same_summary, MAX_SUMMARY_RUNS, summarised=self._summarised)
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
        #: id(function) -> its last run while summaries settled, where that was a full run
        self._settling_runs: dict[int, KeyDomain] = {}
        self._shared_entries: dict[int, dict | None] = {}
        self._outputs: ConsumptionOutputs | None = None
        self._outside: dict[int, list] | None = None
        self._drawer_names: frozenset[str] | None = None
        self._with_default_keys: frozenset[int] | None = None
        #: id(function) -> ids of the calls that run whenever it runs to its end
        self._unconditional: dict[int, set[int]] = {}
        #: the file is a notebook's cells joined (asked for every reuse: the text is searched once)
        self._cells = CELL_BOUNDARY in ctx.source
        self._compute()

    @property
    def lines(self) -> "FileIndex":
        if self._index is None:
            self._index = FileIndex(self.ctx)
        return self._index

    @classmethod
    def of(cls, ctx: "SourceFile") -> "KeyFlowFacts":
        return ctx.fact(cls)

    # -- driver ---------------------------------------------------------------------------------
    def _compute(self) -> None:
        if "random" not in self.ctx.source and "key" not in self.ctx.source:
            return
        # Parameter summaries settle as the runs below hand keys to functions (`read_summary`).
        self._keep(self._flow(None, summary=False))
        for function in self.functions:
            if self.may_hold_keys(function):
                if self._summarised(function) and self._shared_entry(function) is not None:
                    self.summaries.get(function)  # the summary's run is this full run: made once
                settled = self._settling_runs.pop(id(function), None)
                if settled is None or not self.summaries.settled(function):
                    settled = self._flow(function, summary=False)
                self._keep(settled)
        self.reuses.sort(key=lambda r: self.lines.order(r.node))

    def _summarise(self, function: FunctionNode) -> Summary:
        entry = self._shared_entry(function)
        if entry is None:
            return Summary(self._flow(function, summary=True).param_consumed)
        # The full run starts from the same parameters: the summary's run is that run, and its
        # reuses are kept where the summaries it read did not change after it (`_compute`).
        full = KeyDomain(self, function, self._scope_of(function), summary=False)
        FlowInterpreter(full).run(function, entry)
        self._settling_runs[id(function)] = full
        return Summary(full.param_consumed)

    def _shared_entry(self, function: FunctionNode) -> "dict | None":
        """The state a function's full run starts from, where its summary's run starts from the same
        (no parameter is a key by its name alone); else None."""
        if id(function) not in self._shared_entries:
            shared = None
            if self.may_hold_keys(function):
                scope = self._scope_of(function)
                summary_entry = KeyDomain(self, function, scope, summary=True).entry(function)
                if summary_entry and summary_entry == KeyDomain(self, function, scope, summary=False).entry(function):
                    shared = summary_entry
            self._shared_entries[id(function)] = shared
        return self._shared_entries[id(function)]

    def _scope_of(self, function: FunctionNode | None) -> Scope:
        return self.traced.scopes.get(id(function), self.ctx.module_scope) if function else self.ctx.module_scope

    def _keep(self, domain: KeyDomain) -> None:
        for reuse in domain.found:
            if id(reuse.node) not in self._seen:
                self._seen.add(id(reuse.node))
                self.reuses.append(reuse)

    def _summarised(self, function: FunctionNode) -> bool:
        """A function of the file that makes a call and has a parameter (else it consumes none)."""
        return id(function) in self._function_ids and id(function) in self.lines.calling \
            and parameter_count(function) > 0

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
                spelled = cst.Call(func=dotted_expression(use.consumer))
                consumed[param] = Consumption(spelled, -1, use.certain, direct=True, draw=use.consumer,
                                              where=use.where, returned=use.returned)
            found = self._external_summaries[id(function)] = Summary(consumed)
        return found

    def may_hold_keys(self, function: FunctionNode) -> bool:
        """Whether a function can hold a key of its own to report on: a key-like name, a key
        annotation, or a call that makes or splits a key (else its interpretation finds nothing)."""
        if self.lines.may_hold_keys(function, self.key_name):
            return True
        if self.draws_from_outside and (id(function) in self._outside_draws()
                                        or not self.lines.identifiers.get(id(function), set()).isdisjoint(
                                            self._outside_drawer_names())):
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
            text = cst.Module([]).code_for_node(annotation) if may_name_key_or_array(annotation) else ""
            self._annotations[id(param)] = text
        return text

    def _flow(self, function: FunctionNode | None, summary: bool) -> "KeyDomain":
        """Runs the key domain over a function (or the module's top level, for None)."""
        domain = KeyDomain(self, function, self._scope_of(function), summary)
        if function is None:
            FlowInterpreter(domain).run(self.ctx.module)
        else:
            entry = domain.entry(function)
            if entry is not None:
                FlowInterpreter(domain).run(function, entry)
        return domain

    @property
    def outputs(self) -> ConsumptionOutputs:
        """Whether what a consumption made is read (asked only of a reuse about to be reported)."""
        if self._outputs is None:
            self._outputs = ConsumptionOutputs(self)
        return self._outputs

    def dead(self, consumption: Consumption, until: Consumption | None = None) -> bool:
        """Whether nothing reads what the consumption made (before `until`, a later use of the key),
        so that it repeats no number anyone sees (`outputs.ConsumptionOutputs.dead`); not asked
        under `strict-key-reuse`."""
        if self.strict or consumption.within is None:
            return False
        within = consumption.within
        scope = self.ctx.module_scope if within is self.ctx.module else self.traced.scopes.get(id(within))
        return self.outputs.dead(consumption, scope, until)

    def returned_positions(self, function: FunctionNode, param: str) -> "frozenset[tuple[int, ...]] | None":
        """Where the function's return value carries what it makes from the key given to `param`."""
        return self.outputs.returned_positions(function, param)

    # -- shared questions ---------------------------------------------------------------------
    def callee(self, func: cst.BaseExpression, scope: Scope, depth: int = 0,
               call: cst.Call | None = None) -> Callee | None:
        """The module function a call of `func` runs: the shared resolver (`TracedFunctions.callee`:
        a `def`, a lambda, `functools.partial` of one, a method through its class, an instance or
        `self`), also through the wrapper of a transform that hands the call's arguments on
        (`jax.jit(f)(...)`, or a name bound once to `jax.pmap(partial(f, a), …)`)."""
        return self.traced.callee_through_wrappers(func, scope, call, depth)

    @property
    def draws_from_outside(self) -> bool:
        """Whether a function of the file draws from a key it takes from the code around it, or may
        draw from a parameter's default key (made once, where the function is defined)."""
        return bool(self._outside_draws()) or bool(self._default_keyed())

    def _default_keyed(self) -> frozenset[int]:
        """The functions with a parameter whose default is a new key (`key=jax.random.key(0)`)."""
        if self._with_default_keys is None:
            found = set()
            for function in self.functions:
                if type(function) is not cst.FunctionDef:
                    continue
                own = self.traced.scopes.get(id(function))
                params = function.params
                if own is not None and own.parent is not None and any(
                        type(param.default) is cst.Call
                        and self.ctx.names.qualified_name(param.default.func, own.parent) in KEY_MAKERS
                        for param in (*params.posonly_params, *params.params, *params.kwonly_params)):
                    found.add(id(function))
            self._with_default_keys = frozenset(found)
        return self._with_default_keys

    def outside_draws(self, function: FunctionNode | None) -> list[tuple[str, Scope, Consumption]]:
        """The `jax.random` draws a function makes from a key of the code around it, which every
        call draws from again: a global bound once to a key (`KEY = jax.random.key(0)`), or a name
        of an enclosing function bound once to one or a parameter taken for a key. Each with the
        name, the scope that binds it and the draw. A name the function declares `global` or
        `nonlocal` (and may replace) is left out."""
        return self._outside_draws().get(id(function), []) if function is not None else []

    def _outside_draws(self) -> dict[int, list[tuple[str, Scope, Consumption]]]:
        if self._outside is not None:
            return self._outside
        found: dict[int, list[tuple[str, Scope, Consumption]]] = {}
        resolve = self.ctx.names.qualified_name
        for call, scope, _ in SemanticModel.of(self.ctx).sites_of(cst.Call):
            if not call.args or type(call.args[0].value) not in (cst.Name, cst.Attribute) \
                    or call.args[0].keyword is not None:
                continue
            draw = resolve(call.func, scope)
            if draw is None or not draw.startswith("jax.random.") or draw in NON_CONSUMING_RANDOM:
                continue
            inner = scope
            while inner is not None and inner.kind == "comprehension":
                inner = inner.parent
            if inner is None or inner.kind != "function" or type(inner.node) is not cst.FunctionDef:
                continue
            if type(call.args[0].value) is cst.Attribute:
                attribute = self._kept_on_the_object(call.args[0].value, inner)
                if attribute is not None:
                    consumption = Consumption(call, self.order(call), id(call) in self._every_call_runs(inner.node),
                                              direct=True, draw=draw, within=inner.node, outside=True)
                    found.setdefault(id(inner.node), []).append((f"self.{attribute}", None, consumption))
                continue
            name = call.args[0].value.value
            if name in inner.globals or name in inner.nonlocals:
                continue
            held = scope.lookup(name)
            if held is None or held[0] is inner or held[0].kind == "comprehension" \
                    or not self._bound_to_a_key(name, *held):
                continue
            consumption = Consumption(call, self.order(call), id(call) in self._every_call_runs(inner.node),
                                      direct=True, draw=draw, within=inner.node, outside=True)
            found.setdefault(id(inner.node), []).append((name, held[0], consumption))
        self._outside = found
        return found

    def object_key(self, expr: cst.Attribute, scope: Scope) -> bool:
        """`agent.key` where `agent` holds an instance of a class of the module whose methods only ever
        make `self.key` a new key (`jax.random.key(seed)`, a split) and which has no attribute `key`
        of its own (a property could hand out a fresh key on every read). A call that may replace it
        is the domain's to see (`keeps_object_key`)."""
        if type(expr.value) is not cst.Name:
            return False
        cls = self.traced.instance_class(expr.value, scope)
        attribute = expr.attr.value
        if cls is None or not self.key_name.match(attribute):
            return False
        own = cls.scope.lookup(attribute)
        values = cls.instance_values.get(attribute) or [None]
        if own is not None and own[0] is cls.scope:
            return False
        module = self.ctx.module_scope

        def new_key(value: cst.BaseExpression | None) -> bool:
            if type(value) is cst.Subscript:  # `jax.random.split(self.key)[0]`
                value = value.value
            made = self.ctx.names.qualified_name(value.func, module) if type(value) is cst.Call else None
            return made in KEY_MAKERS or made in KEY_DERIVERS

        return all(new_key(value) for value in values)

    def keeps_object_key(self, call: cst.Call, attribute: str, scope: Scope) -> bool:
        """Whether calling a method of an object (`agent.act(x)`) leaves its key `attribute` as it was:
        its class replaces it only in `__init__`, or the method called is one of the class's that
        neither stores it nor calls another method."""
        receiver = call.func.value if type(call.func) is cst.Attribute else None
        cls = self.traced.instance_class(receiver, scope) if type(receiver) is cst.Name else None
        if cls is None:
            return False
        if attribute not in cls.replaced_after_init:
            return True
        reached = self.callee(call.func, scope, call=call)
        if reached is None or type(reached.function) is not cst.FunctionDef \
                or self.traced.method_class.get(id(reached.function)) is not cls:
            return False
        method = self.traced.scopes.get(id(reached.function))
        return method is not None and self._kept_on_the_object(
            cst.Attribute(cst.Name("self"), cst.Name(attribute)), method) is not None \
            and not self._calls_own_methods(reached.function)

    @staticmethod
    def _calls_own_methods(function: cst.FunctionDef) -> bool:
        calls = [False]

        def enter(node: cst.CSTNode, _field: str) -> bool:
            if type(node) is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name \
                    and node.func.value.value == "self":
                calls[0] = True
            return not calls[0]

        walk(function.body, enter, None)
        return calls[0]

    def used_by_every_binding(self, node: cst.Call, scope: Scope) -> dict[str, bool]:
        """`jax.vmap(forward)(x, keys)` where every assignment of `forward` binds a function of the
        module (`forward = iters_fwd` or `vanilla_fwd`): the names of the call whose keys each of them
        uses, whichever runs, with whether every one surely does. Empty where that is not known."""
        inner = node.func
        if not inner.args or inner.args[0].keyword is not None or type(inner.args[0].value) is not cst.Name:
            return {}
        found = scope.lookup(inner.args[0].value.value)
        if found is None or len(found[1].statements) < 2:
            return {}  # one binding: resolved through the wrapper already, where it can be
        used: dict[str, bool] | None = None
        for statement in found[1].statements:
            reached = self.callee(statement.value, found[0]) if type(statement) is cst.Assign else None
            if reached is None:
                return {}
            summary = self.read_summary(reached.function)
            mine = {}
            for param, passed in reached.bind(node.args).items():
                consumed = summary.consumed.get(param)
                if consumed is not None and passed.how is Passing.ARGUMENT and type(passed.values[0]) is cst.Name:
                    mine[passed.values[0].value] = consumed.certain
            used = mine if used is None else {n: used[n] and mine[n] for n in used.keys() & mine.keys()}
        return used or {}

    def _kept_on_the_object(self, key: cst.Attribute, method: Scope) -> str | None:
        """`X` of `jax.random.normal(self.X, ...)` in a method that never replaces `self.X`, `X` named
        like a key: every call of the method draws from the object's same key."""
        function = method.node
        params = function.params.params
        if type(key.value) is not cst.Name or key.value.value != "self" or not params \
                or params[0].name.value != "self" or method.parent is None or method.parent.kind != "class":
            return None
        attribute = key.attr.value
        if not self.key_name.match(attribute):
            return None
        stored = [False]

        def enter(node: cst.CSTNode, _field: str) -> bool:
            targets = ()
            if type(node) is cst.Assign:
                targets = [t.target for t in node.targets]
            elif type(node) in (cst.AugAssign, cst.AnnAssign):
                targets = [node.target]
            for target in targets:
                for part in target_parts(target):
                    if type(part) is cst.Attribute and part.attr.value == attribute \
                            and type(part.value) is cst.Name and part.value.value == "self":
                        stored[0] = True
            return not stored[0]

        walk(function.body, enter, None)
        return None if stored[0] else attribute

    def _every_call_runs(self, function: cst.FunctionDef) -> set[int]:
        """The calls of a function that run whenever it runs to its end: in the statements of its
        body's top level, outside a conditional expression, a short-circuit, a lambda or a
        comprehension (a draw under `if random_color:` may never be made)."""
        found = self._unconditional.get(id(function))
        if found is not None:
            return found
        found = self._unconditional[id(function)] = set()

        def enter(node: cst.CSTNode, _field: str) -> bool:
            if type(node) in _CONDITIONAL:
                return False
            if type(node) is cst.Call:
                found.add(id(node))
            return True

        for statement in function.body.body if type(function.body) is cst.IndentedBlock else ():
            if type(statement) is cst.SimpleStatementLine:
                walk(statement, enter, None)
        return found

    def _outside_drawer_names(self) -> frozenset[str]:
        """The names that call a function drawing from a key of the code around it: its own, and a
        module's name bound to a transform of it (`step = jax.jit(_step)`)."""
        if self._drawer_names is None:
            names = {function.name.value for function in self.functions
                     if (id(function) in self._outside_draws() or id(function) in self._default_keyed())
                     and type(function) is cst.FunctionDef}
            for binding in SemanticModel.of(self.ctx).bindings:
                small, value = binding.statement, binding.value
                if type(binding.top_level) is cst.SimpleStatementLine and type(small) is cst.Assign \
                        and len(small.targets) == 1 and type(value) is cst.Call and value.args \
                        and type(value.args[0].value) is cst.Name and value.args[0].value.value in names:
                    names.add(binding.name)
            self._drawer_names = frozenset(names)
        return self._drawer_names

    def _bound_to_a_key(self, name: str, owner: Scope, binding) -> bool:
        """A name its scope binds once, to a new key (`jax.random.key(0)`, a `split`, `fold_in`), or a
        parameter taken for a key (named or annotated as one)."""
        if len(binding.nodes) != 1:
            return False
        node, statement = binding.nodes[0], binding.statements[0]
        if type(node) is cst.Param:
            return bool(self.key_name.match(name)) or (node.annotation is not None and self.key_annotated(node))
        if type(statement) is not cst.Assign or type(statement.value) is not cst.Call:
            return False
        made = self.ctx.names.qualified_name(statement.value.func, owner)
        return made in KEY_MAKERS or made in KEY_DERIVERS

    def fixed_truth(self, test: cst.Comparison, scope: Scope) -> bool | None:
        """The outcome of `name == "literal"` (or `!=`, a number) where every binding of `name` that
        reaches the test assigns one same literal: fixed whatever the path (a loop included)."""
        if len(test.comparisons) != 1 or type(test.comparisons[0].operator) not in (cst.Equal, cst.NotEqual):
            return None
        left, right = test.left, test.comparisons[0].comparator
        if type(left) is not cst.Name:
            left, right = right, left
        if type(left) is not cst.Name or type(right) not in (cst.SimpleString, cst.Integer):
            return None
        found = NameOrigins.of(self.ctx).reaching(left, scope)
        if found is None or not found[1]:
            return None
        code = cst.Module([]).code_for_node
        values = {code(origin.value) if origin.kind == "value" and type(origin.value) in (cst.SimpleString, cst.Integer)
                  else None for origin in found[1]}
        if len(values) != 1 or None in values:
            return None
        (value,) = values
        equal = value == code(right)
        return equal if type(test.comparisons[0].operator) is cst.Equal else not equal

    def drawing_initializer(self, func: cst.BaseExpression, scope: Scope) -> str | None:
        """The factory of `jax.nn.initializers` whose initializer `func` is, where it draws from its
        key: `glorot_normal()(key, shape)`, or a name bound once to `glorot_normal()`."""
        made, owner = (func, scope) if type(func) is cst.Call else (None, None)
        if type(func) is cst.Name:
            found = scope.lookup(func.value)
            if found is not None and len(found[1].nodes) == 1:
                made, owner = self.traced.assigned_calls.get(id(found[1].nodes[0])), found[0]
        if made is None:
            return None
        factory = self.ctx.names.qualified_name(made.func, owner)
        return factory if factory in DRAWING_INITIALIZERS else None

    def discarded(self, node: cst.Call, statement: cst.BaseSmallStatement) -> bool:
        """Whether `statement` throws away what the call `node` returns: an expression statement of
        the call (waited for or not) whose value a notebook does not show."""
        return type(statement) is cst.Expr and discarded_call(statement.value) is node \
            and not self.ctx.displayed(statement)

    def compiled(self, func: cst.BaseExpression, reached: Callee | None, scope: Scope) -> bool:
        """Whether calling `func` runs a function compiled by `jax.jit` (or another of its family):
        `jax.jit(f)(...)`, a name bound once to `jax.jit(...)` (whatever it compiles) or to what a
        factory of jitted functions returns (of this module or another of the project), or
        `reached`, the function of the module it calls, decorated with it."""
        resolve = self.ctx.names.qualified_name
        if isinstance(func, cst.Name):
            found = scope.lookup(func.value)
            if found is not None and len(found[1].nodes) == 1:
                value = self.traced.assigned_calls.get(id(found[1].nodes[0]))
                if value is not None and (resolve(value.func, found[0]) in JIT_FAMILY
                                          or Dispatch.of(self.ctx).jitted(value, found[0])):
                    return True  # `jax.jit(...)`, or a factory's jitted function
        elif isinstance(func, cst.Call) and resolve(func.func, scope) in JIT_FAMILY:
            return True
        if reached is None:
            return False
        function = reached.function
        outer = self.traced.scopes.get(id(function))
        outer = outer.parent if outer is not None and outer.parent is not None else self.ctx.module_scope
        for decorator in getattr(function, "decorators", ()):
            use = self.traced.transform_use(decorator.decorator, outer)
            if use is not None and use.transform in JIT_FAMILY:
                return True
        return False

    def warm_up(self, node: cst.Call, statement: cst.CSTNode | None, scope: Scope) -> bool:
        """A compiled function called to compile it: its result thrown away (a notebook's last
        expression is shown, not thrown away) and either waited for (`step(key, x).block_until_ready()`)
        or followed by another call of the same function, the one that counts. A compiled function's
        only effect is its result, so the numbers its arguments hold are never seen through it."""
        if type(statement) is not cst.Expr or not self.discarded(node, statement) \
                or not self.compiled(node.func, self.callee(node.func, scope, call=node), scope):
            return False
        if statement.value is not node:
            return True  # waited for: `.block_until_ready()`
        code = cst.Module([]).code_for_node
        written, order = code(node.func), self.order(node)
        return any(code(call.func) == written
                   for call in SemanticModel.of(self.ctx).calls_in_scope(scope, after=order))

    # -- deliberate alignment -------------------------------------------------------------------
    def aligned(self, first: Consumption, again: Consumption, kind: str) -> bool:
        """Whether two draws from one key are the same index draw (a permutation, a shuffle, an
        unweighted choice, a random index used to index) made alike for different arrays, so that
        those arrays stay aligned: `jax.tree.map(lambda x: jax.random.permutation(key, x), batch)`,
        then `jax.random.permutation(key, targets)`. Two such draws in a row from the same array, or
        shaped differently, align nothing: they are still reported."""
        first_draw, again_draw = drawn_by(first), drawn_by(again)
        if first_draw.draw != again_draw.draw or not self._aligning(first_draw) or not self._aligning(again_draw):
            return False
        if kind == "leaves":
            return True  # the same call, for every leaf
        one, other = index_draw_arguments(first_draw), index_draw_arguments(again_draw)
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
                self._index_draws[id(draw.within)] = index_draws(draw.within)
            return id(draw.node) in self._index_draws[id(draw.within)]
        return index_draw_arguments(draw) is not None

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
        FlowInterpreter(domain).run(function, {carry: KeyState(param=carry_marker(None))})
        found.extend(domain.carry_reused)
        return found

    def in_other_cells(self, one: cst.CSTNode, other: cst.CSTNode) -> bool:
        """Whether two nodes are in different cells of a notebook. Cells are run one at a time, again
        and out of order, and teaching notebooks draw from one key in cell after cell on purpose (an
        exercise per cell, a draw repeated to show it is reproducible): the order the draws run in,
        and whether both run at all, is not in the text."""
        if not self._cells:
            return False
        self.lines.find_call_lines()  # asked one reuse at a time: every call's line found at once
        return self.ctx.cell_position(self.line(one)) != self.ctx.cell_position(self.line(other))

    def order(self, node: cst.CSTNode) -> int:
        return self.lines.order(node)

    def line(self, node: cst.CSTNode) -> int:
        """The 1-based line of a node."""
        return self.lines.line(node)

    def find_lines(self, nodes: Iterable[cst.CSTNode]) -> None:
        """Finds the lines of several nodes at once, for `line` to answer: each search generates the
        code of the module up to its last node, so one per message made big files quadratic."""
        self.lines.find_lines(nodes)


class FileIndex:
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
        self._sites = model.sites
        self._call_lines_found = False
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

    def find_call_lines(self) -> None:
        """Finds the line of every call of the file, in one generation of the module's code, for
        questions asked of one call at a time (each `line` alone generates the code up to its node)."""
        if not self._call_lines_found:
            self._call_lines_found = True
            self.find_lines(site.node for site in self._sites if type(site.node) is cst.Call)

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
                {word for word in every if key_like(word, key_name)} | KEY_SOURCE_NAMES | self.key_aliases)
        return not words.isdisjoint(holding)
