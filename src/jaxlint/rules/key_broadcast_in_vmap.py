"""JAX104: a key broadcast to every element of a `vmap` (in_axes=None or closed over) and drawn from."""
from __future__ import annotations

from ..rulebase.rule import Rule


class KeyBroadcastInVmap(Rule):
    code = "JAX104"

    def finish(self) -> None:
        for node, name, how in self.analysis.vmap_broadcast_keys():
            reaches = ("is passed unmapped (`in_axes=None`) to a `vmap`ped function" if how == "in_axes=None"
                       else "is closed over (not mapped) by a `vmap`ped function")
            self.report(node, (
                f"key `{name}` {reaches} and drawn from here: every batch element "
                f"gets the same key and draws the same numbers; split it into a batch "
                f"(`jax.random.split({name}, n)`) and map it with `in_axes=0`"))
