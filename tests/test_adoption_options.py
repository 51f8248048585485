"""Options for adopting jaxlint on an existing code base: what is checked (`--show-files`), with
which settings (`--show-settings`, `--config`, `--isolated`), more exclusions (`extend-exclude`,
`--extend-exclude`), and which findings fail the run (`--severity`)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from jaxlint.frontends.cli import main

NP_ALIAS = "import jax.numpy as np\n"  # JAX601, a warning
KEY_REUSE = ("import jax\n\nkey = jax.random.key(0)\na = jax.random.normal(key, (2,))\n"
             "b = jax.random.normal(key, (2,))\n")  # JAX101, an error


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.jaxlint]\nextend-exclude = ["generated/"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "style.py").write_text(NP_ALIAS)
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "out.py").write_text(KEY_REUSE)
    (tmp_path / "other.toml").write_text('[tool.jaxlint]\nignore = ["JAX601"]\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args):
    return CliRunner().invoke(main, ["check", *args])


def test_show_files_lists_what_a_run_would_check(tree):
    result = invoke("--show-files")
    assert result.exit_code == 0 and result.output.splitlines() == ["pkg/style.py"]
    assert invoke("--show-files", "--isolated").output.splitlines() == ["generated/out.py", "pkg/style.py"]
    assert invoke("--show-files", "--extend-exclude", "pkg/").output.splitlines() == []


def test_show_settings_names_the_configuration_and_its_values(tree):
    result = invoke("--show-settings")
    assert result.exit_code == 0
    header, *lines = result.output.splitlines()
    assert header == f"# configuration: {tree / 'pyproject.toml'}"
    assert any(line.startswith('exclude = ["generated/"] ') and line.endswith(f"  # {tree / 'pyproject.toml'}")
               for line in lines)
    other = json.loads(invoke("--show-settings", "--config", "other.toml", "--output-format", "json").output)
    assert other["configuration"] == str(tree / "other.toml")
    assert other["settings"]["ignore"] == {"value": ["JAX601"], "source": str(tree / "other.toml")}


def test_show_settings_says_where_each_setting_comes_from(tree):
    shown = json.loads(invoke("--show-settings", "--ignore", "JAX602", "--extend-select", "JAX001",
                              "--output-format", "json").output)["settings"]
    config = str(tree / "pyproject.toml")
    assert shown["exclude"] == {"value": ["generated/"], "source": config}
    assert shown["ignore"] == {"value": ["JAX602"], "source": "command line (--ignore)"}
    assert shown["extend-select"]["source"] == "command line (--extend-select)"
    assert shown["select"] == {"value": ["JAX"], "source": "default"}
    assert shown["root"] == {"value": str(tree), "source": "the configuration file's directory"}
    isolated = json.loads(invoke("--show-settings", "--isolated", "--output-format", "json").output)
    assert isolated["configuration"] is None and isolated["settings"]["exclude"]["source"] == "default"
    lines = invoke("--show-settings", "--ignore", "JAX602").output.splitlines()
    assert any(line.startswith('ignore = ["JAX602"]') and line.endswith("# command line (--ignore)") for line in lines)


def test_config_and_isolated_choose_the_configuration(tree):
    assert invoke("--config", "other.toml", "pkg").exit_code == 0  # JAX601 ignored there
    assert invoke("pkg").exit_code == 1
    isolated = invoke("--isolated", "--quiet").output.splitlines()
    assert [line.split(":")[0] for line in isolated] == ["generated/out.py", "pkg/style.py"]  # generated/ too
    missing = invoke("--config", "nowhere.toml")
    assert missing.exit_code == 2 and "no such configuration file" in missing.output
    assert invoke("--config", "other.toml", "--isolated").exit_code == 2


def test_severity_sets_which_findings_fail_the_run(tree):
    warning_only = invoke("--severity", "error", "--quiet", "pkg")
    assert warning_only.exit_code == 0 and "JAX601" in warning_only.output  # still printed
    errors = invoke("--severity", "error", "--quiet", "--isolated")
    assert errors.exit_code == 1
    assert invoke("--severity", "warning", "--quiet", "pkg").exit_code == 1


def test_a_bad_extend_exclude_pattern_is_a_configuration_error(tree):
    (tree / "pyproject.toml").write_text('[tool.jaxlint]\nextend-exclude = ["!"]\n')
    result = invoke("pkg")
    assert result.exit_code == 2 and "extend-exclude" in result.output
