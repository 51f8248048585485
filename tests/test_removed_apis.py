"""JAX602 on APIs removed since JAX 0.2: the `.at[...]` rewrite of `jax.ops.index_*` keeps the meaning,
the import fixes give importable code, and old module paths resolve to the functions they name."""
from __future__ import annotations

import libcst as cst
import pytest

from jaxlint.engine.files import check_file
from jaxlint.model.settings import Settings
from jaxlint.semantic.source_file import SourceFile

INDEX_UPDATES = '''\
import jax
import jax.numpy as jnp
from jax.ops import index_add


@jax.jit
def updates(x, y):
    a = jax.ops.index_update(x, jax.ops.index[1:3, ::2], y)
    b = jax.ops.index_mul(x + 1, (0, 1), y)
    c = index_add(x, jax.ops.index[..., -1], y, indices_are_sorted=True)
    d = jax.ops.index_min(x, 2, y)
    e = jax.ops.index_max(x, jax.ops.index[:, 0], y, unique_indices=True)
    f = jax.ops.index_update(x, idx=0, y=y)  # by keyword: reported, not rewritten
    return a, b, c, d, e, f


def outside(x, y):
    # `x` may be a NumPy array, which index_update accepted and which has no `.at`: not rewritten
    return jax.ops.index_update(x, 0, y), jax.ops.index_add(jnp.zeros(3), 0, y)
'''

OLD_PATHS = '''\
from jax import api
from jax.api import vmap
import jax.lax_linalg as lax_linalg
import jax.experimental.stax as stax
'''


def _fixed(tmp_path, text: str, name: str):
    path = tmp_path / name
    path.write_text(text)
    return check_file(str(path), Settings(target_jax_version=(0, 4, 30)), fix=True)


def test_index_updates_are_rewritten_to_the_at_property(tmp_path):
    result = _fixed(tmp_path, INDEX_UPDATES, "updates.py")
    fixed = result.fixed_text
    assert "a = x.at[1:3, ::2].set(y)" in fixed
    assert "b = (x + 1).at[(0, 1)].multiply(y)" in fixed
    assert "c = x.at[..., -1].add(y, indices_are_sorted=True)" in fixed
    assert "d = x.at[2].min(y)" in fixed
    assert "e = x.at[:, 0].max(y, unique_indices=True)" in fixed
    assert "f = jax.ops.index_update(x, idx=0, y=y)" in fixed
    assert "return jax.ops.index_update(x, 0, y), jnp.zeros(3).at[0].add(y)" in fixed
    # left: the import of the removed name, the call by keyword, the call on a value of unknown kind
    assert sorted((f.start.line, f.code) for f in result.fixed_findings) == [
        (3, "JAX602"), (13, "JAX602"), (19, "JAX602")]


@pytest.mark.jax
def test_rewritten_index_updates_compute_what_numpy_assignment_does(tmp_path):
    """Each rewrite, run on JAX, equals NumPy's in-place `x[idx] op= y` on a copy: what
    `jax.ops.index_*` documented as their meaning."""
    import jax.numpy as jnp
    import numpy as np  # here, not at the top: the static tests of this module do not import NumPy

    fixed = _fixed(tmp_path, INDEX_UPDATES, "updates.py").fixed_text
    body = fixed.replace("from jax.ops import index_add\n", "")
    body = body.replace("    f = jax.ops.index_update(x, idx=0, y=y)  # by keyword: reported, not rewritten\n", "")
    body = body.replace("return a, b, c, d, e, f", "return a, b, c, d, e").partition("\n\ndef outside")[0]
    namespace: dict = {}
    exec(compile(body, "updates.py", "exec"), namespace)
    x = np.arange(12.0).reshape(3, 4)
    a, b, c, d, e = namespace["updates"](jnp.asarray(x), 7.0)
    expected = []
    for index, op in (((slice(1, 3), slice(None, None, 2)), "set"), ((0, 1), "mul"), ((Ellipsis, -1), "add"),
                      (2, "min"), ((slice(None), 0), "max")):
        base = x + 1 if op == "mul" else x.copy()
        if op == "set":
            base[index] = 7.0
        elif op == "mul":
            base[index] *= 7.0
        elif op == "add":
            base[index] += 7.0
        elif op == "min":
            base[index] = np.minimum(base[index], 7.0)
        else:
            base[index] = np.maximum(base[index], 7.0)
        expected.append(base)
    for got, want in zip((a, b, c, d, e), expected):
        np.testing.assert_array_equal(np.asarray(got), want)


def test_old_module_imports_are_rewritten_to_importable_ones(tmp_path):
    result = _fixed(tmp_path, OLD_PATHS, "paths.py")
    assert result.fixed_text == (
        "import jax as api\n"
        "from jax import vmap\n"
        "import jax.lax.linalg as lax_linalg\n"
        "import jax.example_libraries.stax as stax\n"
    )
    assert result.fixed_findings == []


@pytest.mark.jax
def test_rewritten_old_module_imports_import_on_the_installed_jax(tmp_path):
    fixed = _fixed(tmp_path, OLD_PATHS, "paths.py").fixed_text
    namespace: dict = {}
    exec(compile(fixed, "paths.py", "exec"), namespace)
    import jax

    assert namespace["api"].grad is jax.grad and namespace["vmap"] is jax.vmap
    assert callable(namespace["lax_linalg"].cholesky) and callable(namespace["stax"].Dense)


def _names(source: str, *expressions: str) -> list[tuple[str | None, str | None]]:
    """(qualified name, written name) of each expression statement's value, from the module scope."""
    module = cst.parse_module(source)
    file = SourceFile("names.py", source, module, Settings())
    values = [statement.body[0].value for statement in module.body
              if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Expr)]
    by_code = {module.code_for_node(value): value for value in values}
    return [(file.names.qualified_name(by_code[e], file.module_scope), file.names.written_name(by_code[e], file.module_scope))
            for e in expressions]


def test_old_module_paths_resolve_to_the_current_functions():
    source = '''\
import jax
from jax import api
import jax.experimental.stax as stax
from jax.experimental.optimizers import adam
api.jit
api.grad
jax.tree_multimap
jax.tree_util.tree_multimap
stax.Dense
adam
jax.api.vmap
'''
    assert _names(source, "api.jit", "api.grad", "jax.tree_multimap", "jax.tree_util.tree_multimap", "stax.Dense",
                  "adam", "jax.api.vmap") == [
        ("jax.jit", "jax.api.jit"),
        ("jax.grad", "jax.api.grad"),
        ("jax.tree.map", "jax.tree_multimap"),
        ("jax.tree_util.tree_map", "jax.tree_util.tree_multimap"),
        ("jax.example_libraries.stax.Dense", "jax.experimental.stax.Dense"),
        ("jax.example_libraries.optimizers.adam", "jax.experimental.optimizers.adam"),
        ("jax.vmap", "jax.api.vmap"),
    ]


def test_a_projects_own_api_module_keeps_its_name():
    source = '''\
from mypkg import api
import mypkg.ops as ops
api.grad
ops.index_update
'''
    assert _names(source, "api.grad", "ops.index_update") == [
        ("mypkg.api.grad", "mypkg.api.grad"), ("mypkg.ops.index_update", "mypkg.ops.index_update")]


def test_a_jit_through_the_old_api_module_is_a_traced_function(tmp_path):
    """Other rules see `api.jit` as `jax.jit`: a print under `@api.jit` is JAX301."""
    path = tmp_path / "old.py"
    path.write_text("from jax import api\n\n\n@api.jit\ndef f(x):\n    print(x)\n    return x\n")
    found = sorted((f.start.line, f.code) for f in check_file(str(path), Settings()).findings)
    assert found == [(1, "JAX602"), (6, "JAX301")]


SIGNATURES = '''\
import jax
import jax.numpy as jnp
from jax import lax


def f(x, y, mesh, body):
    a = lax.dot(x, y, lax.Precision.HIGHEST, jnp.float32)
    b = jnp.array(x, jnp.float32, False, order="K")
    c = jnp.array(x, jnp.float32, False, copy=True)
    d = jnp.reshape(x, newshape=(2, 3))
    e = jax.shard_map(body, mesh=mesh, in_specs=None, out_specs=None, check_rep=False)
    g = jax.jit(f, (0,))
    return a, b, c, d, e, g
'''


def test_arguments_given_by_position_are_rewritten_to_keywords(tmp_path):
    result = _fixed(tmp_path, SIGNATURES, "signatures.py")
    fixed = result.fixed_text
    assert "a = lax.dot(x, y, precision=lax.Precision.HIGHEST, preferred_element_type=jnp.float32)" in fixed
    assert 'b = jnp.array(x, jnp.float32, copy=False, order="K")' in fixed
    assert "c = jnp.array(x, jnp.float32, False, copy=True)" in fixed  # a rewrite would repeat `copy=`
    assert "d = jnp.reshape(x, shape=(2, 3))" in fixed
    assert "check_rep=False" in fixed  # `jax.shard_map` with `check_vma` is newer than the target, 0.4.30
    assert "g = jax.jit(f, (0,))" in fixed  # the second argument was `in_shardings`: no rewrite guesses intent
    assert sorted(f.start.line for f in result.fixed_findings if f.code == "JAX602") == [9, 11, 12]
    path = tmp_path / "signatures.py"
    newer = check_file(str(path), Settings(target_jax_version=(0, 6, 1)), fix=True)
    assert "check_vma=False" in newer.fixed_text


def test_the_experimental_shard_import_is_rewritten_only_for_a_jax_that_has_the_new_one(tmp_path):
    text = "from jax.experimental.shard import reshard\n"
    path = tmp_path / "shard.py"
    path.write_text(text)
    old = check_file(str(path), Settings(target_jax_version=(0, 6, 2)), fix=True)
    assert old.fixed_text is None and old.findings
    new = check_file(str(path), Settings(target_jax_version=(0, 7, 0)), fix=True)
    assert new.fixed_text == "from jax.sharding import reshard\n"
