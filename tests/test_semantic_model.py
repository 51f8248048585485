"""What the semantic model's one walk records: nodes with their scopes and parents, in source order."""
from __future__ import annotations

import libcst as cst
import pytest

from jaxlint.model.settings import Settings
from jaxlint.semantic.model import SemanticModel
from jaxlint.semantic.source_file import SourceFile

SOURCE = '''\
import jax.numpy as np
from jax.random import split as jsplit


@jax.jit
def step(state, key=make_key()):
    global counter
    counter = counter + 1
    key, sub = jsplit(key)
    rng.normal(state.x)

    def inner(y):
        return y.shape

    return [np.sum(v) for v in state.values], lambda z: z.T


class Model:
    scale = np.ones(3)
'''


def _model(source: str = SOURCE) -> tuple[SemanticModel, cst.Module]:
    module = cst.parse_module(source)
    return SemanticModel.of(SourceFile("model.py", source, module, Settings())), module


def _function(module: cst.Module, name: str) -> cst.FunctionDef:
    found = []
    module.visit(_Finder(name, found))
    return found[0]


class _Finder(cst.CSTVisitor):
    def __init__(self, name: str, found: list) -> None:
        super().__init__()
        self.name, self.found = name, found

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == self.name:
            self.found.append(node)


def test_sites_in_source_order_with_scope_and_parent():
    model, module = _model()
    kinds = [type(site.node).__name__ for site in model.sites]
    # pre-order: a function before its decorators and defaults
    assert kinds == ["ImportAlias", "ImportAlias", "FunctionDef", "Call", "Global", "Assign", "Assign", "Call",
                     "Call", "FunctionDef", "Call", "Lambda", "ClassDef", "Assign", "Call"]
    step = _function(module, "step")
    by_node = {id(site.node): site for site in model.sites}
    # a function's decorators and defaults are in the scope around it, its body in its own
    assert by_node[id(step)].scope.kind == "module"
    default = step.params.params[1].default
    assert by_node[id(default)].scope.kind == "module" and by_node[id(default)].parent is step.params.params[1]
    sum_call = next(s for s in model.sites if type(s.node) is cst.Call and cst.Module([]).code_for_node(s.node) == "np.sum(v)")
    assert sum_call.scope.kind == "comprehension" and sum_call.scope.parent.node is step
    class_assign = [s for s in model.sites if type(s.node) is cst.Assign][-1]
    assert class_assign.scope.kind == "class"
    assert [type(s.node).__name__ for s in model.sites_of(cst.Global, cst.ClassDef)] == ["Global", "ClassDef"]


def test_calls_identifiers_and_attribute_uses_per_function():
    model, module = _model()
    step, inner = _function(module, "step"), _function(module, "inner")
    calls = [s.node for s in model.sites_of(cst.Call)]
    assert [model.call_order[id(c)] for c in calls] == list(range(len(calls)))
    assert id(step) in model.calling and id(inner) not in model.calling
    # header names count for the function; a nested function's names are its own
    assert {"jax", "step", "state", "key", "make_key", "jsplit", "rng", "normal", "np"} <= model.identifiers[id(step)]
    assert "y" not in model.identifiers[id(step)] and model.identifiers[id(inner)] == {"inner", "y", "shape"}
    # a body's attribute uses include those of nested functions; a decorator is outside the body
    assert model.attribute_uses[id(step)] == {("rng", "normal"), ("state", "x"), ("y", "shape"), ("np", "sum"),
                                              ("state", "values"), ("z", "T")}
    assert ("jax", "jit") in model.attribute_uses[id(module)]
    assert model.attribute_uses[id(inner)] == {("y", "shape")}
    # definitions end innermost first
    classes = [s.node for s in model.sites_of(cst.ClassDef)]
    assert model.end_order[id(inner)] < model.end_order[id(step)] < model.end_order[id(classes[0])]


def test_name_occurrences_and_replay():
    model, _ = _model()
    occurrences = model.name_occurrences({"np"})
    assert len(occurrences) == 3
    assert [type(parent).__name__ for _, _, parent in occurrences] == ["AsName", "Attribute", "Attribute"]
    assert [scope.kind for _, scope, _ in occurrences] == ["module", "comprehension", "class"]

    class Calls:
        def __init__(self) -> None:
            self.seen = []

        def visit_Call(self, node: cst.Call) -> None:
            self.seen.append((self.ctx.qualified_name(node.func), self.ctx.scope.kind))

    visitor = Calls()
    assert model.replay(visitor) == []
    assert ("jax.random.split", "function") in visitor.seen and ("jax.numpy.sum", "comprehension") in visitor.seen
    assert ("jax.numpy.ones", "class") in visitor.seen

    class Leaves:
        def leave_Call(self, node: cst.Call) -> None:
            pass

    class Names:
        def visit_Name(self, node: cst.Name) -> None:
            pass

    for visitor_type in (Leaves, Names):
        with pytest.raises(TypeError):
            model.replay(visitor_type())


def test_a_raising_visitor_is_dropped_for_the_rest_of_the_replay():
    model, _ = _model()

    class Raises:
        calls = 0

        def visit_Call(self, node: cst.Call) -> None:
            Raises.calls += 1
            raise ValueError("broken")

    failures = model.replay(Raises())
    assert Raises.calls == 1 and [type(f) for f in failures] == [ValueError]


def test_a_global_name_means_the_module_binding_from_the_first_lookup():
    """`global x` is collected with the scope's bindings: a lookup that comes first must see it too."""
    from jaxlint.semantic.scopes import Scope

    from conftest import recorded_scope

    module = cst.parse_module("import jax.numpy as x\ndef f():\n    global x\n    x = 1\n")
    function = Scope(module.body[1], recorded_scope(module))
    assert [function.lookup("x")[0].kind for _ in range(2)] == ["module", "module"]


def test_name_occurrences_of_several_spellings_and_within_a_function():
    model, module = _model()
    step, inner = _function(module, "step"), _function(module, "inner")
    both = model.name_occurrences(["np", "key"])
    assert [name.value for name, _, _ in both] == ["np", "key", "key", "key", "np", "np"]  # source order
    assert [name.value for name, _, _ in model.name_occurrences(["key", "np"], step)] == ["key", "key", "key", "np"]
    assert model.name_occurrences(["key"], inner) == []
    assert [name.value for name, _, _ in model.name_occurrences(["y"], inner)] == ["y", "y"]
    # a node that is not a function: no narrowing (the whole file)
    assert model.name_occurrences(["np"], module) == model.name_occurrences(["np"])


def test_calls_in_scope_between_two_call_indexes():
    model, module = _model()
    step = _function(module, "step")
    scope = model.scopes[id(step)]
    calls = model.calls_in_scope(scope)
    assert [cst.Module([]).code_for_node(call.func) for call in calls] == ["jsplit", "rng.normal"]
    first, second = (model.call_order[id(call)] for call in calls)
    assert model.calls_in_scope(scope, after=first) == [calls[1]]
    assert model.calls_in_scope(scope, before=second) == [calls[0]]
    assert model.calls_in_scope(scope, after=first, before=second) == []
    assert model.calls_in_scope(scope, after=-1, before=second + 1) == calls
