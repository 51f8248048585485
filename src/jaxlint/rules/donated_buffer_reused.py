"""JAX506: an array donated to a jitted call (`donate_argnums`/`donate_argnames`) used after the call."""
from __future__ import annotations

import libcst as cst

from ..rulebase.rule import Rule


class DonatedBufferReused(Rule):
    code = "JAX506"

    def finish(self) -> None:
        donated = self.analysis.donated_buffers
        code = self.analysis.module.code_for_node
        for found in donated.reads:
            name, donation = found.read.value, found.donation
            func = donation.call.func
            # `jax.jit(f, donate_argnums=0)(x)` is named by its transform
            callee = code(func) if type(func) is not cst.Call else f"{code(func.func)}(...)"
            if found.when == "same call":
                self.report(found.read, (
                    f"`{name}` is passed to `{callee}` at a donated position ({donation.configured}) and again "
                    f"here: JAX cannot donate a buffer that the same call also reads, and raises `Attempt to use "
                    f"a buffer that was previously donated in the same call`; pass a copy (`jnp.copy({name})`) "
                    f"or stop donating it"))
                continue
            line = donated.line(donation.call)
            if found.when == "loop":
                message = (
                    f"`{name}` is donated to `{callee}` ({donation.configured}) on every iteration of this loop "
                    f"and never rebound: from the second iteration on it is a deleted array, and using it raises "
                    f"`Array has been deleted` (or `Buffer has been deleted or donated`); rebind it to the call's result "
                    f"(`{name} = {callee}(...)`) or stop donating it")
            else:
                message = (
                    f"`{name}` was donated to `{callee}` on {self.analysis.line_label(line)} "
                    f"({donation.configured}): the call handed its buffers to the outputs and deleted it, so "
                    f"using it here raises `Array has been deleted` (or `Buffer has been deleted or donated`; only "
                    f"its `.shape`, `.dtype` and the like stay readable); use the call's result instead, or stop donating `{name}`")
            self.report(found.read, message, related=((line, f"`{name}` is donated here"),))
