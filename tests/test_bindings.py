"""The bindings and references the semantic model's one walk records, and the scopes fed from them."""
from __future__ import annotations

import libcst as cst
import pytest

from jaxlint.model.settings import Settings
from jaxlint.semantic.bindings import BindingKind as K, ReferenceContext
from jaxlint.semantic.model import SemanticModel
from jaxlint.semantic.scopes import Scope
from jaxlint.semantic.source_file import SourceFile


def model_of(source: str, package: str | None = None) -> SemanticModel:
    return SemanticModel.of(SourceFile("t.py", source, cst.parse_module(source), Settings(), None, package))


def described(model: SemanticModel, scope_kind: str | None = None) -> list[tuple]:
    """(name, kind, scope kind, branch depth, in_loop, unpack path) per binding, in source order."""
    return [(b.name, b.kind, b.scope.kind, len(b.branch), b.in_loop, b.unpack_path) for b in model.bindings
            if scope_kind is None or b.scope.kind == scope_kind]


def test_each_kind_of_binding_is_recorded_in_source_order_with_its_scope():
    model = model_of('''\
import os.path
import numpy as np
from jax import numpy as jnp, lax
x: int = 1
y: int
x += 2
a, (b, *c) = f()
del a
for i in range(3):
    pass
with open(p) as handle:
    pass
try:
    pass
except ValueError as error:
    pass
match x:
    case [first, *rest]:
        pass
    case {"k": 1} as whole:
        pass
def g(p, /, q, *args, k, **kw):
    global x
    r = [s for s in q]
    return (t := r)
class C:
    attribute = 0
h = lambda u: u
''')
    assert [(b.name, b.kind, b.scope.kind) for b in model.bindings] == [
        ("os", K.IMPORT, "module"), ("np", K.IMPORT, "module"), ("jnp", K.IMPORT_FROM, "module"),
        ("lax", K.IMPORT_FROM, "module"), ("x", K.ANNOTATED, "module"), ("y", K.ANNOTATED, "module"),
        ("x", K.AUGMENTED, "module"), ("a", K.ASSIGNMENT, "module"), ("b", K.ASSIGNMENT, "module"),
        ("c", K.ASSIGNMENT, "module"), ("a", K.DELETION, "module"), ("i", K.LOOP_TARGET, "module"),
        ("handle", K.WITH_ITEM, "module"), ("error", K.EXCEPT_NAME, "module"),
        ("first", K.MATCH_CAPTURE, "module"), ("rest", K.MATCH_CAPTURE, "module"),
        ("whole", K.MATCH_CAPTURE, "module"), ("g", K.FUNCTION, "module"),
        # parameters in the order the scope has always listed them: stars last
        ("p", K.PARAMETER, "function"), ("q", K.PARAMETER, "function"), ("k", K.PARAMETER, "function"),
        ("args", K.PARAMETER, "function"), ("kw", K.PARAMETER, "function"),
        ("r", K.ASSIGNMENT, "function"), ("s", K.COMPREHENSION_TARGET, "comprehension"),
        ("t", K.WALRUS, "function"), ("C", K.CLASS, "module"), ("attribute", K.ASSIGNMENT, "class"),
        ("h", K.ASSIGNMENT, "module"), ("u", K.PARAMETER, "function"),
    ]
    assert [b.id for b in model.bindings] == list(range(len(model.bindings)))
    by_name = {}
    for binding in model.bindings:
        by_name.setdefault(binding.name, binding)  # the first binding of each name
    assert by_name["c"].unpack_path == (1, 1) and by_name["b"].unpack_path == (1, 0)
    assert type(by_name["x"].value) is cst.Integer and by_name["y"].value is None
    assert by_name["r"].value is not None and by_name["c"].value is None
    assert type(by_name["jnp"].node) is cst.ImportAlias and type(by_name["jnp"].statement) is cst.ImportFrom
    # the module's statement each binding is in: a parameter's is its function's
    assert by_name["p"].top_level is by_name["g"].node


def test_branch_paths_tell_alternatives_from_sequences_and_loops_are_marked():
    model = model_of('''\
if flag:
    a = 1
elif other:
    a = 2
else:
    a = 3
try:
    b = 1
except ImportError:
    b = 2
else:
    c = 1
finally:
    d = 1
for i in xs:
    e = i
else:
    f = 0
while cond:
    g = 1
def h():
    for j in xs:
        k = j
''')
    by_name: dict[str, list] = {}
    for binding in model.bindings:
        by_name.setdefault(binding.name, []).append(binding)
    first, second, third = by_name["a"]
    assert len(first.branch) == 1 and first.branch[0][1] == 0
    assert [branch for _, branch in second.branch] == [1, 0]  # the `elif` is the `if`'s second branch
    assert [branch for _, branch in third.branch] == [1, 1]
    assert first.branch[0][0] == second.branch[0][0] == third.branch[0][0]
    body, handler = by_name["b"]
    assert body.branch[0][0] == handler.branch[0][0] and (body.branch[0][1], handler.branch[0][1]) == (0, 1)
    assert by_name["c"][0].branch == body.branch  # a `try`'s `else` runs after its body: not exclusive
    assert by_name["d"][0].branch == ()
    loop = {name: by_name[name][0].in_loop for name in ("i", "e", "f", "g", "j", "k", "h")}
    assert loop == {"i": True, "e": True, "f": False, "g": True, "j": True, "k": True, "h": False}
    # branches and loops are read within the binding's own scope
    assert by_name["k"][0].branch == ()


def test_scopes_are_complete_after_the_walk_without_being_asked_first():
    source = '''\
counter = 0
def bump():
    global counter
    counter += 1
def outer():
    total = 0
    def inner():
        nonlocal total
        total += 1
'''
    file = SourceFile("t.py", source, cst.parse_module(source), Settings())
    model = SemanticModel.of(file)
    functions = {scope.node.name.value: scope for scope in model.scopes.values()}
    assert functions["bump"].globals == {"counter"} and functions["inner"].nonlocals == {"total"}
    # a name declared `global` resolves to the module's binding
    owner, binding = functions["bump"].lookup("counter")
    assert owner is file.module_scope and [b.kind for b in binding.recorded] == [K.ASSIGNMENT]
    # the declaring scope keeps its own record of the assignment (the lookup redirects the name)
    assert [b.kind for b in functions["bump"].bindings["counter"].recorded] == [K.AUGMENTED]
    # another Scope made for the same node shares what the walk recorded
    again = Scope(functions["bump"].node, file.module_scope)
    assert again.globals == {"counter"} and set(again.bindings) == {"counter"}


def test_a_scope_asked_first_has_the_walk_run_once():
    source = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sum(x)\n"
    file = SourceFile("t.py", source, cst.parse_module(source), Settings())
    assert file.module_scope.bindings["jnp"].targets == ["jax.numpy"]
    assert SemanticModel.of(file).bindings[0].name == "jnp"  # the model that recorded them, kept
    orphan = Scope(cst.parse_module(source), None)  # bindings come from a file's model: none here
    with pytest.raises(RuntimeError, match="SourceFile"):
        orphan.lookup("jnp")


def test_import_fallbacks_and_aliases_reach_the_scope():
    model = model_of('''\
try:
    import jax.numpy as np
except ImportError:
    import numpy as np
try:
    import scipy as sp
except ValueError:
    import numpy as sp
jnp = np
from . import sibling
''', package="pkg.sub")
    module = model.file.module_scope.bindings
    assert module["np"].targets == ["jax.numpy", "numpy"] and module["np"].fallbacks == {1}
    assert module["sp"].fallbacks == set()  # not a missing-module handler
    assert module["jnp"].targets == ["<alias>"] and [type(v) for v in module["jnp"].alias_values] == [cst.Name]
    assert module["sibling"].targets == ["pkg.sub.sibling"]
    assert [b.kind for b in module["np"].recorded] == [K.IMPORT, K.IMPORT]


def test_walrus_binds_where_python_does_or_nowhere_as_the_resolver_always_had_it():
    model = model_of('''\
def f(xs):
    ys = [y for y in (n := xs)]
    zs = [(z := x) for x in xs]
    @decorate(w := 1)
    def g(v=(u := 2)):
        pass
    return lambda: (q := 3)
''')
    bound = {(b.name, b.scope.kind) for b in model.bindings if b.kind is K.WALRUS}
    assert bound == {("n", "function"), ("q", "function")}
    q = next(b for b in model.bindings if b.name == "q")
    assert type(q.scope.node) is cst.Lambda


def test_references_resolve_to_the_bindings_they_may_mean():
    model = model_of('''\
import jax
x = 1
if flag:
    x = 2
def f(y):
    del y
    return x + y + len(y) + jax.numpy.zeros(1)
''')
    references = {(r.node.value, r.context): r for r in model.references()}
    x_bindings = tuple(b.id for b in model.bindings if b.name == "x")
    assert len(x_bindings) == 2 and references[("x", ReferenceContext.LOAD)].binding_ids == x_bindings
    assert references[("y", ReferenceContext.DEL)].binding_ids == references[("y", ReferenceContext.LOAD)].binding_ids
    assert references[("x", ReferenceContext.STORE)].scope.kind == "module"
    assert references[("len", ReferenceContext.LOAD)].binding_ids == ()  # a builtin
    # attribute names, parameter names and keywords are no references
    assert not {"numpy", "zeros"} & {r.node.value for r in model.references()}
    assert ("y", ReferenceContext.STORE) not in references


def test_module_state_reads_rebinding_from_the_recorded_bindings():
    from jaxlint.semantic.module_state import ModuleState

    source = '''\
import jax
SCALE = 2.0
if flag:
    MODE = "a"
else:
    MODE = "b"
STEPS = 1
STEPS = 2
for LR in (0.1, 0.2):
    pass
SEED = 0
def reset():
    global SCALE
    SCALE = 1.0
'''
    file = SourceFile("t.py", source, cst.parse_module(source), Settings())
    state = ModuleState.of(file)
    assert set(state.reassigned) == {"STEPS", "LR", "SCALE"}  # MODE: exclusive branches
    assert state.last_binding["SCALE"] is None and state.last_binding["STEPS"] == 4
    assert [type(v) for v in state.module_values("MODE")] == [cst.SimpleString, cst.SimpleString]
    assert state.definitions == {"jax", "reset"}
    seed = next(b for b in SemanticModel.of(file).bindings if b.name == "SEED")
    assert state.assigns_integer_literal(seed.node)


def test_literals_and_containers_read_whole_assignments_only():
    from jaxlint.semantic.containers import Containers
    from jaxlint.semantic.literals import Literals

    source = '''\
SIZES = [1, 2]
a, b = [1], [2]
def f(x):
    cache = {}
    seen = set()
    seen = x
    n = m = 3
    return cache, seen
'''
    file = SourceFile("t.py", source, cst.parse_module(source), Settings())
    model = SemanticModel.of(file)
    module, function = file.module_scope, next(iter(model.scopes.values()))
    literals = Literals.of(file)
    assert literals.is_python_sequence(cst.Name("SIZES"), module)
    assert literals.values_of("a", module) is None  # unpacked: no whole value
    assert Containers.of(file).names(function) == {"cache"}
    n = next(b for b in model.bindings if b.name == "n")
    assert type(literals.assignment_value(n.node, function)) is cst.Integer
