"""Inspecting what user code returns or leaves behind: tracers, PRNG keys and their bits, and value
equality that holds for arrays, keys and NaNs alike."""
from __future__ import annotations

from typing import Any


def is_tracer(value: Any) -> bool:
    try:
        from jax.core import Tracer
    except ImportError:  # pragma: no cover - older layouts
        from jax._src.core import Tracer
    return isinstance(value, Tracer)


def short_aval(value: Any) -> str:
    """A tracer's abstract value in JAX's short form (`f32[3]`), "?" where it has none."""
    try:
        return str(value.aval.str_short())
    except Exception:  # noqa: BLE001
        return "?"


def is_key(value: Any) -> bool:
    try:
        import jax

        return jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key)
    except Exception:  # noqa: BLE001
        return False


def key_bits(key: Any) -> bytes | None:
    """The raw bits of a concrete key (typed or legacy uint32), None for a tracer."""
    import numpy as np

    if is_tracer(key):
        return None
    try:
        import jax

        data = jax.random.key_data(key) if is_key(key) else key
        array = np.asarray(data)
    except Exception:  # noqa: BLE001
        return None
    return repr((array.dtype.str, array.shape)).encode() + array.tobytes()


def leaves_equal(a: Any, b: Any) -> bool:
    """Same structure and the same values (keys by their bits, NaNs equal)."""
    import jax
    import numpy as np

    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    if tree_a != tree_b or len(leaves_a) != len(leaves_b):
        return False
    for x, y in zip(leaves_a, leaves_b):
        if is_tracer(x) or is_tracer(y):
            return False
        if is_key(x) or is_key(y):
            if key_bits(x) != key_bits(y):
                return False
            continue
        if hasattr(x, "shape") or hasattr(y, "shape"):
            try:
                ax, ay = np.asarray(x), np.asarray(y)
                if ax.shape != ay.shape:
                    return False
                if ax.dtype.kind in "fc" or ay.dtype.kind in "fc":
                    if not np.array_equal(ax, ay, equal_nan=True):
                        return False
                elif not np.array_equal(ax, ay):
                    return False
            except Exception:  # noqa: BLE001
                return False
            continue
        try:
            if bool(x != y):
                return False
        except Exception:  # noqa: BLE001
            return False
    return True


def find_tracers(value: Any, name: str, depth: int = 4, limit: int = 200) -> list[str]:
    """Paths (`name[0]`, `name['k']`, `name.attr`) at which `value` holds a JAX tracer."""
    import types

    found: list[str] = []
    seen: set[int] = set()
    budget = [limit]

    def walk(v: Any, path: str, level: int) -> None:
        if budget[0] <= 0 or id(v) in seen:
            return
        budget[0] -= 1
        if is_tracer(v):
            found.append(f"{path} = {type(v).__name__}({short_aval(v)})")
            return
        if level >= depth:
            return
        seen.add(id(v))
        if isinstance(v, (str, bytes, int, float, complex, bool, type(None))):
            return
        if isinstance(v, dict):
            for k, item in list(v.items())[:50]:
                walk(item, f"{path}[{k!r}]", level + 1)
        elif isinstance(v, (list, tuple, set, frozenset)) or type(v).__name__ == "deque":
            for i, item in enumerate(list(v)[:50]):
                walk(item, f"{path}[{i}]", level + 1)
        elif isinstance(v, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
            return
        elif hasattr(v, "__dict__") and not hasattr(v, "shape"):
            try:
                attrs = dict(vars(v))
            except TypeError:
                return
            for k, item in list(attrs.items())[:50]:
                walk(item, f"{path}.{k}", level + 1)

    walk(value, name, 0)
    return found
