"""`from m import *` binds what Python binds: `m.__all__`, else every name of `m` that does not start
with `_`, the modules `m` imported and the names it star-imported itself included. JAX's, NumPy's
and a few standard modules' names come from a table; a module of the project is read through the
project; any other module binds names that are not known, and may rebind any name bound before it."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from jaxlint.api import lint_source
from jaxlint.frontends.editor import BufferLinter
from jaxlint.frontends.runner import RunOptions, run
from jaxlint.model.settings import Settings
from jaxlint.semantic.names import NameResolver

from conftest import recorded_scope

PROJECT = Path(__file__).parent / "projects" / "star_imports"

KEY_REUSE = """\
def sample(seed):
    key = jr.key(seed)
    a = jr.normal(key, (3,))
    b = jr.normal(key, (3,))
    return a + b
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def findings_of(root: Path, monkeypatch, *paths: str, cache: bool = False) -> set[tuple[str, int, str]]:
    monkeypatch.chdir(root)
    outcome = run(RunOptions(paths=list(paths) or ["."], use_cache=cache))
    assert not outcome.fatal, outcome.problems
    return {(Path(f.path).as_posix(), f.start.line, f.code) for f in outcome.findings}


def resolve(source: str, expression: str) -> str | None:
    """A name as a file alone resolves it (no project: only the table's modules are known)."""
    module = cst.parse_module(textwrap.dedent(source))
    return NameResolver().qualified_name(cst.parse_expression(expression), recorded_scope(module))


# -- what Python binds, pinned by running it ------------------------------------------------------

PACKAGE = {
    "pyproject.toml": "[tool.jaxlint]\n",
    "pkg/__init__.py": """\
        import xml.dom as jr
        import json
        from .util import *
        from .listed import *
        import pkg.deep.inner

        _private = 1
        gone = 2
        del gone


        def helper():
            pass
        """,
    "pkg/util.py": """\
        import collections as co
        import string as _hidden

        __all__ = ["co", "_shown", "Thing"]
        _shown = 1


        class Thing:
            pass


        def unlisted():
            pass
        """,
    "pkg/listed/__init__.py": """\
        from .. import util
        __all__ = ["sub", "util"]
        """,
    "pkg/listed/sub.py": "value = 1\n",
    "pkg/deep/__init__.py": "",
    "pkg/deep/inner.py": "",
    "user.py": "from pkg import *\n",
}


def python_binds(root: Path) -> dict[str, str | None]:
    """What `from pkg import *` binds when Python runs it: name -> the module's name for a module."""
    probe = ("import json, types\nnamespace = {}\nexec('from pkg import *', namespace)\n"
             "namespace.pop('__builtins__')\nprint(json.dumps({k: v.__name__ if isinstance(v, types.ModuleType) "
             "else None for k, v in namespace.items()}))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=60,
                            check=True)
    return json.loads(result.stdout)


def test_the_names_a_star_import_binds_are_the_ones_python_binds(tmp_path, monkeypatch):
    write(tmp_path, PACKAGE)
    expected = python_binds(tmp_path)
    from jaxlint.frontends import runner

    monkeypatch.chdir(tmp_path)
    settings = runner.resolve_settings(RunOptions(paths=["user.py"]))
    session = runner.project_session(runner.project_plan(settings, ["user.py"], ["user.py"]), settings, ("user.py",))
    user = session.layout.module_of("user.py")
    exports = session.project.star_exports(user, "pkg")
    assert not exports.open
    assert set(exports.names) == set(expected)
    for name, module in expected.items():
        if module is not None:  # a module: the one Python binds
            assert exports.names[name] == module, name
    assert exports.names["helper"] == "pkg.helper" and exports.names["Thing"] == "pkg.util.Thing"
    assert exports.maybe == frozenset()


def test_a_name_python_binds_twice_is_unknown_only_where_the_two_differ():
    assert resolve("import jax.numpy as jnp\nfrom jax.example_libraries.stax import *\n", "jnp.sum") == "jax.numpy.sum"
    assert resolve("import numpy as jnp\nfrom jax.example_libraries.stax import *\n", "jnp.sum") is None


# -- JAX's own modules, and the ones whose names are not known ----------------------------------

@pytest.mark.parametrize("source, expression, expected", [
    ("from jax.random import *\n", "normal", "jax.random.normal"),
    ("from jax import *\n", "random.normal", "jax.random.normal"),
    ("from jax import *\n", "jit", "jax.jit"),
    ("from jax.numpy import *\n", "max", "jax.numpy.max"),  # the builtin is shadowed
    ("from jax.lax import *\n", "map", "jax.lax.map"),
    ("from jax.example_libraries.stax import *\n", "jnp.sum", "jax.numpy.sum"),
    ("from jax.experimental.stax import *\n", "Dense", "jax.example_libraries.stax.Dense"),
    # NumPy 2 binds `max`, NumPy 1 does not: either may be installed
    ("from numpy import *\n", "max", None),
    ("from numpy import *\n", "sum", "numpy.sum"),
    ("from numpy import *\n", "random.rand", "numpy.random.rand"),
    ("import jax.numpy as jnp\nfrom numpy import *\n", "jnp.sum", "jax.numpy.sum"),
    # a module whose names are not known: any name bound before it, and any builtin, may be rebound
    ("import jax.numpy as jnp\nfrom helpers import *\n", "jnp.sum", None),
    ("from helpers import *\n", "print", None),
    ("from helpers import *\n", "jr.normal", None),
    ("from helpers import *\nimport jax.numpy as jnp\n", "jnp.sum", "jax.numpy.sum"),
    ("from .helpers import *\nimport jax.numpy as jnp\n", "jnp.sum", "jax.numpy.sum"),
    ("import jax.numpy as jnp\nfrom .helpers import *\n", "jnp.sum", None),
    ("import jax\n", "print", "builtins.print"),
])
def test_names_after_a_star_import(source, expression, expected):
    assert resolve(source, expression) == expected


def test_jax_star_imports_give_their_findings_and_shadowed_builtins_none():
    settings = Settings()
    reuse = lint_source("from jax.random import *\n\n\ndef sample(seed):\n    k = key(seed)\n"
                        "    return normal(k, (3,)) + normal(k, (3,))\n", "t.py", settings)
    assert [f.code for f in reuse] == ["JAX101"]
    jitted = "import jax\n{star}\n\n@jax.jit\ndef f(x, y):\n    {call}\n    return x\n"

    def codes(star: str, call: str) -> list[str]:
        return [f.code for f in lint_source(jitted.format(star=star, call=call), "t.py", settings)]

    assert codes("", "max(x, y)") == ["JAX203"]
    assert codes("from jax.numpy import *", "max(x, y)") == []
    assert codes("from numpy import *", "max(x, y)") == []  # NumPy 2's `max`, or NumPy 1's builtin
    assert codes("from numpy import *", "all(x)") == []  # `numpy.all` in every version
    assert codes("", "print(x)") == ["JAX301"]
    assert codes("from jax.debug import *", "print(x)") == []
    assert codes("from helpers import *", "print(x)") == []
    assert codes("from math import *", "print(x)") == ["JAX301"]


# -- the project's own modules ------------------------------------------------------------------

def test_a_script_gets_the_jax_names_of_its_package(monkeypatch):
    assert findings_of(PROJECT, monkeypatch, "train.py") == {
        ("train.py", 12, "JAX101"), ("train.py", 23, "JAX501")}


@pytest.mark.parametrize("package, expected", [
    ("import jax\nimport jax.random as jr\n", {("user.py", 7, "JAX101")}),
    # `__all__` leaves `jr` out: `jr` is not bound by the star import
    ('import jax\nimport jax.random as jr\n__all__ = ["jax"]\n', set()),
    ('import jax\nimport jax.random as jr\n__all__ = ["jax"]\n__all__ += ["jr"]\n', {("user.py", 7, "JAX101")}),
    # an `__all__` changed where it cannot be followed: the names are not known
    ('import jax\nimport jax.random as jr\n__all__ = ["jr"]\n__all__.remove("jr")\n', set()),
    # a private name is not exported
    ("import jax.random as _jr\njr = None\n", set()),
    # through a star import of the package's own
    ("from .core import *\n", {("user.py", 7, "JAX101")}),
])
def test_what_the_package_exports_decides(tmp_path, monkeypatch, package, expected):
    write(tmp_path, {"pyproject.toml": "[tool.jaxlint]\n", "pkg/__init__.py": package,
                     "pkg/core.py": "import jax.random as jr\n",
                     "user.py": "from pkg import *\n\n\n" + KEY_REUSE})
    assert findings_of(tmp_path, monkeypatch) == expected


def test_a_private_name_used_after_the_star_import_is_not_bound(tmp_path, monkeypatch):
    write(tmp_path, {"pyproject.toml": "[tool.jaxlint]\n", "pkg/__init__.py": "import jax.random as _jr\n",
                     "user.py": "from pkg import *\n\n\n" + KEY_REUSE.replace("jr.", "_jr.")})
    assert findings_of(tmp_path, monkeypatch) == set()


def test_a_function_of_the_package_reached_through_its_star_import_is_traced(monkeypatch):
    assert ("pkg/util.py", 5, "JAX201") in findings_of(PROJECT, monkeypatch, "pkg/util.py")


def test_a_star_import_of_a_module_that_is_not_there_binds_nothing_known(tmp_path, monkeypatch):
    write(tmp_path, {"pyproject.toml": "[tool.jaxlint]\n",
                     "user.py": "import jax.random as jr\nfrom missing import *\n\n\n" + KEY_REUSE})
    assert findings_of(tmp_path, monkeypatch) == set()


def test_a_file_alone_does_not_know_its_packages_names():
    """stdin, or a buffer without its project: the star import's names stay unknown."""
    source = (PROJECT / "train.py").read_text(encoding="utf-8")
    assert lint_source(source, "train.py", Settings()) == []


def test_changing_the_star_imported_module_changes_the_cached_findings(tmp_path, monkeypatch):
    project = tmp_path / "star_imports"
    shutil.copytree(PROJECT, project)
    first = findings_of(project, monkeypatch, "train.py", cache=True)
    assert ("train.py", 12, "JAX101") in first
    assert findings_of(project, monkeypatch, "train.py", cache=True) == first
    init = project / "pkg" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    init.write_text(text + "# a comment changes no name\n", encoding="utf-8")
    assert findings_of(project, monkeypatch, "train.py", cache=True) == first
    init.write_text(text + '\n__all__ = ["jax", "normalize", "clipped", "jnp"]\n', encoding="utf-8")
    assert findings_of(project, monkeypatch, "train.py", cache=True) == {("train.py", 23, "JAX501")}
    # the module the package star-imports changes: what the package exports changes with it
    init.write_text(text, encoding="utf-8")
    util = project / "pkg" / "util.py"
    util.write_text("import numpy as jnp\nimport numpy.random as jr\n" + util.read_text(encoding="utf-8")
                    .replace("import jax.numpy as jnp\n", ""), encoding="utf-8")
    assert ("train.py", 12, "JAX101") not in findings_of(project, monkeypatch, "train.py", cache=True)


def test_an_editor_buffer_resolves_the_names_of_its_workspace():
    linter = BufferLinter(str(PROJECT))
    text = (PROJECT / "train.py").read_text(encoding="utf-8")
    found = linter.lint(str(PROJECT / "train.py"), "# unsaved\n" + text).findings
    assert sorted((f.start.line, f.code) for f in found) == [(13, "JAX101"), (24, "JAX501")]
    assert linter.lint(None, text).findings == []  # an untitled buffer has no project


# -- the table, against the libraries ------------------------------------------------------------

@pytest.mark.jax
def test_the_table_has_every_name_the_installed_libraries_bind():
    from jaxlint.catalogue.star_exports import load_star_exports

    table = load_star_exports()
    probe = ("import json, sys, types\nnamespace = {}\nexec(f'from {sys.argv[1]} import *', namespace)\n"
             "namespace.pop('__builtins__')\nprint(json.dumps({k: v.__name__ if isinstance(v, types.ModuleType) "
             "else '' for k, v in namespace.items()}))")
    for module in ("jax", "jax.numpy", "jax.random", "jax.lax", "numpy", "jax.example_libraries.stax"):
        result = subprocess.run([sys.executable, "-c", probe, module], capture_output=True, text=True, timeout=300,
                                check=True)
        bound = json.loads(result.stdout)
        known = table[module]
        assert set(bound) <= set(known.names), sorted(set(bound) - set(known.names))
        assert {n for n in known.names if n not in known.maybe} <= set(bound), module
        for name, target in bound.items():
            if known.names[name] and target:
                assert known.names[name] == target, (module, name)
