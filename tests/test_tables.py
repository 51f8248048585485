"""Each table of JAX knowledge is written once: two module-level tables of names with the same
entries (or one a copy of most of the other) drift apart as soon as one of them is edited."""
import ast
from itertools import combinations
from pathlib import Path

import jaxlint

PACKAGE = Path(jaxlint.__file__).resolve().parent
#: below this many entries a table is too small for overlap to mean a copy
MIN_ENTRIES = 4
#: the share of the smaller table found in the larger one that marks a copy
COPIED_SHARE = 0.8
#: Pairs that share names by NumPy's and Python's design, not by copying: the `numpy` ufuncs and the
#: `math` functions of the same names; NumPy functions that defer to the array method of the same name.
UNRELATED = {
    frozenset({"NUMPY_UFUNCS", "MATH_FUNCTIONS"}),
    frozenset({"WORK_METHODS", "NUMPY_DISPATCHING"}),
}
#: Runtime mode's routing tables are read from the catalogue in a later change; the static analyzer's
#: tables are checked here.
SKIPPED_PACKAGES = ("runtime",)


def string_tables():
    """(module:line NAME, its string entries) for each module-level set, tuple, list or dict of strings."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in SKIPPED_PACKAGES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            entries = _strings(node.value)
            if names and entries is not None and len(entries) >= MIN_ENTRIES:
                yield f"{path.relative_to(PACKAGE)}:{node.lineno} {names[0]}", entries


def _strings(value):
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("frozenset", "set", "tuple") \
            and len(value.args) == 1:
        value = value.args[0]
    if isinstance(value, ast.Dict):
        keys = value.keys
        if keys and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
            return frozenset(k.value for k in keys)
        return None
    if isinstance(value, (ast.Set, ast.Tuple, ast.List)):
        if value.elts and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
            return frozenset(e.value for e in value.elts)
    return None


def test_no_table_is_written_twice():
    tables = list(string_tables())
    assert len(tables) > 20, "the scan found too few tables: it no longer sees them"
    copies = []
    for (a, first), (b, second) in combinations(tables, 2):
        if frozenset({a.split()[-1], b.split()[-1]}) in UNRELATED:
            continue
        smaller = min(len(first), len(second))
        if len(first & second) >= COPIED_SHARE * smaller:
            copies.append(f"{a} and {b} share {len(first & second)} of {smaller} entries")
    assert not copies, "tables written twice (define one, derive the other):\n" + "\n".join(copies)


def test_the_scan_sees_a_copied_table(tmp_path):
    a = frozenset({"jax.jit", "jax.pmap", "jax.vmap", "jax.grad", "jax.checkpoint"})
    b = frozenset(a | {"jax.remat"})
    assert len(a & b) >= COPIED_SHARE * min(len(a), len(b))
    assert _strings(ast.parse('frozenset({"a", "b", "c", "d"})', mode="eval").body) == frozenset("abcd")
