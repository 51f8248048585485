"""JAX101: the same PRNG key consumed twice (two draws, a draw and a split, use in every loop iteration)."""
from __future__ import annotations

import libcst as cst

from ..facts.keys import KeyFlowFacts
from ..rule import Rule


class PrngKeyReuse(Rule):
    code = "JAX101"

    def finish(self) -> None:
        facts = KeyFlowFacts.of(self.ctx)
        for reuse in facts.reuses:
            name = reuse.name
            fresh = "subkey" if name != "subkey" else "next_subkey"
            first = self.ctx.line_label(facts.line(reuse.first.node))
            if reuse.loop is not None:
                kind = "comprehension" if not isinstance(reuse.loop, (cst.For, cst.While)) else "loop"
                self.report(reuse.node, (
                    f"key `{name}` is consumed in every iteration of the {kind} ({self.ctx.line_label(facts.line(reuse.loop))}): "
                    f"every iteration draws the same numbers; split a fresh key each iteration: "
                    f"`{name}, {fresh} = jax.random.split({name})`, or `jax.random.fold_in({name}, i)`"))
            else:
                self.report(reuse.node, (
                    f"key `{name}` consumed at {first} is used again here: the two draws are identical "
                    f"(JAX keys are not stateful); split it first: `{name}, {fresh} = jax.random.split({name})` "
                    f"and use `{fresh}`"))
