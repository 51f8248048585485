"""The shared walk: generated child enumerators and the Walker's written-out loop, against plain references."""
import dataclasses
import functools
from pathlib import Path

import libcst as cst
import pytest

from jaxlint.model.settings import Settings
from jaxlint.semantic.source_file import SourceFile
from jaxlint.semantic.walk_state import Walker, WalkState, _loop_step
from jaxlint.syntax.walk import NODE_TYPES, _ORDER, _SKIPPED_NAMES, _SKIPPED_PREFIXES, children, walk

from conftest import FIXTURES, ROOT, parsed

#: every fixture and example that parses (the JAX000 fixtures are there to fail parsing)
SOURCES = sorted(p for p in [*FIXTURES.glob("*.py"), *(ROOT / "examples").glob("*.py")]
                 if not p.name.startswith("JAX000"))
EXTRA = "import jax\nclass A(B, metaclass=M):\n    @jax.jit\n    def f(self, /, a, *, b=2, **k) -> int:\n" \
        "        global g\n        return [x async for x in a if x] or {k: v for k, v in b}\n" \
        "match p:\n    case [1, *rest] if rest:\n        y = lambda q=1: (z := q)\n"


@functools.lru_cache(maxsize=None)
def _reference_fields(kind: type) -> list[str]:
    """The fields of a node class read by `_reference_children`, in source order (the same for every
    node of the class: worked out once per class)."""
    names = [f.name for f in dataclasses.fields(kind)
             if not f.name.startswith(_SKIPPED_PREFIXES) and f.name not in _SKIPPED_NAMES]
    order = _ORDER.get(kind)
    if order:
        names = [n for n in order if n in names] + [n for n in names if n not in order]
    return names


def _reference_children(node: cst.CSTNode) -> list[tuple[str, cst.CSTNode]]:
    """Every field but whitespace and punctuation, read by name, in source order."""
    names = _reference_fields(type(node))
    found = []
    for name in names:
        value = getattr(node, name)
        if type(value) in NODE_TYPES:
            found.append((name, value))
        elif isinstance(value, (tuple, list)):
            found.extend((name, item) for item in value if type(item) in NODE_TYPES)
    return found


def _modules():
    for path in SOURCES:
        yield path.name, path.read_text(encoding="utf-8")
    yield "extra", EXTRA


@pytest.mark.parametrize("name, source", list(_modules()), ids=lambda v: v if len(v) < 40 else "")
def test_children_and_walk_match_the_reference(name: str, source: str):
    module = parsed(source)
    expected_events = []

    def reference(node, field):
        expected_events.append(("enter", id(node), field))
        assert [(f, id(c)) for f, c in children(node)] == [(f, id(c)) for f, c in _reference_children(node)]
        for child_field, child in _reference_children(node):
            reference(child, child_field)
        expected_events.append(("leave", id(node)))

    reference(module, "")
    events = []
    walk(module, lambda node, field: events.append(("enter", id(node), field)) or True,
         lambda node: events.append(("leave", id(node))))
    assert events == expected_events
    # without `leave`: the same nodes entered, in the same order
    entered: list = []
    walk(module, lambda node, field: entered.append(("enter", id(node), field)) or True, None)
    assert entered == [event for event in expected_events if event[0] == "enter"]


@pytest.mark.parametrize("with_leave", [True, False])
def test_a_walk_skips_the_children_of_a_node_enter_refuses(with_leave: bool):
    module = cst.parse_module("def f(a):\n    return g(a, [b for b in a])\nx = h(1)\n")
    entered: list = []

    def enter(node, field) -> bool:
        entered.append(type(node).__name__)
        return type(node) is not cst.Call

    walk(module, enter, (lambda node: None) if with_leave else None)
    assert entered.count("Call") == 2 and "Arg" not in entered and "ListComp" not in entered
    assert entered[:3] == ["Module", "FunctionDef", "Name"]


class _Recorder:
    """Records where the walk is (scope, ancestors, parent) at every handler call."""

    def __init__(self, ctx: WalkState, log: list) -> None:
        self.ctx = ctx
        self.log = log

    def _record(self, tag: str, node: cst.CSTNode) -> None:
        ctx = self.ctx
        self.log.append((tag, id(node), id(ctx.scope.node), ctx.scope.kind, len(ctx.ancestors), id(ctx.parent)))


for _type in ("Name", "Call", "Attribute", "FunctionDef", "Lambda", "ClassDef", "ListComp", "DictComp",
              "GeneratorExp", "IndentedBlock", "Param", "Integer", "Module", "Add", "Global"):
    setattr(_Recorder, f"visit_{_type}", lambda self, node, t=_type: self._record("visit " + t, node))
    setattr(_Recorder, f"leave_{_type}", lambda self, node, t=_type: self._record("leave " + t, node))


@pytest.mark.parametrize("name, source", list(_modules()), ids=lambda v: v if len(v) < 40 else "")
def test_walker_run_is_walk_with_enter_and_leave(name: str, source: str):
    module = parsed(source)

    file = SourceFile(name, source, module, Settings())

    def record(run) -> list:
        ctx = WalkState(file)
        log: list = []
        walker = Walker(ctx, [_Recorder(ctx, log)])
        run(walker)
        assert ctx.ancestors == [] and ctx.scope is ctx.file.module_scope
        return log

    by_methods = record(lambda walker: walk(module, walker.enter, walker.leave))
    assert by_methods
    assert record(lambda walker: walker.run(module)) == by_methods
    # the rules' walk replays the semantic model's: the same calls, scopes and ancestors
    events: list = []
    assert record(lambda walker: walker.run(module, events)) == by_methods
    assert record(lambda walker: walker.replay(events)) == by_methods


class _NoNameRecorder:
    """Handlers for no Name: the replay passes names by without touching the ancestors."""

    __init__ = _Recorder.__init__
    _record = _Recorder._record


for _type in ("Call", "Attribute", "Integer", "Add", "Lambda", "Param"):
    setattr(_NoNameRecorder, f"visit_{_type}", lambda self, node, t=_type: self._record("visit " + t, node))
    setattr(_NoNameRecorder, f"leave_{_type}", lambda self, node, t=_type: self._record("leave " + t, node))


@pytest.mark.parametrize("name, source", list(_modules())[:12], ids=lambda v: v if len(v) < 40 else "")
def test_a_replay_without_name_handlers_keeps_the_ancestors(name: str, source: str):
    module = parsed(source)
    file = SourceFile(name, source, module, Settings())
    events: list = []
    logs = []
    for run in (lambda walker: walk(module, walker.enter, walker.leave), lambda walker: walker.run(module, events),
                lambda walker: walker.replay(events)):
        ctx = WalkState(file)
        log: list = []
        walker = Walker(ctx, [_NoNameRecorder(ctx, log)])
        assert cst.Name not in walker.visitors and cst.Name not in walker.leavers
        run(walker)
        assert ctx.ancestors == [] and ctx.scope is ctx.file.module_scope
        logs.append(log)
    assert logs[0] and logs[0] == logs[1] == logs[2]


class _WhereAsker:
    """Asks where each node is, twice, against answers worked out afresh from the ancestors."""

    def __init__(self, ctx: WalkState, log: list) -> None:
        self.ctx = ctx
        self.log = log

    def _ask(self, node: cst.CSTNode) -> None:
        ctx = self.ctx
        fresh_function = ctx._function(list(ctx.ancestors))
        fresh_loop = ctx._scan(_loop_step, {})
        for _ in range(2):
            assert ctx.function() is fresh_function
            assert ctx.innermost_loop() is fresh_loop
        self.log.append((id(node), id(fresh_function), id(fresh_loop)))


for _type in ("Name", "Call", "FunctionDef", "Lambda", "For", "While", "ListComp", "CompFor", "IndentedBlock"):
    setattr(_WhereAsker, f"visit_{_type}", _WhereAsker._ask)
    setattr(_WhereAsker, f"leave_{_type}", _WhereAsker._ask)


@pytest.mark.parametrize("name, source", list(_modules()), ids=lambda v: v if len(v) < 40 else "")
def test_questions_at_a_node_answer_as_asked_afresh(name: str, source: str):
    """`function` and `innermost_loop` keep their last answer for the node asked at: never one of
    another node, in a walk or in its replay."""
    module = parsed(source)
    file = SourceFile(name, source, module, Settings())
    events: list = []
    logs = []
    for run in (lambda walker: walker.run(module, events), lambda walker: walker.replay(events)):
        ctx = WalkState(file)
        log: list = []
        walker = Walker(ctx, [_WhereAsker(ctx, log)])
        run(walker)
        assert not walker.failures  # a handler that raises is dropped, not raised
        logs.append(log)
    assert logs[0] and logs[0] == logs[1]


class _NameCollector:
    def __init__(self, ctx: WalkState, wanted) -> None:
        self.ctx = ctx
        self.wanted = wanted
        self.seen: list[tuple[str, int]] = []

    def names_wanted(self):
        if isinstance(self.wanted, Exception):
            raise self.wanted
        return self.wanted

    def visit_Name(self, node: cst.Name) -> None:
        self.seen.append((node.value, id(self.ctx.parent)))


def test_a_replay_calls_visit_name_on_the_spellings_wanted_only():
    source = "import os\ndef f(x, environ):\n    return os.environ[x] + environ + g(x)\n"
    module = parsed(source)
    file = SourceFile("m.py", source, module, Settings())
    events: list = []
    everything = _NameCollector(WalkState(file), None)
    Walker(everything.ctx, [everything]).run(module, events)
    ctx = WalkState(file)
    some, every, broken = _NameCollector(ctx, {"x", "environ"}), _NameCollector(ctx, None), \
        _NameCollector(ctx, ValueError("no spellings"))
    walker = Walker(ctx, [some, every, broken])
    walker.replay(events)
    assert every.seen == everything.seen and len(every.seen) == 10
    assert some.seen == [seen for seen in everything.seen if seen[0] in {"x", "environ"}] and len(some.seen) == 6
    assert broken.seen == [] and [(visitor, str(exc)) for visitor, exc in walker.failures] == [(broken, "no spellings")]
