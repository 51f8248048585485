"""What to install for an extra (`server`, `runtime`), said from what the user has.

jaxlint's distribution is not on the package index, so `pip install 'DIST[server]'` would fail.
The hint names the extra's own requirements, read from the installed distribution's metadata
(they are on the index), and, where the distribution was installed from a directory (a checkout,
PEP 610's `direct_url.json`), the command that reinstalls it from there with the extra.
"""
from __future__ import annotations

import json
import re
import shlex
from urllib.parse import unquote, urlparse

#: the import package whose distribution is looked up
PACKAGE = "jaxlint"
_EXTRA_MARKER = re.compile(r"""\s*;\s*(?:\(.*\)\s*and\s*)?extra\s*==\s*['"]([^'"]+)['"]\s*$""")


def extra_hint(extra: str) -> str:
    """`pip install 'pygls<3,>=2.0' 'lsprotocol>=2025.0.0'` (the `server` extra of jax-sharp-bits;
    from its checkout: `pip install -e '/src/jaxlint[server]'`), or as much of it as can be known."""
    distribution = _distribution()
    if distribution is None:
        return f"install jaxlint with its `{extra}` extra (`pip install '.[{extra}]'` in a checkout of jaxlint)"
    requirements = extra_requirements(distribution, extra)
    name = distribution.metadata["Name"]
    parts = []
    if requirements:
        parts.append("pip install " + " ".join(shlex.quote(r) for r in requirements))
    source = installed_from(distribution)
    if source is not None:
        directory, editable = source
        parts.append(f"or reinstall from the checkout it came from: pip install {'-e ' if editable else ''}"
                     f"{shlex.quote(f'{directory}[{extra}]')}")
    if not parts:
        return f"install the `{extra}` extra of {name}"
    return f"{parts[0]} (the `{extra}` extra of {name})" + (f", {parts[1]}" if len(parts) > 1 else "")


def extra_requirements(distribution, extra: str) -> list[str]:
    """The requirements the distribution declares for `extra`, without their markers."""
    found = []
    for requirement in distribution.requires or ():
        match = _EXTRA_MARKER.search(requirement)
        if match and match.group(1) == extra:
            found.append(requirement[:match.start()].strip())
    return found


def installed_from(distribution) -> tuple[str, bool] | None:
    """(directory, editable) when the distribution was installed from a local directory."""
    try:
        text = distribution.read_text("direct_url.json")
        data = json.loads(text) if text else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("dir_info"), dict):
        return None
    url = urlparse(str(data.get("url", "")))
    if url.scheme != "file":
        return None
    return unquote(url.path), bool(data["dir_info"].get("editable"))


def _distribution():
    """The installed distribution that provides the `jaxlint` command (its entry point names this
    package), whatever it is called and however it was installed (an editable install lists no
    files for `packages_distributions`)."""
    from importlib import metadata

    try:
        for entry in metadata.entry_points(group="console_scripts"):
            if entry.value.split(":")[0].split(".")[0] == PACKAGE and entry.dist is not None:
                return entry.dist
        names = metadata.packages_distributions().get(PACKAGE) or []
        return metadata.distribution(names[0]) if names else None
    except (metadata.PackageNotFoundError, OSError, ValueError):
        return None
