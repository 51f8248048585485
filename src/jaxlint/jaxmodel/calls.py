"""What the tracing analysis records about calls and transforms: the function a call reaches
(`Callee`, `CallSite`), one transform applied to one function (`Application`), and the classes of
the module with what their methods assign on `self` (`ClassInfo`)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable

import libcst as cst

from ..syntax.arguments import Passed, bind_arguments
from ..catalogue.frameworks import load_frameworks
from ..semantic.scopes import Scope

FunctionNode = cst.FunctionDef | cst.Lambda


@dataclass(frozen=True)
class Callee:
    """A function of the module that a call (or a function expression) reaches, and how."""

    function: FunctionNode
    #: a bound method: `self`/`cls` is passed implicitly
    receiver: bool = False
    #: arguments bound before the call's own by `functools.partial`
    prefix: tuple[cst.Arg, ...] = ()
    #: `Class(…)`: the call runs `__init__` on a new object
    constructs: bool = False
    #: leading positional arguments of the call that the function does not receive (haiku's
    #: `net.apply(params, rng, x)` calls the transformed `f(x)`)
    skip: int = 0
    #: keywords of the call the function does not receive: the library's own (Linen's
    #: `model.apply(variables, x, rngs=..., mutable=...)` calls `__call__(x)`)
    own_keywords: frozenset[str] = frozenset()

    def kept_by_library(self, args: Iterable[cst.Arg]) -> list[cst.Arg]:
        """The arguments of a call of this callee that the function does not receive: those the
        library takes for itself (`model.init(rngs, x)`'s `rngs`, `apply(..., rngs={...})`)."""
        args = list(args)
        leading = [a for a in args if a.keyword is None and not a.star][:self.skip]
        return leading + [a for a in args if a.keyword is not None and a.keyword.value in self.own_keywords]

    def bind(self, args: Iterable[cst.Arg], bound_positional: int = 0,
             bound_keywords: Iterable[str] = ()) -> dict[str, Passed]:
        args = [a for a in args if a.keyword is None or a.keyword.value not in self.own_keywords]
        if self.skip:
            leading = args[:self.skip]
            if len(leading) < self.skip or any(a.keyword is not None or a.star for a in leading):
                return {}  # which arguments reach the function is not known
            args = args[self.skip:]
        return bind_arguments(self.function, [*self.prefix, *args], bound_positional=bound_positional,
                              bound_keywords=bound_keywords, receiver=self.receiver)


@dataclass(frozen=True)
class CallSite:
    """A call that reaches a function, directly or through a transform's wrapper."""

    call: cst.Call
    callee: Callee
    #: what a `functools.partial` inside the wrapper bound (`jax.jit(partial(f, a))`)
    bound_positional: int = 0
    bound_keywords: frozenset[str] = frozenset()

    def bind(self) -> dict[str, Passed]:
        return self.callee.bind(self.call.args, self.bound_positional, self.bound_keywords)


@dataclass(eq=False)
class MethodGiven:
    """A method or a name bound to a partial given to a transform (`jax.jit(self.update)`), resolved
    after the walk."""

    expr: cst.BaseExpression
    scope: Scope
    use: Application
    #: (scope node id, name) of `fast = jax.jit(agent.act)`
    alias: tuple[int, str] | None = None
    #: `jax.jit(agent.act)(x)`
    called_by: cst.Call | None = None
    #: the call that applies the transform (`jax.jit(agent.act)`)
    applied_by: cst.Call | None = None


@dataclass(eq=False)
class ClassInfo:
    """A class defined in the module: its body's scope and what its methods assign on `self`."""

    node: cst.ClassDef
    scope: Scope
    #: attributes assigned on `self` in its methods: they shadow methods of the same name
    instance_attributes: set[str] = field(default_factory=set)
    #: attribute -> the expressions assigned to it on `self` (None: unpacked or augmented)
    instance_values: dict[str, list[cst.BaseExpression | None]] = field(default_factory=dict)
    #: attributes assigned on `self` by a method other than `__init__` (a call of it may replace them)
    replaced_after_init: set[str] = field(default_factory=set)
    #: attribute -> the methods other than `__init__` that assign it on `self`
    replaced_by: dict[str, list[cst.FunctionDef]] = field(default_factory=dict)


#: decorators that leave a method callable as written (Linen's `nn.compact` among them)
PLAIN_METHOD_DECORATORS = frozenset({"abc.abstractmethod", "typing.override", "typing_extensions.override"}) \
    | load_frameworks().linen_method_decorators


@dataclass
class Application:
    """One transform applied to one function, with the arguments that configure it."""

    transform: str
    mode: str
    keywords: dict[str, cst.BaseExpression]
    extra_positional: list[cst.BaseExpression]
    #: positional parameters bound by `functools.partial(f, a, b)` and keywords bound by it
    bound_positional: int = 0
    bound_keywords: frozenset[str] = frozenset()
    #: keywords the partial binds to a Python literal, with its truthiness
    bound_truths: tuple[tuple[str, bool], ...] = ()
    #: the partial also spreads a mapping (`partial(f, **options)`): any keyword parameter may be
    #: bound by it, so only what the wrapper's own calls pass is known to reach the function from them
    bound_mapping: bool = False
    #: a lax body or a lambda: JAX passes every parameter
    all_params: bool = False
    #: a library calls the function with only these positional arguments traced (counted after those
    #: a partial binds, `self` included): None for JAX's transforms, which the keywords above describe
    traced_positions: tuple[int, ...] | None = None
    #: calls of the wrapper this application makes (`fast = jax.jit(f)`, then `fast(x)`); None for a
    #: decorator, whose wrapper every call of the function's name reaches
    sites: list[CallSite] | None = None
    #: leading arguments of the wrapper's calls the function does not receive (`Callee.skip`)
    skip: int = 0
    #: keywords of the wrapper's calls the function does not receive (`Callee.own_keywords`)
    own_keywords: frozenset[str] = frozenset()

    def bound_by(self, positional: int, keywords: Iterable[str],
                 truths: Iterable[tuple[str, bool]] = (), mapping: bool = False) -> "Application":
        """This application to a function of which a partial (or a bound method) fixed more arguments;
        `mapping`: the partial spreads a mapping whose keys are not known (`**options`)."""
        return replace(self, bound_positional=self.bound_positional + positional,
                       bound_keywords=self.bound_keywords | frozenset(keywords),
                       bound_truths=(*self.bound_truths, *truths),
                       bound_mapping=self.bound_mapping or mapping,
                       sites=None if self.sites is None else [])
