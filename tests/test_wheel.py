"""The wheel built from this tree holds every subpackage and the rule catalogue, and works on its own.

CI installs jaxlint non-editable, so a module or a data file that the build leaves out only shows
there. The wheel is built once (pip fetches the build backend when it is not cached); the checks
then run the unpacked wheel in a separate process, without this checkout on the path.
"""
from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
#: what pip says when it cannot download the build backend: no network, nothing cached
OFFLINE = ("No matching distribution found", "Could not find a version", "Failed to establish a new connection")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
                           capture_output=True, text=True, timeout=600)
    if build.returncode != 0 and any(message in build.stderr + build.stdout for message in OFFLINE):
        pytest.skip(f"cannot build a wheel here (the build backend cannot be fetched): {build.stderr[-300:]}")
    assert build.returncode == 0, build.stderr
    wheels = list(out.glob("jax_sharp_bits-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def unpacked(wheel, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    return target


def _names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_the_wheel_holds_every_module_and_data_file(wheel):
    names = _names(wheel)
    package = SRC / "jaxlint"
    expected = {p.relative_to(SRC).as_posix() for p in package.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".tsv")}
    packages = {p.parent.relative_to(SRC).as_posix() for p in package.rglob("__init__.py")}
    assert {"jaxlint/model", "jaxlint/engine", "jaxlint/rules", "jaxlint/runtime/behaviour"} <= packages
    assert expected - names == set()


def test_the_wheel_carries_the_rule_catalogue_where_the_catalogue_looks(wheel):
    names = _names(wheel)
    entries = sorted(p.name for p in (ROOT / "rules").glob("*.toml"))
    assert entries
    assert [e for e in entries if f"jaxlint/catalogue/rules/{e}" not in names] == []


def _run(unpacked: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(unpacked)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_the_unpacked_wheel_reads_its_own_catalogue(unpacked, tmp_path):
    code = ("import jaxlint, jaxlint.catalogue.rule_docs as docs; "
            "print(jaxlint.__file__); print(docs.catalogue_dir()); print(len(docs.load_catalogue()))")
    result = _run(unpacked, "-c", code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    module_file, catalogue, count = result.stdout.split("\n")[:3]
    assert Path(module_file).is_relative_to(unpacked)
    assert Path(catalogue) == unpacked / "jaxlint" / "catalogue" / "rules"
    assert int(count) == len(list((ROOT / "rules").glob("*.toml")))


def test_the_entry_points_name_importable_objects(wheel, unpacked, tmp_path):
    info = next(name for name in _names(wheel) if name.endswith(".dist-info/entry_points.txt"))
    parser = configparser.ConfigParser()
    parser.read(unpacked / info)
    targets = [value for section in parser.sections() for value in parser[section].values()]
    assert "jaxlint.frontends.cli:main" in targets
    for target in targets:
        module, _, attribute = target.partition(":")
        result = _run(unpacked, "-c", f"import {module} as m; assert callable(m.{attribute})", cwd=tmp_path)
        assert result.returncode == 0, (target, result.stderr)


def test_the_unpacked_wheel_finds_what_the_checkout_finds(unpacked):
    arguments = ["-m", "jaxlint", "check", "--no-cache", "--output-format", "json", "--exit-zero", "examples"]
    from_wheel = _run(unpacked, *arguments)
    from_checkout = _run(SRC, *arguments)
    assert from_wheel.returncode == 0, from_wheel.stderr
    assert json.loads(from_wheel.stdout) == json.loads(from_checkout.stdout)
    assert json.loads(from_wheel.stdout), "the examples have findings"


def test_the_distribution_is_named_so_that_the_package_index_name_is_not_taken_for_it(wheel):
    """`jaxlint` on the package index is another program: this one is `jax-sharp-bits`, and still
    installs the `jaxlint` command and package."""
    names = _names(wheel)
    metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
    with zipfile.ZipFile(wheel) as archive:
        fields = archive.read(metadata).decode("utf-8").split("\n\n")[0].splitlines()
        scripts = archive.read(metadata.replace("METADATA", "entry_points.txt")).decode("utf-8")
    assert "Name: jax-sharp-bits" in fields
    assert "jaxlint = jaxlint.frontends.cli:main" in scripts
    assert "jaxlint/__init__.py" in names
