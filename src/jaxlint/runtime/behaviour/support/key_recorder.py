"""Recording what `jax.random` consumes and makes: each draw's key bits, line and vmap batching, and
each key constructed."""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from ...subject import Subject
from .frames import caller_lines, source_paths
from .outcomes import short
from .values import key_bits


#: `jax.random` functions that consume their key (as JAX's key-reuse checker counts them).
CONSUMERS = ("ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy", "chisquare", "choice",
             "dirichlet", "double_sided_maxwell", "exponential", "f", "gamma", "generalized_normal", "geometric",
             "gumbel", "laplace", "loggamma", "logistic", "lognormal", "maxwell", "multinomial",
             "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson", "rademacher",
             "randint", "rayleigh", "shuffle", "split", "t", "triangular", "truncated_normal", "uniform", "wald",
             "weibull_min")
CONSTRUCTORS = ("key", "PRNGKey")


@dataclass
class Draw:
    sampler: str
    line: int | None
    bits: bytes | None  # None: the key was a tracer
    batched: bool | None  # inside a vmap: whether the key carries the batch axis; None outside vmap
    axis_size: int | None
    shape_args: str  # the non-key arguments, to tell like draws from unlike
    stack: tuple[int, ...] = ()  # every line of the subject's file on the stack, innermost first
    output: Any = None

    def at(self, lines: range) -> int | None:
        """The line on the stack inside `lines` (the draw was made there or in a call made there)."""
        return next((line for line in self.stack if line in lines), None)


@dataclass
class Made:
    line: int | None
    bits: bytes | None
    stack: tuple[int, ...] = ()

    def at(self, lines: range) -> int | None:
        return next((line for line in self.stack if line in lines), None)


@dataclass
class KeyRecorder:
    """Wraps `jax.random`'s samplers and key constructors while active, recording each consumption
    (key bits, line of the subject's file, whether it is batched under vmap) and each key made."""

    subject: Subject
    draws: list[Draw] = field(default_factory=list)
    made: list[Made] = field(default_factory=list)
    _patches: list[tuple[Any, str, Any]] = field(default_factory=list)
    _busy: int = 0

    def _vmap_state(self, key: Any) -> tuple[bool | None, int | None]:
        try:
            from jax._src import core
            from jax._src.interpreters import batching

            trace = core.trace_ctx.trace
            if not isinstance(trace, batching.BatchTrace):
                return None, None
            size = getattr(getattr(trace, "axis_data", None), "size", None)
            batched = isinstance(key, batching.BatchTracer) and getattr(key, "_trace", trace) is trace
            return batched, size
        except Exception:  # noqa: BLE001 - private layout changed: say nothing about vmap
            return None, None

    def _wrap_consumer(self, name: str, original: Callable) -> Callable:
        paths = source_paths(self.subject)

        @functools.wraps(original)
        def consumer(*args: Any, **kwargs: Any) -> Any:
            if self._busy:
                return original(*args, **kwargs)
            key = args[0] if args else kwargs.get("key")
            stack = caller_lines(paths, sys._getframe(1))
            batched, size = self._vmap_state(key)
            draw = Draw(name, stack[0] if stack else None, key_bits(key), batched, size,
                        _describe_args(args[1:], kwargs), stack)
            self.draws.append(draw)
            self._busy += 1
            try:
                out = original(*args, **kwargs)
            finally:
                self._busy -= 1
            draw.output = out
            return out

        return consumer

    def _wrap_constructor(self, name: str, original: Callable) -> Callable:
        paths = source_paths(self.subject)

        @functools.wraps(original)
        def constructor(*args: Any, **kwargs: Any) -> Any:
            out = original(*args, **kwargs)
            if not self._busy:
                stack = caller_lines(paths, sys._getframe(1))
                self.made.append(Made(stack[0] if stack else None, key_bits(out), stack))
            return out

        return constructor

    def __enter__(self) -> "KeyRecorder":
        import jax.random as jr

        replacements: dict[int, Any] = {}
        for name in CONSUMERS + CONSTRUCTORS:
            original = getattr(jr, name, None)
            if original is None:
                continue
            wrapper = (self._wrap_consumer if name in CONSUMERS else self._wrap_constructor)(name, original)
            replacements[id(original)] = wrapper
            self._patch(jr, name, wrapper)
        # `from jax.random import normal` binds the function into the module's namespace.
        namespaces = [getattr(self.subject.module, "__dict__", None),
                      getattr(self.subject.python_function, "__globals__", None)]
        for namespace in {id(ns): ns for ns in namespaces if isinstance(ns, dict)}.values():
            for name, value in list(namespace.items()):
                if id(value) in replacements and callable(value):
                    self._patch_dict(namespace, name, replacements[id(value)])
        return self

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._patches.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def _patch_dict(self, namespace: dict, name: str, value: Any) -> None:
        self._patches.append((namespace, name, namespace[name]))
        namespace[name] = value

    def __exit__(self, *exc: Any) -> None:
        for owner, name, value in reversed(self._patches):
            if isinstance(owner, dict):
                owner[name] = value
            else:
                setattr(owner, name, value)
        self._patches.clear()


def _describe_args(args: tuple, kwargs: dict) -> str:
    parts = []
    for value in (*args, *kwargs.values()):
        shape = getattr(value, "shape", None)
        parts.append(f"shape{tuple(shape)}" if shape is not None and not isinstance(value, tuple) else short(value))
    return ", ".join(parts)
