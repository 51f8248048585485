"""Positions of findings: `facts.positions` gives exactly what libcst's PositionProvider gives."""
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from jaxlint.model.settings import Settings
from jaxlint.semantic.model import SemanticModel
from jaxlint.semantic.source_file import SourceFile
from jaxlint.syntax.positions import node_spans, statement_spans

from conftest import FIXTURES, ROOT, checked_with_positions, parsed

#: every fixture and example that parses (the JAX000 fixtures are there to fail parsing)
SOURCES = sorted(p for p in [*FIXTURES.glob("*.py"), *(ROOT / "examples").glob("*.py")]
                 if not p.name.startswith("JAX000"))

#: Layouts where counting lines and columns goes wrong most easily.
EDGE_CASES = {
    "crlf": "import jax\r\n\r\ndef f(x):\r\n    # c\r\n    return jax.numpy.sum(x)  # t\r\n",
    "cr": "import jax\rx = 1\rif x:\r    y = (1,\r         2)\r",
    "mixed newlines": "import jax\nx = 1\r\ny = '''a\r\nb\nc'''\rz = 2\n",
    "no final newline": "import jax\nx = jax.numpy.ones(3)",
    "tabs": "import jax\nif 1:\n\tif 2:\n\t\tx = jax.jit(lambda a: a)\n\t# c\n\ty = 3\n",
    "non-ascii": "s = 'héllo 😀'; t = [1, 2]  # ünï\nclass K:\n    def m(self, ä=1):\n"
                 "        return f'{ä!r:>{10}} 😀 {self}'\n",
    "continuations": "x = 1 + \\\n    2\nwith open('a') as f, \\\n     open('b') as g:\n    pass\n"
                     "@jax.jit\n# comment\n@ jax.vmap\ndef h(a):\n    '''doc\n    string'''\n"
                     "    return [i for i in a if i]\n",
    "compound": "try:\n    pass\nexcept (ValueError, TypeError) as e:\n    raise\nelse:\n    pass\n"
                "finally:\n    x = [\n        1,  # one\n\n        2,\n    ]\nmatch x:\n"
                "    case [1, *rest] if rest:\n        pass\n    case {'a': b, **kw}:\n        pass\n"
                "for i in r:\n    pass\nelse:\n    pass\n",
    "semicolons": "import jax; x = 1; y = 2\nif x: z = 3; w = 4\nwhile 0: pass\nelse: pass\n"
                  "async def g():\n    async with a as b: pass\n    async for q in r: pass\n"
                  "    await s\nglobal gg\ndel x, y\nassert x, 'm'\n",
    "trailing blank lines": "x = 1   \n\n\n   \n# end comment",
}


def _expected(module: cst.Module) -> dict:
    ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {id(node): ((r.start.line, r.start.column), (r.end.line, r.end.column)) for node, r in ranges.items()}


#: path -> (its parsed module, PositionProvider's positions in it): parsing a file and resolving
#: PositionProvider are the slow parts, so a file's whole-module reference is computed once.
_REFERENCES: dict[Path, tuple[cst.Module, dict]] = {}


def _reference(path: Path, source: str, module: cst.Module | None = None) -> tuple[cst.Module, dict]:
    if path not in _REFERENCES:
        module = module if module is not None else parsed(source)
        _REFERENCES[path] = (module, _expected(module))
    return _REFERENCES[path]


def _every_node(node: cst.CSTNode, found: list) -> list:
    found.append(node)
    for child in node.children:
        _every_node(child, found)
    return found


#: path -> every node of its reference module, in `_every_node`'s order (libcst's `children`,
#: asked node by node, costs as much as a parse): listed once for the two whole-file tests
_NODES: dict[Path, list] = {}


def _reference_nodes(path: Path, module: cst.Module) -> list:
    if path not in _NODES:
        _NODES[path] = _every_node(module, [])
    return _NODES[path]


@pytest.fixture(scope="module", autouse=True)
def _references_freed():
    """The references, and the runs of the fixtures and examples this module shares with
    test_fixtures (which runs first), are dropped with this module's last test: a few hundred
    thousand objects that the tests after it need not carry (each pass of the cycle collector
    walks them). A later test that asks for a run again gets it made afresh."""
    yield
    _REFERENCES.clear()
    _NODES.clear()
    checked_with_positions.cache_clear()


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_reported_nodes_have_position_provider_positions(path: Path):
    """Every node the engine asks a position for (findings and the nodes their fixes replace), in
    `check_file`'s run of the file that test_fixtures holds to the file's expectations."""
    source = path.read_text(encoding="utf-8")
    result, asked = checked_with_positions(path)
    assert result.internal_error is None and result.not_analysed is None, (result.internal_error, result.not_analysed)
    if path.parent == FIXTURES and "expect:" in source:
        assert result.findings and asked, "a fixture with expectations reported nothing: the test checks nothing"
    for module, nodes, spans in asked:
        reference, expected = _reference(path, source, module)  # shared with the whole-file test below
        if reference is not module:  # computed earlier on another parse of the file
            expected = _expected(module)
        for node in nodes:
            assert spans[id(node)] == expected[id(node)], (type(node).__name__, module.code_for_node(node))


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_every_node_alone_and_together(name: str):
    """One node at a time (ranges hoisted from children, early stop) and all nodes at once."""
    module = cst.parse_module(EDGE_CASES[name])
    expected = _expected(module)
    nodes = _every_node(module, [])
    spans = node_spans(module, nodes)
    assert {id(n): spans[id(n)] for n in nodes} == {id(n): expected[id(n)] for n in nodes}
    for node in nodes:
        assert node_spans(module, [node])[id(node)] == expected[id(node)], type(node).__name__


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_node_of_fixture_files(path: Path):
    module, expected = _reference(path, path.read_text(encoding="utf-8"))
    nodes = _reference_nodes(path, module)
    spans = node_spans(module, nodes)
    assert {id(n): spans[id(n)] for n in nodes} == {id(n): expected[id(n)] for n in nodes}
    # one node at a time is tested on every node of the edge cases above; here a few per file
    for node in nodes[::max(1, len(nodes) // 3)]:
        assert node_spans(module, [node])[id(node)] == expected[id(node)], type(node).__name__


def test_a_node_outside_the_module_raises_like_position_provider():
    module = cst.parse_module("x = 1\n")
    with pytest.raises(KeyError):
        node_spans(module, [cst.Name("y")])


def _statement_spans(source: str, module: cst.Module, nodes: list) -> dict:
    model = SemanticModel.of(SourceFile("t.py", source, module, Settings()))
    return statement_spans(module, nodes, source, model.statements_holding(nodes))


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_statement_by_statement_gives_position_provider_ranges(name: str):
    source = EDGE_CASES[name]
    module = cst.parse_module(source)
    expected = _expected(module)
    nodes = _every_node(module, [])
    assert {id(n): _statement_spans(source, module, [n])[id(n)] for n in nodes} == {id(n): expected[id(n)] for n in nodes}
    spans = _statement_spans(source, module, nodes)
    assert {id(n): spans[id(n)] for n in nodes} == {id(n): expected[id(n)] for n in nodes}


@pytest.mark.parametrize("path", SOURCES[::3], ids=lambda p: p.name)
def test_statement_by_statement_in_fixture_files(path: Path):
    source = path.read_text(encoding="utf-8")
    module, expected = _reference(path, source)
    nodes = _reference_nodes(path, module)[::7]
    spans = _statement_spans(source, module, nodes)
    assert {id(n): spans[id(n)] for n in nodes} == {id(n): expected[id(n)] for n in nodes}


def test_only_the_statements_holding_the_nodes_are_generated(monkeypatch):
    source = "import jax\n\nx = 1\n\n\ndef f(a):\n    return a\n\n\nx = 1\ny = jax.jit(f)(x)\n"
    module = cst.parse_module(source)
    expected = _expected(module)
    call = module.body[-1].body[0].value
    generated = []
    for kind in {type(statement) for statement in module.body}:
        original = kind._codegen
        monkeypatch.setattr(kind, "_codegen",
                            lambda self, state, original=original: generated.append(self) or original(self, state))
    assert _statement_spans(source, module, [call])[id(call)] == expected[id(call)]
    assert [id(s) for s in generated] == [id(module.body[-1])]
    # `x = 1` twice, but only the second one has two blank lines before it: its code (blank lines
    # included) starts one line only
    generated.clear()
    second = module.body[3].body[0].value
    assert _statement_spans(source, module, [second])[id(second)] == expected[id(second)]
    assert [id(s) for s in generated] == [id(module.body[3])]


def test_a_statement_repeated_word_for_word_is_placed_by_the_whole_module(monkeypatch):
    source = "import jax\n\n\nx = 1\n\n\ndef f(a):\n    return a\n\n\nx = 1\ny = jax.jit(f)(x)\n"
    module = cst.parse_module(source)
    expected = _expected(module)
    generated = []
    for kind in {type(statement) for statement in module.body}:
        original = kind._codegen
        monkeypatch.setattr(kind, "_codegen",
                            lambda self, state, original=original: generated.append(self) or original(self, state))
    for repeated in (module.body[1].body[0].value, module.body[3].body[0].value):
        generated.clear()
        assert _statement_spans(source, module, [repeated])[id(repeated)] == expected[id(repeated)]
        assert module.body[0] in generated
