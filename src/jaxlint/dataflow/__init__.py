"""Domain-independent dataflow over libcst trees: one interpreter owns Python's control flow, a
domain object says what values are; summaries memoise what functions return.

Nothing here knows about JAX: the JAX value domain lives in `jaxlint.jaxmodel.values`.
"""
from .interpreter import Domain, Env, FlowInterpreter, FlowResult
from .summaries import SettledSummaries, Summaries

__all__ = ["Domain", "Env", "FlowInterpreter", "FlowResult", "SettledSummaries", "Summaries"]
