"""The settings of the key-reuse analysis: `key-names` and `unknown-calls-consume-keys`."""
import pytest

from jaxlint.model.settings import Settings

SEED_PARAMETER = """\
import jax

def init(seed, shape):
    w = jax.random.normal(seed, shape)
    b = jax.random.normal(seed, shape[-1:])
    return w, b
"""
UNKNOWN_CALL = """\
import jax

def setup(model, x):
    key = jax.random.key(0)
    params = model.init(key, x)
    return params, jax.random.normal(key, x.shape)
"""


def key_findings(source, settings):
    from jaxlint.engine.checker import check_source, enabled_rules

    return [(f.start.line, f.code) for f in check_source(source, "model.py", settings, enabled_rules(settings, "model.py"))
            if f.code.startswith("JAX10")]


def test_key_names_setting_replaces_the_parameter_names(tmp_path):
    from jaxlint.frontends.config import load_settings
    from jaxlint.engine.registry import known_codes

    assert key_findings(SEED_PARAMETER, Settings()) == []
    (tmp_path / "pyproject.toml").write_text('[tool.jaxlint]\nkey-names = ["seed", "*_key"]\n', encoding="utf-8")
    settings = load_settings(tmp_path, known_codes())
    assert settings.key_names == ("seed", "*_key")
    assert key_findings(SEED_PARAMETER, settings) == [(5, "JAX101")]
    # the list replaces the default one: a parameter named `key` is no longer taken for a key
    assert key_findings(SEED_PARAMETER.replace("seed", "key"), Settings()) == [(5, "JAX101")]
    assert key_findings(SEED_PARAMETER.replace("seed", "key"), settings) == []


def test_unknown_calls_can_be_taken_as_not_consuming(tmp_path):
    from jaxlint.frontends.config import load_settings
    from jaxlint.engine.registry import known_codes

    assert key_findings(UNKNOWN_CALL, Settings()) == [(6, "JAX101")]
    (tmp_path / "pyproject.toml").write_text("[tool.jaxlint]\nunknown-calls-consume-keys = false\n", encoding="utf-8")
    settings = load_settings(tmp_path, known_codes())
    assert settings.unknown_calls_consume_keys is False
    assert key_findings(UNKNOWN_CALL, settings) == []


@pytest.mark.parametrize("text", ['key-names = "key"', 'key-names = ["my key"]', 'key-names = ["*"]',
                                  'unknown-calls-consume-keys = "no"', 'strict-key-reuse = 1'])
def test_key_settings_are_validated(tmp_path, text):
    from jaxlint.model.settings import ConfigError
    from jaxlint.frontends.config import load_settings
    from jaxlint.engine.registry import known_codes

    (tmp_path / "pyproject.toml").write_text(f"[tool.jaxlint]\n{text}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="key-names|unknown-calls-consume-keys|strict-key-reuse"):
        load_settings(tmp_path, known_codes())


OVERRIDDEN_METHOD = """\
import jax

class Policy:
    def noise(self, key, shape):
        return jax.random.normal(key, shape)

    def act(self, key, x):
        x = x + self.noise(key, x.shape)
        return x, jax.random.uniform(key)

class Greedy(Policy):
    def noise(self, key, shape):
        return 0.0
"""


def test_self_method_is_followed_unless_a_subclass_overrides_it():
    # `self.noise` may be Greedy's, which draws nothing: what `self.noise(key)` does is not known
    assert key_findings(OVERRIDDEN_METHOD, Settings()) == []
    without_subclass = OVERRIDDEN_METHOD.split("class Greedy")[0]
    assert key_findings(without_subclass, Settings()) == [(9, "JAX101")]
