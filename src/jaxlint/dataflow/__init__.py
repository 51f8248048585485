"""Domain-independent dataflow over libcst trees: one interpreter owns Python's control flow, a
domain object says what values are; summaries memoise what functions return (`Summaries`) or settle
what they do to a fixed point (`SettledSummaries`). `reaching` is a domain that knows no more than
Python: which bindings of a name reach each read of it.

Nothing here knows about JAX: the JAX domains (values, PRNG keys, pending work) live in `jaxmodel/`.
"""
from .interpreter import Domain, Env, FlowInterpreter, FlowResult
from .summaries import SettledSummaries, Summaries

__all__ = ["Domain", "Env", "FlowInterpreter", "FlowResult", "SettledSummaries", "Summaries"]
