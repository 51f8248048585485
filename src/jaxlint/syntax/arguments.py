"""Which argument expressions a call hands to each parameter of a function: Python's binding rules,
on the syntax alone.

One binder for every question of the form "what does parameter `p` receive at this call": traced
arguments, parameters that keep their defaults, values packed into `*args`/`**kwargs`.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Sequence

import libcst as cst

FunctionNode = cst.FunctionDef | cst.Lambda


class Passing(Enum):
    #: exactly the one expression in `values`
    ARGUMENT = "argument"
    #: `*args` or `**kwargs`: a tuple or dict of `values` and of the elements of `spread`
    PACKED = "packed"
    #: one of `values` or an element of a `spread` argument (`f(*xs)`: the position is unknown)
    SPREAD = "spread"
    #: bound earlier by `functools.partial`, expression not given
    BOUND = "bound"
    #: `self`/`cls` of a bound method call
    RECEIVER = "receiver"


@dataclass(frozen=True)
class Passed:
    how: Passing
    values: tuple[cst.BaseExpression, ...] = ()
    #: `*xs` / `**kw` arguments whose elements this parameter may receive
    spread: tuple[cst.BaseExpression, ...] = ()

    @property
    def explicit(self) -> bool:
        """The call certainly gives this parameter a value of its own (not its default)."""
        return self.how in (Passing.ARGUMENT, Passing.PACKED)


def bind_arguments(function: FunctionNode, args: Sequence[cst.Arg], *, bound_positional: int = 0,
                   bound_keywords: Iterable[str] = (), receiver: bool = False) -> dict[str, Passed]:
    """What each parameter of `function` receives from `args`.

    `bound_positional`/`bound_keywords`: how many leading positional parameters, and which keywords, a
    `functools.partial` bound without the expressions being known (when they are known, put them
    first in `args`). `receiver`: a bound method, so the first parameter is `self`/`cls`.
    Parameters missing from the result keep their defaults. A parameter with a default that only a
    `*xs`/`**kw` argument might reach is left out too: the analysis cannot know it is passed.
    """
    params = function.params
    positional = [*params.posonly_params, *params.params]
    posonly = {p.name.value for p in params.posonly_params}
    keywordable = {p.name.value: p for p in (*params.params, *params.kwonly_params)}
    star = params.star_arg.name.value if type(params.star_arg) is cst.Param else None
    star_kw = params.star_kwarg.name.value if params.star_kwarg is not None else None

    result: dict[str, Passed] = {}
    index = 0
    if receiver and positional:
        result[positional[0].name.value] = Passed(Passing.RECEIVER)
        index = 1
    for _ in range(bound_positional):
        if index < len(positional):
            result[positional[index].name.value] = Passed(Passing.BOUND)
            index += 1
    for name in bound_keywords:
        if name in keywordable:
            result[name] = Passed(Passing.BOUND)

    packed: list[cst.BaseExpression] = []
    packed_spread: list[cst.BaseExpression] = []
    spreads: list[cst.BaseExpression] = []
    after_spread: list[cst.BaseExpression] = []
    for arg in args:
        if arg.keyword is not None or arg.star == "**":
            continue
        if arg.star == "*":
            spreads.append(arg.value)
        elif spreads:
            after_spread.append(arg.value)
        elif index < len(positional):
            result[positional[index].name.value] = Passed(Passing.ARGUMENT, (arg.value,))
            index += 1
        else:
            packed.append(arg.value)
    if spreads:
        for param in positional[index:]:
            if param.default is None:
                result[param.name.value] = Passed(Passing.SPREAD, tuple(after_spread), tuple(spreads))
        packed.extend(after_spread)
        packed_spread.extend(spreads)
    if star is not None and (packed or packed_spread):
        result[star] = Passed(Passing.PACKED, tuple(packed), tuple(packed_spread))

    packed_keywords: list[cst.BaseExpression] = []
    keyword_spreads: list[cst.BaseExpression] = []
    for arg in args:
        if arg.keyword is not None:
            name = arg.keyword.value
            if name in keywordable and name not in posonly:
                result[name] = Passed(Passing.ARGUMENT, (arg.value,))
            else:
                packed_keywords.append(arg.value)
        elif arg.star == "**":
            keyword_spreads.append(arg.value)
    if keyword_spreads:
        for name, param in keywordable.items():
            found = result.get(name)
            if param.default is None and (found is None or found.how is Passing.SPREAD):
                earlier = found.spread if found is not None else ()
                values = found.values if found is not None else ()
                result[name] = Passed(Passing.SPREAD, values, (*earlier, *keyword_spreads))
    if star_kw is not None and (packed_keywords or keyword_spreads):
        result[star_kw] = Passed(Passing.PACKED, tuple(packed_keywords), tuple(keyword_spreads))
    return result


def positional_names(function: FunctionNode) -> list[str]:
    p = function.params
    return [x.name.value for x in (*p.posonly_params, *p.params)]
