"""What `jaxlint rule` and `jaxlint rules` print: the rules a code, a prefix or a name picks, as
text or as JSON."""
from __future__ import annotations

import json
from typing import Iterable

from ..catalogue.rule_docs import RuleDoc, render_text


class NoSuchRule(ValueError):
    """The code, prefix or name picks no rule."""


def pick_rules(docs: dict[str, RuleDoc], wanted: Iterable[str]) -> list[RuleDoc]:
    """The rules each of `wanted` names, in catalogue order, each once: a full code (`JAX101`), a
    prefix (`JAX1`, `JAX`) or a rule's name (`prng-key-reuse`); case does not matter."""
    chosen: dict[str, RuleDoc] = {}
    by_name = {doc.name: doc for doc in docs.values()}
    for item in wanted:
        text = item.strip()
        code = text.upper()
        if code in docs:
            picked = [docs[code]]
        elif text.lower() in by_name:
            picked = [by_name[text.lower()]]
        else:
            picked = [doc for doc in docs.values() if doc.code.startswith(code)] if code.startswith("JAX") else []
        if not picked:
            raise NoSuchRule(f"unknown rule {text!r} (no code or name is it or starts with it); "
                             "`jaxlint rules` lists them")
        chosen.update((doc.code, doc) for doc in picked)
    return sorted(chosen.values(), key=lambda doc: doc.code)


def rule_json(doc: RuleDoc, fixable: bool) -> dict:
    return {"code": doc.code, "name": doc.name, "severity": doc.severity.value, "fixable": fixable,
            "summary": doc.summary, "why": doc.why, "bad": doc.bad, "good": doc.good, "fix": doc.fix,
            "references": list(doc.references), "page": doc.page}


def render_rules(docs: list[RuleDoc], fixable: dict[str, bool], fmt: str) -> str:
    """The documentation of `docs`: their pages one after another (`text`), or a JSON array."""
    if fmt == "json":
        return json.dumps([rule_json(doc, fixable.get(doc.code, False)) for doc in docs], indent=2) + "\n"
    return "\n".join(render_text(doc) for doc in docs)


def render_table(docs: list[RuleDoc], fixable: dict[str, bool], fmt: str) -> str:
    """`jaxlint rules`: one line per rule (code, name, severity, `[*]` when it can fix, summary),
    or a JSON array of the same fields."""
    if fmt == "json":
        return json.dumps([{"code": doc.code, "name": doc.name, "severity": doc.severity.value,
                            "fixable": fixable.get(doc.code, False), "summary": doc.summary} for doc in docs],
                          indent=2) + "\n"
    return "".join(f"{doc.code}  {doc.name:<30} {doc.severity.value:<8} {'[*]' if fixable.get(doc.code) else '   '} "
                   f"{doc.summary}\n" for doc in docs)
