"""The one line that says a finding needs a package that is not installed, and its count.

The worker writes it into the evidence of each finding whose function needs the package; the
summary counts the findings per package from the evidence ("install `optax` to confirm these 2
findings"), so the two must agree: both live here.
"""
from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Iterable

_INSTALL = re.compile(r"(install `[^`]+`(?: \(import name `[^`]+`\))?) to confirm this finding")

#: Import names whose distribution (what `pip install` takes) is named otherwise, for packages
#: common around JAX code. Consulted when the installed metadata cannot say (the package is missing).
KNOWN_DISTRIBUTIONS = {
    "absl": "absl-py", "sklearn": "scikit-learn", "skimage": "scikit-image", "cv2": "opencv-python",
    "PIL": "Pillow", "yaml": "PyYAML", "bs4": "beautifulsoup4", "attr": "attrs", "dateutil": "python-dateutil",
    "haiku": "dm-haiku", "tree": "dm-tree", "ml_collections": "ml-collections", "gin": "gin-config",
    "orbax": "orbax-checkpoint", "tensorflow_datasets": "tensorflow-datasets", "jax_md": "jax-md",
    "tensorflow_probability": "tensorflow-probability", "dotenv": "python-dotenv", "Crypto": "pycryptodome",
    "fitz": "PyMuPDF", "docx": "python-docx", "google.protobuf": "protobuf", "sentencepiece": "sentencepiece",
    "jraph": "jraph", "pytorch_lightning": "pytorch-lightning", "lightning": "lightning",
}


@functools.lru_cache(maxsize=None)
def distribution(package: str) -> str | None:
    """The distribution to install for the import name `package`: from the installed metadata
    when a distribution there provides it, else from the well-known names; None when unknown."""
    try:
        from importlib.metadata import packages_distributions

        installed = packages_distributions().get(package)
    except Exception:  # noqa: BLE001 - unreadable metadata: fall back to the known names
        installed = None
    if installed:
        return installed[0]
    return KNOWN_DISTRIBUTIONS.get(package)


def install_advice(package: str) -> str:
    """`install `absl-py` (import name `absl`)`, or `install `optax`` when the names agree or the
    distribution is not known (the import name is then the usual guess)."""
    found = distribution(package)
    if found and found.lower().replace("_", "-") != package.lower().replace("_", "-"):
        return f"install `{found}` (import name `{package}`)"
    return f"install `{found or package}`"


def needs_package(package: str, name: str, error: str) -> str:
    """Evidence for a finding whose function reads `name`, which `import package` failed to bind."""
    via = "" if name == package else f"`{name}`, from "
    return (f"needs {via}`{package}`, which is not installed ({error}): {install_advice(package)} "
            f"to confirm this finding")


def install_lines(evidence: Iterable[str]) -> list[str]:
    """One line per missing package, with the number of findings waiting for it."""
    counts = Counter(match.group(1) for text in evidence for match in [_INSTALL.search(text)] if match)
    return [f"{advice} to confirm {'this finding' if n == 1 else f'these {n} findings'}"
            for advice, n in sorted(counts.items())]
