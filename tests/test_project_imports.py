"""Every way Python names a module of the project reaches its functions: the callee of a jitted
function is traced, whichever import form the caller used."""
from __future__ import annotations

from pathlib import Path

import pytest

from jaxlint.frontends.runner import RunOptions, run

TARGET = "\n".join(
    f"def {name}(x):\n    if x > 0:\n        return x\n    return -x\n\n"
    for name in ("plain", "aliased", "from_package", "relative", "two_levels", "reexported", "untouched"))


def lines_of(source: str, name: str) -> int:
    """The line of the `if` in function `name` of TARGET."""
    return source.splitlines().index(f"def {name}(x):") + 2


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxlint]\n")
    package = tmp_path / "src" / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .api import reexported\n")
    (package / "api.py").write_text("from .core.mod import reexported\n")
    (package / "core").mkdir()
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "mod.py").write_text(TARGET)
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "steps.py").write_text(
        "import jax\n\nfrom ..core import mod\nfrom ..core.mod import relative\n\n\n"
        "@jax.jit\ndef by_relative(x):\n    return relative(x)\n\n\n"
        "@jax.jit\ndef by_two_levels(x):\n    return mod.two_levels(x)\n")
    (tmp_path / "app.py").write_text(
        "import jax\nimport pkg.core.mod\nimport pkg.core.mod as m\nfrom pkg.core import mod\nimport pkg\n\n\n"
        "@jax.jit\ndef step(x):\n"
        "    a = pkg.core.mod.plain(x)\n    b = m.aliased(x)\n    c = mod.from_package(x)\n"
        "    return pkg.reexported(a + b + c)\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_each_import_form_reaches_the_function(project):
    findings = run(RunOptions(paths=["."], use_cache=False)).findings
    reported = {(Path(f.path).as_posix(), f.start.line, f.code) for f in findings}
    target = "src/pkg/core/mod.py"
    expected = {(target, lines_of(TARGET, name), "JAX201")
                for name in ("plain", "aliased", "from_package", "relative", "two_levels", "reexported")}
    assert reported == expected
    assert all(f.trace for f in findings)


def test_a_function_nothing_traces_is_not_reported(project):
    findings = run(RunOptions(paths=["src/pkg/core/mod.py"], use_cache=False)).findings
    assert lines_of(TARGET, "untouched") not in {f.start.line for f in findings}
    assert len(findings) == 6


def test_a_sub_project_of_a_repository_imports_its_package_from_its_own_folder(tmp_path, monkeypatch):
    """`repo/proj/tests/test_model.py` imports `repo/proj/proj/model.py` as `proj.model`, as it does
    when the sub-project is installed or run from its own folder: the repository root is no root of it."""
    sub = tmp_path / "proj"
    (sub / "proj").mkdir(parents=True)
    (sub / "tests").mkdir()
    (sub / "proj" / "__init__.py").write_text("")
    (sub / "proj" / "model.py").write_text(TARGET)
    (sub / "tests" / "test_model.py").write_text(
        "import jax\nfrom proj import model\n\n\n@jax.jit\ndef step(x):\n    return model.plain(x)\n")
    monkeypatch.chdir(tmp_path)
    findings = run(RunOptions(paths=["."], use_cache=False)).findings
    reported = {(Path(f.path).as_posix(), f.start.line, f.code) for f in findings}
    assert reported == {("proj/proj/model.py", lines_of(TARGET, "plain"), "JAX201")}
