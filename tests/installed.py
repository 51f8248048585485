"""What a dotted name names in the installed libraries, for the tests that check tables against them."""
import importlib


def resolve(dotted: str):
    """The object `dotted` names (`jax.numpy.zeros`, `flax.nnx.Rngs`): the longest importable module
    prefix, then its attributes. AttributeError when the installed version has no such object."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            found = getattr(found, part)
        return found
    raise AttributeError(dotted)
