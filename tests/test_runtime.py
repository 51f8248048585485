"""Runtime mode on the fixtures and the bundled examples: JAX confirms what it really raises.

The expected verdicts are not listed here: each fixture's RUNTIME_CHECKS (and JAX101's
KEY_REUSE_CHECKS) are run in this process, exactly as tests/test_jax_agreement.py and
tests/test_key_reuse_jax.py do, and every line where JAX raises must come back `confirmed` from
the worker, naming the same exception. The worker chooses its own inputs (probes, annotations):
nothing from RUNTIME_CHECKS reaches it. One `confirm()` run covers every module (it is the
expensive part: a worker process per module), so it lives in one test.

The other tests here are fast and need no worker: input specs, annotations, the planner, config
(only the tests marked `runtime` run workers or JAX).
"""
from __future__ import annotations

import inspect
import re
import textwrap
from pathlib import Path

import pytest

from jaxlint.frontends.config import ConfigError, settings_from_table
from jaxlint.model.settings import RuntimeSettings, Settings
from jaxlint.engine.files import check_file
from jaxlint.model.finding import Finding, Position, Severity
from jaxlint.engine.registry import known_codes
from jaxlint.runtime import RuntimeOptions, confirm, drop_refuted, summary_line
from jaxlint.runtime.planner import module_identity, plan_module, runs_at_runtime
from jaxlint.runtime.specs import Spec, SpecError, parse_spec, read_annotation

from conftest import FIXTURES, ROOT, runtime_codes
from test_jax_agreement import WITH_CHECKS, load, raised_at

KEY_FIXTURE = FIXTURES / "JAX101_key_reuse.py"
#: the rules whose findings JAX raises on (JAX's key-reuse checker included)
ERROR_CODES = runtime_codes("raises", "key-reuse-checker")


def jax_raises() -> dict[tuple[str, int], str]:
    """(fixture path, line) -> the exception class JAX raises there, from the fixtures' own checks.

    RUNTIME_CHECKS are run here (they raise while tracing: fast), for the fixtures of the rules that
    runtime mode confirms. For JAX101 the knowledge of
    tests/test_key_reuse_jax.py is reused without running it again: JAX's checker raises at the
    first reported line of each typed-key function, and at the module-level reuse on import.
    """
    from test_key_reuse_jax import function_lines

    raising = {}
    for path in WITH_CHECKS:
        if path.name.split("_")[0] not in ERROR_CODES:
            continue  # a rule runtime mode does not run (JAX506: the failing read is driver code)
        module = load(path)
        for function, args, expected in module.RUNTIME_CHECKS:
            if expected is None:
                continue
            try:
                function(*args)
            except Exception as exc:  # noqa: BLE001
                raising[(str(path), raised_at(exc, path))] = type(exc).__name__
    module = load(KEY_FIXTURE)
    reported = {f.start.line for f in check_file(str(KEY_FIXTURE), Settings()).findings if f.code == "JAX101"}
    in_functions = set()
    for function, _ in module.KEY_REUSE_CHECKS:
        mine = sorted(reported & function_lines(function))
        in_functions |= function_lines(function)
        if mine:
            raising[(str(KEY_FIXTURE), mine[0])] = "KeyReuseError"
    legacy = {line for function in module.LEGACY_KEY_FUNCTIONS for line in function_lines(function)}
    for line in reported - in_functions - legacy:
        if not any(line in function_lines(f) for f in vars(module).values() if inspect.isfunction(f)):
            raising[(str(KEY_FIXTURE), line)] = "KeyReuseError"  # module level
    return raising


@pytest.mark.runtime
def test_every_positive_jax_raises_on_is_confirmed_naming_the_exception():
    import jax

    raising = jax_raises()
    paths = sorted({*WITH_CHECKS, KEY_FIXTURE})
    examples = sorted([*(ROOT / "examples").glob("*.py"), *(ROOT / "examples").glob("*.ipynb")])
    findings = [f for path in [*paths, *examples] for f in check_file(str(path), Settings()).findings]
    checked = confirm(findings, Settings(), RuntimeOptions(jobs=4))

    assert [(f.path, f.start, f.code) for f in checked] == [(f.path, f.start, f.code) for f in findings]
    by_place = {(f.path, f.start.line, f.code): f for f in checked}
    device = str(jax.devices()[0])
    problems = []
    for (path, line), exception in sorted(raising.items()):
        found = [f for (p, l, code), f in by_place.items() if (p, l) == (path, line) and code in ERROR_CODES]
        assert found, f"{Path(path).name}:{line}: JAX raises {exception} but jaxlint reports nothing"
        for finding in found:
            runtime = finding.runtime
            # a lax loop's body is checked at the loop: the evidence names the loop's line
            named = runtime["evidence"].startswith(f"{exception} at line {line}") or \
                f"the lax loop whose body draws at line {line} " in runtime["evidence"]
            if runtime["verdict"] != "confirmed" or not named:
                problems.append(f"{Path(path).name}:{line} {finding.code}: expected {exception}, got {runtime}")
            if not runtime["device"].startswith(device):
                problems.append(f"{Path(path).name}:{line}: device {runtime['device']!r}, JAX's default is {device!r}")
    # The examples are written to fail: every finding in them that has a runtime check is confirmed,
    # the behaviour families (prints, globals, compiles, legacy keys in a notebook) included.
    for finding in checked:
        if finding.path in map(str, examples) and finding.runtime is not None:
            if finding.runtime["verdict"] != "confirmed":
                problems.append(f"{Path(finding.path).name}:{finding.start.line} {finding.code}: {finding.runtime}")
    assert not problems, "\n".join(problems)
    # Rules with no runtime meaning keep their static verdict and get no `runtime` object.
    for finding in checked:
        assert (finding.runtime is None) == (not runs_at_runtime(finding.code)), finding
    assert sum(f.runtime is not None and f.runtime["verdict"] == "confirmed" for f in checked) >= len(raising)


# -- fast checks: no worker ------------------------------------------------------------------------
def test_specs():
    assert parse_spec("f32[3,4]") == Spec("array", "float32", (3, 4))
    assert parse_spec("i32[]") == Spec("array", "int32", ())
    assert parse_spec(" bool[2] ") == Spec("array", "bool", (2,))
    assert parse_spec("key") == Spec("key")
    assert parse_spec("key[4]") == Spec("key", shape=(4,))
    assert parse_spec("int").value == 3
    assert parse_spec("relu") is None  # a plain string argument
    for bad in ("f23[3]", "f32[3,x]", "f32[3"):
        with pytest.raises(SpecError):
            parse_spec(bad)
    assert str(Spec("array", "float32", (3, 4))) == "f32[3,4]"


def test_annotations():
    sizes: dict[str, int] = {}
    assert read_annotation("jax.Array", sizes).array
    assert read_annotation("int", sizes).spec.value == 3
    assert read_annotation("Optional[float]", sizes).spec.value == 1.0
    assert read_annotation("jax.Array | None", sizes).array
    batch = read_annotation('Float[Array, "batch 4"]', sizes).spec
    again = read_annotation("Int32[jax.Array, 'batch']", sizes).spec
    assert batch.dtype == "float32" and batch.shape[1] == 4 and again == Spec("array", "int32", batch.shape[:1])
    assert read_annotation('Key[Array, ""]', sizes).spec == Spec("key")
    assert read_annotation("PRNGKeyArray", sizes).spec == Spec("key")
    assert read_annotation("dict[str, int]", sizes) is None


def _finding(path: Path, line: int, column: int = 5, code: str = "JAX201") -> Finding:
    return Finding(code, "x", Severity.ERROR, "m", str(path), Position(line, column), Position(line, column + 1))


def test_planner_finds_the_innermost_function_with_its_trace_facts(tmp_path):
    package = tmp_path / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    path = package / "mod.py"
    path.write_text(textwrap.dedent("""\
        import functools
        import jax


        @functools.partial(jax.jit, static_argnames=("n",))
        def outer(x, n, scale=1.0):
            def inner(v):
                return v
            return jax.vmap(lambda y: y + 1)(x)


        class Model:
            def step(self, x):
                return x
        """))
    plan = plan_module(str(path), [(0, _finding(path, 9, 5)), (1, _finding(path, 9, 31)),
                                   (2, _finding(path, 8, 9)), (3, _finding(path, 14, 9)),
                                   (4, _finding(path, 1, 1))], Settings(root=str(tmp_path)), {}, ())
    assert plan.reason is None
    payload = plan.payload
    assert payload["module"] == "pkg.mod"
    assert payload["roots"][0] == str(package.parent)
    outer, lambda_, inner, method, module_level = (e["function"] for e in payload["findings"])
    assert (outer["qualname"], outer["first_line"], outer["def_line"]) == ("outer", 5, 6)
    assert outer["modes"] == ["jit"] and outer["traced_params"] == ["x"]
    assert [p["name"] for p in outer["params"]] == ["x", "n", "scale"] and outer["params"][2]["default"] == "1.0"
    # vmapped inside a jitted function: under both
    assert lambda_["qualname"] == "outer.<locals>.<lambda>" and sorted(lambda_["modes"]) == ["jit", "vmap"]
    assert inner["qualname"] == "outer.<locals>.inner" and inner["outer"]["qualname"] == "outer"
    assert (method["qualname"], method["kind"], method["class"]) == ("Model.step", "method", "Model")
    assert module_level is None


def test_module_names_follow_packages_and_configured_roots(tmp_path):
    (tmp_path / "lib" / "a" / "b").mkdir(parents=True)
    for part in ("a", "a/b"):
        (tmp_path / "lib" / part / "__init__.py").write_text("")
    file = tmp_path / "lib" / "a" / "b" / "c.py"
    file.write_text("")
    assert module_identity(str(file), str(tmp_path))[0] == "a.b.c"
    assert module_identity(str(file), str(tmp_path), ("lib/a",))[0] == "b.c"
    script = tmp_path / "scripts" / "run.py"
    script.parent.mkdir()
    script.write_text("")
    name, roots = module_identity(str(script), str(tmp_path))
    assert name == "run" and roots[0] == str(script.parent) and str(tmp_path) in roots


@pytest.mark.runtime
def test_a_file_no_import_can_name_is_run_by_its_path(tmp_path):
    """`01_intro.py` or `train.old.py` cannot be imported by name; the worker still runs them."""
    assert module_identity(str(tmp_path / "train.old.py"), str(tmp_path))[0].startswith("__jaxlint_path__.")
    path = tmp_path / "01_intro.old.py"
    path.write_text("import jax\n\n\n@jax.jit\ndef step(x):\n    print(x)\n    return x\n")
    findings = check_file(str(path), Settings()).findings
    assert [f.code for f in findings] == ["JAX301"]
    checked = confirm(findings, Settings(root=str(tmp_path)), RuntimeOptions())
    assert checked[0].runtime["verdict"] == "confirmed", checked[0].runtime


@pytest.mark.runtime  # confirm() refuses to start where JAX is not installed
def test_static_only_findings_get_no_runtime_and_no_worker(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import jax.numpy as np\n")
    findings = check_file(str(path), Settings()).findings
    assert [f.code for f in findings] == ["JAX601"]
    checked = confirm(findings, Settings(), RuntimeOptions())
    assert checked[0].runtime is None
    assert summary_line(checked).endswith("1 finding of rules with no runtime check.")


def test_summary_and_drop_refuted():
    base = _finding(Path("m.py"), 1)
    verdicts = ["confirmed", "not-reproduced", "inconclusive", "confirmed"]
    findings = [Finding(**{**base.__dict__, "runtime": {"verdict": v, "evidence": "", "device": "cpu:0"}})
                for v in verdicts]
    kept = drop_refuted(findings)
    assert [f.runtime["verdict"] for f in kept] == ["confirmed", "inconclusive", "confirmed"]
    assert summary_line(findings, dropped=1) == (
        "Runtime on cpu:0: 2 confirmed, 1 not reproduced, 1 inconclusive (1 not reproduced dropped).")


def _table(text: str, tmp_path):
    import tomllib

    return settings_from_table(tomllib.loads(text)["tool"]["jaxlint"], tmp_path / "pyproject.toml", known_codes())


def test_runtime_configuration(tmp_path):
    settings = _table("""
        [tool.jaxlint.runtime]
        timeout = 5
        memory-limit = 0
        python-path = ["src"]
        [tool.jaxlint.runtime.examples]
        "pkg.mod:f" = ["f32[3]", 2]
        "src/pkg/mod.py:Model.step" = {args = ["key"], init = [1.0]}
        """, tmp_path)
    assert settings.runtime == RuntimeSettings(timeout=5.0, memory_limit=0, python_path=("src",), examples=(
        ("pkg.mod:f", ["f32[3]", 2]), ("src/pkg/mod.py:Model.step", {"args": ["key"], "init": [1.0]})))
    assert Settings().runtime == RuntimeSettings()
    # Runtime settings change no static finding: the cache key ignores them.
    assert settings.fingerprint() == _table("[tool.jaxlint]", tmp_path).fingerprint()


@pytest.mark.parametrize("text, message", [
    ("[tool.jaxlint.runtime]\ntimeuot = 5", "unknown key 'timeuot'"),
    ("[tool.jaxlint.runtime]\ntimeout = -1", "timeout: expected a positive number"),
    ("[tool.jaxlint.runtime]\nmemory-limit = '4G'", "memory-limit: expected a number of MiB"),
    ("[tool.jaxlint.runtime]\npython-path = 'src'", "python-path: expected a list of strings"),
    ("[tool.jaxlint.runtime.examples]\nf = []", "the key must be"),
    ("[tool.jaxlint.runtime.examples]\n'm:f' = {argz = []}", "unknown key 'argz'"),
    ("[tool.jaxlint.runtime.examples]\n'm:f' = ['f23[3]']", "unknown dtype 'f23'"),
    ("[tool.jaxlint.runtime.examples]\n'm:f' = 3", "expected a list of arguments"),
])
def test_bad_runtime_configuration_names_the_key(tmp_path, text, message):
    with pytest.raises(ConfigError) as info:
        _table(text, tmp_path)
    assert message in str(info.value)
    assert "pyproject.toml" in str(info.value)


@pytest.mark.system
def test_the_parent_side_never_imports_jax(tmp_path):
    """Configuration, planning and the static run stay free of JAX; only the worker imports it."""
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text('[tool.jaxlint.runtime.examples]\n"m:f" = ["f32[3]"]\n')
    (tmp_path / "m.py").write_text("import jax\n\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return x\n")
    script = textwrap.dedent(f"""\
        import sys
        from jaxlint.frontends.runner import RunOptions, run, resolve_settings
        from jaxlint.runtime.planner import plan_module
        options = RunOptions(paths=[{str(tmp_path)!r}], use_cache=False)
        findings = run(options).findings
        settings = resolve_settings(options)
        plan = plan_module(findings[0].path, list(enumerate(findings)), settings, dict(settings.runtime.examples), ())
        print(len(findings), sorted(plan.payload["examples"]), "jax" in sys.modules)
        """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["1", "['f']", "False"], result.stderr


def test_runtime_mode_takes_each_rule_s_check_from_the_catalogue_only(tmp_path):
    """No table of rule codes in the runtime package: the planner hands the worker the catalogue's
    `[runtime]` table with each finding, and that is all the worker routes by."""
    import ast

    from jaxlint.catalogue.rule_docs import load_catalogue

    for file in sorted((ROOT / "src" / "jaxlint" / "runtime").rglob("*.py")):
        tree = ast.parse(file.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                assert not re.search(r"\bJAX\d{3}\b", node.value), f"{file.name}:{node.lineno}: {node.value!r}"
    catalogue = load_catalogue()
    for code, doc in catalogue.items():
        assert runs_at_runtime(code) == (doc.runtime.check != "static")
    path = tmp_path / "m.py"
    path.write_text("import jax\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    print(x)\n    return -x\n")
    findings = check_file(str(path), Settings()).findings
    assert sorted(f.code for f in findings) == ["JAX201", "JAX301"]
    plan = plan_module(str(path), list(enumerate(findings)), Settings(root=str(tmp_path)), {}, ())
    for entry in plan.payload["findings"]:
        assert entry["check"] == catalogue[entry["code"]].runtime.as_plan()


def test_a_failing_top_level_statement_is_skipped_and_says_what_it_left_undefined():
    """units.py runs in the worker, but needs no JAX: the statement runner alone."""
    from jaxlint.runtime.units import global_reads, run_units

    source = textwrap.dedent('''\
        """The module's docstring."""
        from __future__ import annotations
        import os, not_an_installed_package as pkg, sys
        from os import no_such_name
        from os.no_such_module import thing
        DATA = open("no-such-file.csv").read()
        class Model(pkg.Base):
            pass
        def helper(x) -> Undefined:
            return pkg.scale(x) + len(DATA)
        def user(x):
            return helper(x)
        def plain(x):
            return os.sep
        AFTER = [value for value in range(3)]
        ''')
    namespace = {"__name__": "subject"}
    result = run_units(namespace, source, "subject.py")
    assert result.fatal is None
    assert namespace["__doc__"] == "The module's docstring."
    assert namespace["helper"].__annotations__ == {"return": "Undefined"}  # the __future__ flag holds
    assert namespace["AFTER"] == [0, 1, 2] and "value" not in namespace and "os" in namespace
    assert [(f.line, type(f.error).__name__, f.names, f.package) for f in result.failures] == [
        (3, "ModuleNotFoundError", ("pkg", "sys"), "not_an_installed_package"),
        (4, "ImportError", ("no_such_name",), None),  # os is installed: not a missing package
        (5, "ModuleNotFoundError", ("thing",), None),
        (6, "FileNotFoundError", ("DATA",), None),
        (7, "NameError", ("Model",), None),
    ]
    assert result.unbound["Model"].root is result.failures[0]  # its base class came from the package
    module_code = compile(source, "subject.py", "exec")
    codes = {c.co_name: c for c in module_code.co_consts if isinstance(c, type(module_code))}
    assert {"pkg", "DATA", "helper"} <= global_reads(codes["user"], module_code)  # through the helper
    assert not global_reads(codes["plain"], module_code) & set(result.unbound)
    for ending in ("import sys\nsys.exit(3)\nLATER = 1\n", "raise MemoryError\nLATER = 1\n", "def broken(:\n"):
        namespace = {"__name__": "subject"}
        result = run_units(namespace, "FIRST = 1\n" + ending, "subject.py")
        assert result.fatal is not None and "LATER" not in namespace, ending
