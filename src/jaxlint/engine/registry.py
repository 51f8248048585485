"""The rules, found once per process: every module under `jaxlint.rules` and its catalogue entry."""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from .. import rules as rules_package
from ..catalogue.rule_docs import CatalogueError, load_catalogue
from ..rulebase.rule import Rule


@lru_cache(maxsize=None)
def all_rules() -> dict[str, type[Rule]]:
    """Rule classes by code, each with its catalogue entry attached as `doc`."""
    docs = load_catalogue()
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(rules_package.__path__):
        module = importlib.import_module(f"{rules_package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__:
                code = value.code
                if code in found:
                    raise CatalogueError(f"rule code {code} is defined twice")
                if code not in docs:
                    raise CatalogueError(f"rule {code} ({module.__name__}) has no catalogue entry")
                value.doc = docs[code]
                found[code] = value
    return dict(sorted(found.items()))


def known_codes() -> list[str]:
    """Every code a user may name: the rules' and JAX000, which the engine reports itself."""
    return sorted({*all_rules(), *load_catalogue()})
