"""Regenerate src/jaxlint/catalogue/data/star-exports.tsv: the names `from m import *` binds, for
JAX's public modules, NumPy's and a few of the standard library's.

Each Python interpreter given (default: this one) runs `from m import *` for each module, in a
fresh process (what an earlier import loaded changes a package's attributes), and reports the
names bound and, for a module object, the module it is (`jnp` in `jax.example_libraries.stax` is
`jax.numpy`). A name every interpreter that has the module binds is bound in all versions; a name
only some bind is marked `some`, and so are the names JAX's deprecation table
(catalogue/data/deprecations.tsv) lists directly under a module without `__all__`: older versions
had them as plain attributes, which a star import binds.

Usage: python scripts/build_star_exports.py [--python PATH ...] [--output PATH]
(give the interpreters of environments with other versions of JAX and NumPy installed, e.g. JAX
0.4 with NumPy 1.26 beside the newest of both.)
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "src" / "jaxlint" / "catalogue" / "data"
OUTPUT = DATA / "star-exports.tsv"
DEPRECATIONS = DATA / "deprecations.tsv"

MODULES = (
    "jax", "jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.random", "jax.lax", "jax.nn",
    "jax.nn.initializers", "jax.scipy", "jax.scipy.special", "jax.scipy.stats", "jax.scipy.linalg",
    "jax.scipy.signal", "jax.tree_util", "jax.tree", "jax.example_libraries.stax",
    "jax.example_libraries.optimizers", "jax.image", "jax.ops", "jax.debug", "jax.dtypes", "jax.sharding",
    "numpy", "numpy.random", "numpy.linalg", "numpy.fft",
    "math", "random", "time", "typing", "functools", "itertools",
)

PROBE = """
import json, sys, types
module = sys.argv[1]
namespace = {}
try:
    exec(f"from {module} import *", namespace)
except ImportError:
    print("null")
    raise SystemExit
namespace.pop("__builtins__", None)
has_all = hasattr(sys.modules[module], "__all__")
names = {name: value.__name__ if isinstance(value, types.ModuleType) else "" for name, value in namespace.items()}
print(json.dumps({"all": has_all, "names": names}))
"""


def probe(python: str, module: str) -> dict | None:
    result = subprocess.run([python, "-c", PROBE, module], capture_output=True, text=True, timeout=300,
                            env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    if result.returncode != 0:
        raise SystemExit(f"{python} {module}: {result.stderr}")
    return json.loads(result.stdout)


def deprecated_attributes() -> dict[str, set[str]]:
    """module -> the attributes and modules the deprecation table lists directly under it."""
    found: dict[str, set[str]] = {}
    with open(DEPRECATIONS, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["kind"] in ("attribute", "module"):
                module, _, name = row["symbol"].rpartition(".")
                if module and not name.startswith("_"):
                    found.setdefault(module, set()).add(name)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", action="append", default=[])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    options = parser.parse_args()
    pythons = options.python or [sys.executable]
    deprecated = deprecated_attributes()
    rows = []
    for module in MODULES:
        seen = [found for found in (probe(python, module) for python in pythons) if found is not None]
        if not seen:
            raise SystemExit(f"no interpreter has {module}")
        every = set.intersection(*(set(found["names"]) for found in seen))
        objects: dict[str, set[str]] = {}
        for found in seen:
            for name, target in found["names"].items():
                objects.setdefault(name, set()).add(target if target != f"{module}.{name}" else "")
        some = set(objects) - every
        if not any(found["all"] for found in seen):
            for name in deprecated.get(module, ()):
                if name not in objects:
                    objects[name] = {""}
                    some.add(name)
        for name in sorted(objects):
            targets = objects[name]
            rows.append([module, name, targets.pop() if len(targets) == 1 else "", "some" if name in some else "all"])
    with open(options.output, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(["module", "name", "object", "versions"])
        writer.writerows(rows)
    print(f"{len(rows)} names of {len(MODULES)} modules -> {options.output}")


if __name__ == "__main__":
    main()
