"""The shipped deprecated-API table (src/jaxlint/catalogue/data/deprecations.tsv) that rule JAX602 reads."""
from __future__ import annotations

import csv
import importlib.util
import inspect
import re
import warnings
from pathlib import Path

import pytest

from installed import resolve

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "src" / "jaxlint" / "catalogue" / "data"
TABLE = DATA / "deprecations.tsv"
CURATED = DATA / "deprecations-curated.tsv"
SOURCE = next((path for path in (ROOT.parent / "shared" / "data" / "jax-deprecations.tsv",
                                  Path("/work/shared/data/jax-deprecations.tsv")) if path.exists()),
              ROOT.parent / "shared" / "data" / "jax-deprecations.tsv")
COLUMNS = ["symbol", "kind", "replacement", "deprecated_in", "removed_in", "replacement_since", "mechanical", "advice",
           "source"]
KINDS = {"attribute", "module", "method", "property", "keyword", "positional", "config", "context"}
VERSION = re.compile(r"^\d+(\.\d+)*$")
DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _rows(path: Path = TABLE) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        assert reader.fieldnames == COLUMNS
        return list(reader)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


ROWS = _rows()


def _load_build_script():
    spec = importlib.util.spec_from_file_location("build_deprecations", ROOT / "scripts" / "build_deprecations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# -- (a) shape of the table -------------------------------------------------------------------------
def test_every_row_is_well_formed():
    assert len(ROWS) > 400
    for row in ROWS:
        assert None not in row.values(), row  # no row with too many or too few cells
        assert row["kind"] in KINDS, row
        assert row["mechanical"] in {"yes", "no"}, row
        for column in ("deprecated_in", "removed_in", "replacement_since"):
            assert row[column] == "" or VERSION.match(row[column]), (column, row)
        assert row["deprecated_in"], row
        if row["removed_in"]:  # equal: removed without a deprecation period (`jax.api` in 0.2.21)
            assert _version(row["removed_in"]) >= _version(row["deprecated_in"]), row
        if row["mechanical"] == "yes":
            assert row["replacement"], row
            assert row["replacement_since"], row
        else:
            assert row["advice"], row
        if not row["replacement"]:
            assert row["advice"], row
        assert "\t" not in row["advice"] and "\n" not in row["advice"]
        assert row["source"], row  # where the versions come from: a CHANGELOG entry, a release tag


def test_curated_sources_name_a_release():
    """A curated source points at something one can look up: a CHANGELOG entry of a named release, a
    release tag, or the `_deprecations` tables of named releases."""
    named = re.compile(r"(jax|jaxlib) \d+\.\d+\.\d+|jax-v\d+\.\d+\.\d+")
    for row in _rows(CURATED):
        if row["source"]:
            assert named.search(row["source"]), row

def test_symbols_and_replacements_are_written_the_way_the_rule_matches_them():
    for row in ROWS:
        symbol, kind, replacement = row["symbol"], row["kind"], row["replacement"]
        if kind in ("keyword", "config"):  # `function:keyword`, `jax.config.update:flag`
            function, _, keyword = symbol.partition(":")
            assert DOTTED.match(function) and keyword.isidentifier(), row
            assert replacement == "" or replacement.isidentifier(), row
            continue
        if kind == "positional":  # `function:index`, the parameter at that index named by `replacement`
            function, _, index = symbol.partition(":")
            assert DOTTED.match(function) and index.isdigit() and int(index) > 0, row
            assert replacement.isidentifier(), row
            continue
        assert DOTTED.match(symbol), row
        assert not symbol.rpartition(".")[2].startswith("_") or symbol == "jax.interpreters.xla._DeviceArray", row
        if kind in ("method", "property"):
            assert symbol.startswith("Array."), row
        assert replacement == "" or DOTTED.match(replacement), row
        assert not replacement.startswith("jnp."), row


def test_no_duplicate_symbols():
    symbols = [row["symbol"] for row in ROWS]
    assert len(symbols) == len(set(symbols))
    assert symbols == sorted(symbols)


def test_current_apis_are_not_listed():
    """Names that are not deprecated must never be reported (they appear in the negative fixtures)."""
    symbols = {row["symbol"] for row in ROWS}
    for name in ("jax.tree_util.tree_map", "jax.tree_util.tree_leaves", "jax.tree.map", "jax.config",
                 "jax.process_count", "jax.numpy.clip", "jax.jit", "jax.Array", "Array.devices"):
        assert name not in symbols


def test_extra_entries_are_present():
    table = {row["symbol"]: row for row in ROWS}
    assert table["jax.tree_map"]["replacement"] == "jax.tree.map"
    assert table["jax.tree_map"]["mechanical"] == "yes"
    assert table["jax.tree_util.tree_multimap"]["replacement"] == "jax.tree_util.tree_map"
    assert table["jax.host_count"]["replacement"] == "jax.process_count"
    assert table["jax.numpy.clip:a_min"]["replacement"] == "min"
    assert table["jax.numpy.clip:a_max"]["kind"] == "keyword"
    assert table["Array.device"]["kind"] == "method"
    assert table["Array.device"]["mechanical"] == "no"
    assert table["jax.experimental.stax"]["kind"] == "module"
    assert table["jax.random.shuffle"]["mechanical"] == "no"
    assert table["jax.experimental.pjit.pjit"]["mechanical"] == "no"
    assert table["jax.numpy.round_"]["replacement"] == "jax.numpy.round"
    assert table["jax.dlpack.SUPPORTED_DTYPES"]["replacement"] == "jax.dlpack.is_supported_dtype"
    for symbol in ("jax.config.config", "jax.interpreters.xla.DeviceArray", "jax.numpy.DeviceArray",
                   "jax.experimental.maps", "jax.experimental.maps.xmap", "jax.abstract_arrays",
                   "jax.linear_util", "jax.experimental.host_callback", "jax.random.KeyArray", "jax.host_ids"):
        assert symbol in table


def test_the_loader_reads_the_table():
    from jaxlint.catalogue.deprecations import load_table

    table = load_table(TABLE)
    assert table.lookup("jax.tree_map").replacement == "jax.tree.map"
    assert table.lookup("jax.experimental.stax.Dense").symbol == "jax.experimental.stax"
    assert table.lookup("jax.tree_util.tree_map") is None
    assert table.methods["device"].symbol == "Array.device"
    assert table.keywords["jax.numpy.clip"]["a_min"].replacement == "min"


# -- (b) the committed file is what the script produces ---------------------------------------------
@pytest.mark.skipif(not SOURCE.exists(), reason=f"{SOURCE} is absent")
def test_regenerating_yields_the_committed_file(tmp_path):
    build = _load_build_script()
    output = tmp_path / "deprecations.tsv"
    assert build.main([str(SOURCE), "--output", str(output)]) == 0
    assert output.read_bytes() == TABLE.read_bytes()
    again = tmp_path / "again.tsv"
    build.main([str(SOURCE), "--output", str(again)])
    assert again.read_bytes() == output.read_bytes()


@pytest.mark.skipif(not SOURCE.exists(), reason=f"{SOURCE} is absent")
def test_every_public_input_symbol_is_in_the_table():
    with open(SOURCE, encoding="utf-8", newline="") as handle:
        source = [row["symbol"] for row in csv.DictReader(handle, delimiter="\t")]
    table = {row["symbol"] for row in ROWS}
    missing = [s for s in source if s not in table and not s.rpartition(".")[2].startswith("_")]
    assert missing == []


def test_curated_rows_refer_to_known_columns_and_kinds():
    for row in _rows(CURATED):
        assert row["kind"] in {""} | KINDS, row
        assert row["mechanical"] in {"", "yes", "no"}, row


# -- (c) against the installed JAX ------------------------------------------------------------------


@pytest.mark.jax
def test_mechanical_replacements_exist_in_the_installed_jax():
    jax = pytest.importorskip("jax")
    installed = _version(re.match(r"[\d.]+", jax.__version__).group(0).rstrip("."))
    checked, failures = 0, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in ROWS:
            if row["kind"] != "attribute" and row["kind"] != "module" or row["mechanical"] != "yes":
                continue
            if _version(row["replacement_since"]) > installed:
                continue
            try:
                resolve(row["replacement"])
            except (ImportError, AttributeError) as error:
                failures.append(f"{row['symbol']} -> {row['replacement']}: {error!r}")
            checked += 1
    assert failures == []
    assert checked > 50


@pytest.mark.jax
def test_removed_symbols_are_gone_from_the_installed_jax():
    """A row that says it was removed before the installed version must not resolve any more."""
    jax = pytest.importorskip("jax")
    installed = _version(re.match(r"[\d.]+", jax.__version__).group(0).rstrip("."))
    still_there = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in ROWS:
            if row["kind"] not in ("attribute", "module") or not row["removed_in"]:
                continue
            if _version(row["removed_in"]) > installed:
                continue
            try:
                resolve(row["symbol"])
            except (ImportError, AttributeError, TypeError):
                continue
            still_there.append(row["symbol"])
    assert still_there == []


@pytest.mark.jax
def test_removed_array_attributes_are_gone_and_their_replacements_work():
    pytest.importorskip("jax")
    import jax.numpy as jnp

    array = jnp.arange(4.0)
    checked = 0
    for row in ROWS:
        if row["kind"] not in ("method", "property") or not row["removed_in"]:
            continue
        name = row["symbol"].rpartition(".")[2]
        if name == "device":  # a property again since 0.4.31: calling it is what fails
            assert not callable(array.device)
        else:
            assert not hasattr(array, name), row["symbol"]
        if row["replacement"]:
            assert hasattr(array, row["replacement"].rpartition(".")[2]), row
        checked += 1
    assert checked >= 4
    assert array.addressable_data(0).tolist() == [0.0, 1.0, 2.0, 3.0]  # what `.device_buffer` gave
    assert [shard.data.shape for shard in array.addressable_shards] == [(4,)]


def _keyword_is_gone(function, keyword: str) -> bool:
    """The function no longer takes `keyword=`: no such parameter, a positional-only one, or one kept
    only to raise a deprecation error."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    found = parameters.get(keyword)
    if found is None or found.kind is inspect.Parameter.POSITIONAL_ONLY:
        return True
    return "deprecat" in repr(found.default).lower() or "deprecat" in str(found.annotation).lower()


@pytest.mark.jax
def test_removed_keywords_are_gone_and_renamed_ones_exist():
    """Each keyword row against the installed JAX: a removed keyword is no longer taken by the function
    (where the function still exists), and a rename's new keyword is."""
    pytest.importorskip("jax")
    installed = _installed_version()
    gone, missing_new, checked = [], [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in ROWS:
            if row["kind"] != "keyword":
                continue
            function_name, _, keyword = row["symbol"].partition(":")
            try:
                function = resolve(function_name)
            except (ImportError, AttributeError):
                continue  # the whole function went away (`pjit` keywords): its own row says so
            checked += 1
            removed = bool(row["removed_in"]) and _version(row["removed_in"]) <= installed
            if removed and not _keyword_is_gone(function, keyword):
                gone.append(row["symbol"])
            if not removed and _keyword_is_gone(function, keyword):
                gone.append(f"{row['symbol']} is gone, but the table says it is still accepted")
            if row["mechanical"] == "yes" and _version(row["replacement_since"]) <= installed:
                if row["replacement"] not in inspect.signature(function).parameters:
                    missing_new.append(row["symbol"])
    assert gone == [] and missing_new == []
    assert checked >= 10


def _installed_version() -> tuple[int, ...]:
    import jax

    return _version(re.match(r"[\d.]+", jax.__version__).group(0).rstrip("."))


@pytest.mark.jax
@pytest.mark.parametrize("keyword", ["backend", "device"])
def test_jit_backend_and_device_still_warn(keyword):
    """`jit(backend=)` / `jit(device=)`: deprecated (a warning since 0.4.4), not removed."""
    jax = pytest.importorskip("jax")
    value = "cpu" if keyword == "backend" else jax.devices("cpu")[0]
    with pytest.warns(DeprecationWarning, match="backend and device argument on jit is deprecated"):
        compiled = jax.jit(lambda x: x + 1, **{keyword: value})
        assert int(compiled(1)) == 2


@pytest.mark.jax
def test_pmap_backend_is_not_deprecated():
    """`pmap(backend=)` and `pmap(devices=)` are current: the table must not list them."""
    jax = pytest.importorskip("jax")
    parameters = inspect.signature(jax.pmap).parameters
    assert "backend" in parameters and "devices" in parameters
    assert not any(row["symbol"].startswith("jax.pmap:") and row["symbol"] != "jax.pmap:global_arg_shapes"
                   for row in ROWS)


@pytest.mark.jax
def test_clip_accepts_min_and_max_keywords():
    pytest.importorskip("jax")
    import jax.numpy as jnp

    parameters = inspect.signature(jnp.clip).parameters
    assert "min" in parameters and "max" in parameters
    assert jnp.clip(jnp.arange(5), min=1, max=3).tolist() == [1, 1, 2, 3, 3]


@pytest.mark.jax
def test_mechanical_function_renames_keep_the_signature():
    """Where both names still exist in the installed JAX, a mechanical rename must accept the same parameters."""
    pytest.importorskip("jax")
    compared = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in ROWS:
            if row["kind"] != "attribute" or row["mechanical"] != "yes":
                continue
            try:
                old, new = resolve(row["symbol"]), resolve(row["replacement"])
            except (ImportError, AttributeError, TypeError):
                continue
            if not (inspect.isfunction(old) and inspect.isfunction(new)):
                continue
            old_params = list(inspect.signature(old).parameters)
            new_params = list(inspect.signature(new).parameters)
            if old_params != ["args", "kwargs"]:  # a forwarding wrapper says nothing
                assert old_params == new_params, row["symbol"]
            compared += 1
    assert compared >= 1


@pytest.mark.jax
def test_positional_rows_name_parameters_that_are_keywords_now():
    """Each positional row against the installed JAX: where JAX removed the positional form, the
    parameter is keyword-only (or only reachable through a deprecated `*args`); the row's name is
    the parameter a keyword rewrite must use."""
    pytest.importorskip("jax")
    installed = _installed_version()
    checked = 0
    for row in ROWS:
        if row["kind"] != "positional":
            continue
        function_name, _, index = row["symbol"].partition(":")
        parameters = inspect.signature(resolve(function_name)).parameters
        assert parameters[row["replacement"]].kind is inspect.Parameter.KEYWORD_ONLY, row
        positional = [p for p in parameters.values()
                      if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        assert len(positional) <= int(index), row
        if row["removed_in"] and _version(row["removed_in"]) <= installed:
            assert not any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters.values()), row
        checked += 1
    assert checked >= 5


@pytest.mark.jax
def test_positional_copy_of_jnp_array_warns_and_the_keyword_form_does_not():
    pytest.importorskip("jax")
    import jax.numpy as jnp

    with pytest.warns(DeprecationWarning):
        jnp.array([1.0], jnp.float32, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jnp.array([1.0], jnp.float32, copy=True).tolist() == [1.0]


@pytest.mark.jax
def test_positional_precision_of_lax_dot_and_options_of_jit_raise():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    x = jnp.ones((2, 2))
    with pytest.raises(TypeError):
        jax.lax.dot(x, x, jax.lax.Precision.HIGHEST)
    assert jax.lax.dot(x, x, precision=jax.lax.Precision.HIGHEST).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    with pytest.raises(TypeError):
        jax.jit(lambda a, n: a * n, (1,))


@pytest.mark.jax
def test_removed_configuration_flags_raise():
    jax = pytest.importorskip("jax")
    installed = _installed_version()
    checked = 0
    for row in ROWS:
        if row["kind"] != "config" or _version(row["removed_in"]) > installed:
            continue
        with pytest.raises(AttributeError):
            jax.config.update(row["symbol"].partition(":")[2], True)
        checked += 1
    assert checked >= 5


@pytest.mark.jax
def test_pure_callback_passes_vectorized_on_to_the_callback():
    """Why `pure_callback(vectorized=...)` is reported: since its removal it is one of the callback's
    own keyword arguments."""
    jax = pytest.importorskip("jax")
    import numpy as np

    seen = {}

    def callback(x, **options):
        seen.update(options)
        return np.asarray(x)

    spec = jax.ShapeDtypeStruct((), np.float32)
    jax.pure_callback(callback, spec, np.float32(1.0), vectorized=True)
    assert seen == {"vectorized": True}


@pytest.mark.jax
def test_entering_a_mesh_warns_and_set_mesh_does_not():
    jax = pytest.importorskip("jax")

    mesh = jax.make_mesh((1,), ("x",))
    assert isinstance(mesh, jax.sharding.Mesh)
    assert {row["symbol"] for row in ROWS if row["kind"] == "context"} == {"jax.sharding.Mesh", "jax.make_mesh"}
    with pytest.warns(DeprecationWarning, match="set_mesh"):
        with mesh:
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with jax.set_mesh(mesh):
            pass
