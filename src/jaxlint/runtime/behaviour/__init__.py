"""Behaviour confirmers for runtime mode: each runs the subject and watches for the behaviour its
rule predicts (a trace-time-only effect, a stale global, a leaked tracer, a recompilation, a repeated
draw), where the error families wait for an exception instead.

`CONFIRMERS` maps a behaviour name, as the `behaviour` of a rule's catalogue entry names it, to
its confirmer. Each runs inside the worker process, never writes
files, keeps its calls few and small, and turns anything unexpected into an `inconclusive` outcome.
"""
from __future__ import annotations

from ..subject import Confirmer
from .compiles import confirm_fresh_closure, confirm_jit_in_loop
from .keys import confirm_key_broadcast, confirm_key_recreated, confirm_key_reuse
from .mutation import confirm_mutation
from .stale_global import confirm_stale_global
from .stateful_rng import confirm_stateful_rng
from .trace_time import confirm_impure, confirm_print

CONFIRMERS: dict[str, Confirmer] = {
    "key-reuse": confirm_key_reuse,  # the fallback after JAX's own key-reuse checker
    "stateful-rng": confirm_stateful_rng,
    "key-recreated": confirm_key_recreated,
    "key-broadcast": confirm_key_broadcast,
    "trace-time-print": confirm_print,
    "stale-global": confirm_stale_global,
    "state-mutation": confirm_mutation,
    "trace-time-call": confirm_impure,
    "compiles-in-loop": confirm_jit_in_loop,
    "fresh-closure": confirm_fresh_closure,
}

__all__ = ["CONFIRMERS"]
