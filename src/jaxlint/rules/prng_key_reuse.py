"""JAX101: the same PRNG key consumed twice (two draws, a draw and a split, use in every loop iteration,
once per leaf of a `jax.tree.map`, in every iteration of a lax loop whose carry returns it unchanged
or whose body takes it from the code around it)."""
from __future__ import annotations

import libcst as cst

from ..jaxmodel.keys.facts import KeyFlowFacts
from ..jaxmodel.keys.state import Consumption, Reuse
from ..rulebase.rule import Rule

#: How many calls deep a message follows a key into the functions that consume it.
MAX_CHAIN = 4


class PrngKeyReuse(Rule):
    code = "JAX101"

    def finish(self) -> None:
        facts = self.analysis.key_flow
        loops = self.analysis.loops
        facts.find_lines(_named_nodes(facts.reuses))
        for reuse in facts.reuses:
            name = reuse.name
            fresh = "subkey" if name != "subkey" else "next_subkey"
            split = f"`{name}, {fresh} = jax.random.split({name})`"
            default = _default_drawn(reuse.first) if reuse.kind in ("again", "loop") else None
            if default is not None:
                function, param = default
                repeat = self._repeat(facts, reuse)
                self.report(reuse.node, (
                    f"`{function}` draws from the default of its parameter `{param}`, a key made once when the "
                    f"function was defined, and this call passes no `{param}`, so every such call draws the same "
                    f"numbers: {repeat}; pass a fresh key each call (`key, subkey = jax.random.split(key)`, "
                    f"then `{param}=subkey`)"), related=_first_use(facts, reuse) if reuse.kind == "again" else ())
            elif reuse.kind in ("again", "loop") and _taken_from_outside(reuse.first) \
                    and not (self.walk.qualified_name(reuse.node.func) or "").startswith("jax.random."):
                function = self._code(reuse.node.func)
                repeat = self._repeat(facts, reuse)
                if "." in name:  # `agent.key`, drawn from by `agent.act(...)`
                    attribute = name.rpartition(".")[2]
                    self.report(reuse.node, (
                        f"`{function}` draws from `{name}`, the object's key, and never replaces it, so every "
                        f"call draws the same numbers: {repeat}; split it in the method "
                        f"(`self.{attribute}, key = jax.random.split(self.{attribute})`, then draw from `key`), "
                        f"or pass a key in"), related=_first_use(facts, reuse) if reuse.kind == "again" else ())
                    continue
                self.report(reuse.node, (
                    f"`{function}` draws from `{name}`, which it takes from the code around it, so every call "
                    f"draws the same numbers: {repeat}; pass the key in as an argument and split a fresh one "
                    f"per call ({split})"), related=_first_use(facts, reuse) if reuse.kind == "again" else ())
            elif reuse.kind == "carry":
                self.report(reuse.node, (
                    f"key `{name}` is consumed at {self._consumed_at(facts, reuse.first)} in the body of "
                    f"`{self._code(reuse.node.func)}` and returned unchanged in its carry: every iteration consumes "
                    f"the same key and draws the same numbers; split it in the body ({split}), draw from `{fresh}` "
                    f"and return the new `{name}`"),
                    headline=f"key `{name}` is consumed in every iteration and returned unchanged in the carry")
            elif reuse.kind == "lax":
                loop = f"`{self._code(reuse.loop.func)}` ({self._label(facts, reuse.loop)})"
                if name.startswith("next("):
                    why = (f"`{name}` runs once, while the body is traced, so every iteration of {loop} gets "
                           f"the same key and draws the same numbers")
                else:
                    why = (f"the body of {loop} is traced once and takes `{name}` from the code around it, so "
                           f"every iteration draws the same numbers")
                self.report(reuse.node, (
                    f"key `{name}` is consumed in every iteration of a lax loop: {why}; derive a key per "
                    f"iteration (`jax.random.fold_in(key, i)` with the loop index), or carry the key and "
                    f"split it in the body"))
            elif reuse.kind == "leaves":
                self.report(reuse.node, (
                    f"key `{name}` is consumed once per leaf: `{self._code(reuse.loop.func)}` "
                    f"({self._label(facts, reuse.loop)}) calls this function for every leaf with the same key, so "
                    f"every leaf draws the same numbers; split one key per leaf "
                    f"(`keys = jax.random.split({name}, len(leaves))`, "
                    f"`jax.tree_util.tree_unflatten(treedef, keys)`) and map over the keys as a second tree"))
            elif reuse.kind == "loop" and loops.rebinds(reuse.loop, name):
                # the body rebinds the key (`rng, _ = split(rng)`), so iterations do not repeat each
                # other: what is reused is the key of one iteration, consumed again by the next
                self.report(reuse.node, (
                    f"key `{name}` consumed at {self._consumed_at(facts, reuse.first)} is consumed again here "
                    f"in the next iteration of the loop ({self._label(facts, reuse.loop)}), before the body "
                    f"rebinds it: {_outcome(reuse.first, reuse.node, self)}; draw only from keys split "
                    f"off for one use ({split}, then draw from `{fresh}`)"), related=_first_use(facts, reuse),
                    headline=f"key `{name}` consumed at {self._label(facts, reuse.first.node)} is consumed again "
                             f"in the next iteration of the loop")
            elif reuse.kind == "loop":
                kind = "comprehension" if not isinstance(reuse.loop, (cst.For, cst.While)) else "loop"
                self.report(reuse.node, (
                    f"key `{name}` is consumed in every iteration of the {kind} ({self._label(facts, reuse.loop)}): "
                    f"every iteration draws the same numbers; split a fresh key each iteration: "
                    f"{split}, or `jax.random.fold_in({name}, i)`"))
            else:
                self.report(reuse.node, (
                    f"key `{name}` consumed at {self._consumed_at(facts, reuse.first)} is used again here: "
                    f"{_outcome(reuse.first, reuse.node, self)}, as JAX keys are not stateful; split it first: "
                    f"{split} and use `{fresh}`"), related=_first_use(facts, reuse),
                    headline=f"key `{name}` consumed at {self._label(facts, reuse.first.node)} is used again here")

    def _repeat(self, facts: KeyFlowFacts, reuse: Reuse) -> str:
        """How the call that draws from a key made outside it repeats: in a loop, or after another."""
        if reuse.kind == "loop":
            kind = "comprehension" if not isinstance(reuse.loop, (cst.For, cst.While)) else "loop"
            return f"the {kind} ({self._label(facts, reuse.loop)}) calls it in every iteration"
        return f"this call repeats the one at {self._label(facts, reuse.first.node)}"

    def _consumed_at(self, facts: KeyFlowFacts, first: Consumption) -> str:
        """`line 16`, or `line 16 by `step` → `sample` → `jax.random.normal` (line 8)` when the key was
        handed to a function that consumes it."""
        where = self._label(facts, first.node)
        if first.direct:
            return where
        chain = [first]
        while chain[-1].via is not None and len(chain) < MAX_CHAIN:
            chain.append(chain[-1].via)
        path = " → ".join(f"`{self._code(c.node.func)}`" for c in chain)
        last = chain[-1]
        if last.via is not None:
            path += " → …"
        if len(chain) > 1 and last.direct:
            return f"{where} by {path} ({last.where or self._label(facts, last.node)})"
        return f"{where} by {path}"

    def _label(self, facts: KeyFlowFacts, node: cst.CSTNode) -> str:
        return self.analysis.line_label(facts.line(node))

    def _code(self, node: cst.CSTNode) -> str:
        return self.analysis.module.code_for_node(node)


def _taken_from_outside(first: Consumption) -> bool:
    """A key drawn from by the function called, which takes it from the code around it (a global)."""
    drawn = first
    while drawn.via is not None:
        drawn = drawn.via
    return drawn is not first and drawn.outside


def _default_drawn(first: Consumption) -> tuple[str, str] | None:
    """The function and parameter whose default key the call draws from, when it passes none."""
    drawn = first
    while drawn is not None and drawn.default_of is None:
        drawn = drawn.via
    return drawn.default_of if drawn is not None else None


def _first_use(facts: KeyFlowFacts, reuse: Reuse) -> tuple[tuple[int, str], ...]:
    """The line of the key's first use, for front ends to show beside the finding (an editor's
    related location); a use in another module is named by the message alone."""
    if reuse.first.where is not None:
        return ()
    return ((facts.line(reuse.first.node), f"`{reuse.name}` is first consumed here"),)


def _named_nodes(reuses: list[Reuse]) -> list[cst.CSTNode]:
    """The nodes whose lines the messages name: first consumptions (down the chain of functions a
    message follows) and loops."""
    nodes = []
    for reuse in reuses:
        if reuse.loop is not None:
            nodes.append(reuse.loop)
        consumption, depth = reuse.first, 0
        while consumption is not None and depth < MAX_CHAIN:
            if consumption.where is None:  # a draw in another module names its own place
                nodes.append(consumption.node)
            consumption, depth = consumption.via, depth + 1
    return nodes


def _outcome(first: Consumption, again: cst.Call, rule: Rule) -> str:
    """What the second use of a key does, in words true for the two calls: the same draw made twice
    is identical; other draws, and a split and a draw, start from the same random bits."""
    drawn = first
    while drawn.via is not None:
        drawn = drawn.via
    earlier = drawn.draw if drawn.direct else None
    later = rule.walk.qualified_name(again.func)
    if earlier is None or later is None or not later.startswith("jax.random."):
        return "both calls get the same randomness"
    splits = [d == "jax.random.split" for d in (earlier, later)]
    # arguments compare as written only within one function: elsewhere the same text may differ
    same = drawn is first and earlier == later and _same_arguments(drawn.node, again, rule.analysis.module)
    if all(splits):
        return "the two splits give the same keys" if same else "the keys of the two splits are not independent"
    if any(splits):
        return "the keys split from it are not independent of the numbers drawn from it"
    if same:
        return "the two draws are identical"
    return "the two draws start from the same random bits, so they are not independent"


def _same_arguments(a: cst.Call, b: cst.Call, module: cst.Module) -> bool:
    """The same arguments after the key, as written."""
    code = module.code_for_node
    return [code(arg) for arg in a.args[1:]] == [code(arg) for arg in b.args[1:]]
