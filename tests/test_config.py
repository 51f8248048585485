"""[tool.jaxlint]: found by walking up, validated strictly, applied."""
import json

import pytest
from click.testing import CliRunner

from jaxlint.frontends.cli import main
from jaxlint.frontends.config import ConfigError, find_config, load_settings
from jaxlint.model.settings import Settings
from jaxlint.engine.registry import known_codes

BAD = "import jax.numpy as np\nimport jax\nx = jax.tree_map(np.abs, [1])\n"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_found_by_walking_up_past_pyprojects_without_the_table(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.jaxlint]\nignore = ['JAX601']\n")
    write(tmp_path / "sub" / "pyproject.toml", "[project]\nname = 'x'\n")
    deep = tmp_path / "sub" / "pkg"
    deep.mkdir()
    assert find_config(deep) == tmp_path / "pyproject.toml"
    settings = load_settings(deep, known_codes())
    assert settings.ignore == ("JAX601",)
    assert settings.root == str(tmp_path)


def test_every_key_is_read(tmp_path):
    write(tmp_path / "pyproject.toml", """
[tool.jaxlint]
select = ["JAX1", "JAX6"]
ignore = ["JAX601"]
extend-select = ["JAX501"]
per-file-ignores = { "tests/*" = ["JAX602"] }
exclude = ["build_tools/"]
extra-traced-decorators = ["mylib.compile.fast_jit"]
loop-unroll-threshold = 64
target-jax-version = "0.4.26"
""")
    s = load_settings(tmp_path, known_codes())
    assert s.select == ("JAX1", "JAX6") and s.ignore == ("JAX601",) and s.extend_select == ("JAX501",)
    assert s.per_file_ignores == (("tests/*", ("JAX602",)),)
    assert s.exclude == ("build_tools/",)
    assert s.extra_traced_decorators == ("mylib.compile.fast_jit",)
    assert s.loop_unroll_threshold == 64
    assert s.target_jax_version == (0, 4, 26)
    enabled = s.enabled_codes(known_codes(), str(tmp_path / "src" / "a.py"))
    assert "JAX602" in enabled and "JAX601" not in enabled and "JAX501" in enabled
    assert "JAX602" not in s.enabled_codes(known_codes(), str(tmp_path / "tests" / "a.py"))


@pytest.mark.parametrize("table, fragment", [
    ("selct = ['JAX1']", "unknown key 'selct'"),
    ("select = ['JAX999']", "unknown rule code 'JAX999'"),
    ("ignore = ['E501']", "'E501' is not a rule code"),
    ("select = 'JAX1'", "expected a list of rule codes"),
    ("loop-unroll-threshold = 0", "loop-unroll-threshold: expected a positive integer"),
    ("loop-unroll-threshold = 'many'", "expected a positive integer"),
    ("target-jax-version = 'latest'", "target-jax-version: expected a version"),
    ("extra-traced-decorators = ['fast_jit']", "not a dotted name"),
    ("per-file-ignores = ['tests']", "per-file-ignores: expected a table"),
    ("enable-x64 = 'yes'", "enable-x64: expected true or false"),
    ("enable-x64 = 1", "enable-x64: expected true or false"),
    ("extend-transforms = ['mylib.fast_jit']", "extend-transforms: expected a table"),
    ("extend-transforms = { fast_jit = { mode = 'jit' } }", "not a dotted name"),
    ("extend-transforms = { 'mylib.scan' = { mode = 'scan' } }", "mode must be one of abstract, grad, jit, vmap"),
    ("extend-transforms = { 'mylib.jit' = { leaves = 'arrays' } }", "mode must be one of"),
    ("extend-transforms = { 'mylib.jit' = { mode = 'jit', leaves = 'some' } }", "leaves must be one of all, arrays"),
    ("extend-transforms = { 'mylib.jit' = { mode = 'jit', static = [1] } }", "unknown field 'static'"),
    ("extend-transforms = { 'mylib.jit' = 'jit' }", "expected a table like"),
])
def test_bad_settings_name_the_key_and_the_file(tmp_path, table, fragment):
    config = write(tmp_path / "pyproject.toml", f"[tool.jaxlint]\n{table}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, known_codes())
    assert fragment in str(info.value)
    assert str(config) in str(info.value)


def test_bad_settings_exit_2_from_the_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pyproject.toml", "[tool.jaxlint]\nselct = ['JAX1']\n")
    write(tmp_path / "a.py", BAD)
    result = CliRunner().invoke(main, ["check", "a.py"])
    assert result.exit_code == 2
    assert "unknown key 'selct'" in result.stderr and "pyproject.toml" in result.stderr
    assert result.stdout == ""


def test_exclude_and_per_file_ignores_apply_in_the_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pyproject.toml",
          "[tool.jaxlint]\nexclude = ['generated/']\n[tool.jaxlint.per-file-ignores]\n'tests/*' = ['JAX601']\n")
    write(tmp_path / "generated" / "g.py", BAD)
    write(tmp_path / "tests" / "t.py", BAD)
    write(tmp_path / "src" / "s.py", BAD)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json"])
    found = sorted((d["path"], d["code"]) for d in json.loads(result.stdout))
    assert found == [("src/s.py", "JAX601"), ("src/s.py", "JAX602"), ("tests/t.py", "JAX602")]


def test_target_version_limits_fixes(tmp_path):
    from jaxlint.engine.checker import check_source, enabled_rules

    source = "import jax\ny = jax.tree_map(abs, [1])\n"
    old = Settings(target_jax_version=(0, 4, 20))
    new = Settings(target_jax_version=(0, 4, 30))
    [too_old] = check_source(source, "a.py", old, enabled_rules(old, "a.py"))
    [recent] = check_source(source, "a.py", new, enabled_rules(new, "a.py"))
    assert too_old.fix is None and "not fixed automatically" in too_old.message
    assert recent.fix is not None and recent.fix.edits[0].content == "jax.tree.map"


def test_enable_x64_turns_the_x64_rule_off(tmp_path):
    from jaxlint.engine.checker import check_source, enabled_rules

    source = "import jax.numpy as jnp\nx = jnp.zeros(3, dtype=jnp.float64)\n"
    write(tmp_path / "pyproject.toml", "[tool.jaxlint]\nenable-x64 = true\n")
    on = load_settings(tmp_path, known_codes())
    off = Settings()
    assert on.enable_x64 is True and off.enable_x64 is False
    assert on.fingerprint() != Settings(target_jax_version=on.target_jax_version, root=on.root).fingerprint()
    assert [f.code for f in check_source(source, "a.py", off, enabled_rules(off, "a.py"))] == ["JAX402"]
    assert check_source(source, "a.py", on, enabled_rules(on, "a.py")) == []


@pytest.mark.parametrize("options", [
    ["--select", "JAX1"], ["--select", "JAX1,JAX2"], ["--ignore", "JAX000"], ["--ignore", "JAX0"],
])
def test_a_file_that_does_not_parse_is_reported_whatever_the_selection(tmp_path, monkeypatch, options):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.py").write_text("import jax\nx = (\n")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", *options, "broken.py"])
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "broken.py:2:5: JAX000" in result.stdout


def test_per_file_ignores_cannot_hide_a_parse_error(tmp_path):
    settings = Settings(select=("JAX1",), ignore=("JAX000",), per_file_ignores=(("*.py", ("JAX000",)),))
    assert "JAX000" in settings.enabled_codes(["JAX000", "JAX101", "JAX201"], str(tmp_path / "a.py"))
    assert "JAX201" not in settings.enabled_codes(["JAX000", "JAX101", "JAX201"], str(tmp_path / "a.py"))


DECLARED = """import jax
import jax.numpy as jnp
from mylib import filtered_jit, plain_jit, batched


@filtered_jit
def filtered(x: jax.Array, n_layers):
    if x.sum() > 0:
        x = -x
    return jnp.reshape(x, (n_layers, -1))


@plain_jit
def plain(x, n_layers):
    return jnp.reshape(x, (n_layers, -1))


def per_example(x):
    if x > 0:
        return x
    return -x


mapped = batched(per_example)
"""


def test_declared_transforms_trace_as_the_table_says(tmp_path):
    """A project's own transforms in the framework table's words: a jit of every leaf makes `n_layers`
    traced (JAX203), one of array leaves leaves a Python int static while an annotated array is still
    traced (JAX201); a vmap-like one traces what it maps (JAX201)."""
    from jaxlint.engine.checker import check_source, enabled_rules

    write(tmp_path / "pyproject.toml", """[tool.jaxlint.extend-transforms]
"mylib.filtered_jit" = { mode = "jit", leaves = "arrays" }
"mylib.plain_jit" = { mode = "jit" }
"mylib.batched" = { mode = "vmap" }
""")
    settings = load_settings(tmp_path, known_codes())
    assert settings.declared_transforms() == {"mylib.filtered_jit": ("jit", "arrays"),
                                              "mylib.plain_jit": ("jit", "all"), "mylib.batched": ("vmap", "all")}
    found = {(f.start.line, f.code) for f in check_source(DECLARED, "a.py", settings, enabled_rules(settings, "a.py"))}
    assert found == {(8, "JAX201"), (15, "JAX203"), (19, "JAX201")}
    assert settings.fingerprint() != Settings(target_jax_version=settings.target_jax_version,
                                              root=settings.root).fingerprint()
    # undeclared, the same code is not known to be traced at all
    plain = Settings()
    assert [f for f in check_source(DECLARED, "a.py", plain, enabled_rules(plain, "a.py"))
            if f.code.startswith(("JAX2", "JAX3"))] == []
