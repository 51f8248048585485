"""Input descriptions as text: `"f32[3,4]"`, `"i32[]"`, `"key"`, and parameter annotations.

Pure Python (no JAX): the configuration validates example inputs with it, and the planner reads
annotations with it; the worker turns the descriptions into arrays (`inputs.py`).

A *spec* is one of
- an array: a dtype code and a shape, `f32[3,4]`, `i32[]`, `bool[2]`, `bf16[8]`;
- `key` (a typed PRNG key, `jax.random.key(0)`) or `key[4]` (a batch of four typed keys);
- `int`, `float`, `bool` (the Python scalars 3, 1.0 and True).
Anything else written in an example is passed as it is (a string stays a string).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

#: dtype code -> NumPy dtype name
DTYPES = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "bool": "bool", "c64": "complex64", "c128": "complex128",
}
_ARRAY = re.compile(r"^\s*([a-z]+\d*)\[\s*([0-9,\s]*)\]\s*$")
_KEY = re.compile(r"^\s*key(?:\[\s*(\d+)\s*\])?\s*$")
#: Looks like an attempt at an array spec (so a typo is an error rather than a string input).
_SPEC_LIKE = re.compile(r"^\s*[a-z]+\d*\[.*\]?\s*$")
PYTHON_SCALARS = {"int": 3, "float": 1.0, "bool": True}


class SpecError(ValueError):
    """A string that looks like an input spec but is not a valid one."""


@dataclass(frozen=True)
class Spec:
    kind: str  # "array", "key", or "python"
    dtype: str = "float32"
    shape: tuple[int, ...] = ()
    value: object = None  # for "python"

    def __str__(self) -> str:
        if self.kind == "key":
            return "key" if not self.shape else f"key[{self.shape[0]}]"
        if self.kind == "python":
            return repr(self.value)
        code = next((c for c, name in DTYPES.items() if name == self.dtype), self.dtype)
        return f"{code}[{','.join(map(str, self.shape))}]"


def parse_spec(text: str) -> Spec | None:
    """The spec a string describes; None when it is not a spec (a plain string argument).

    Raises SpecError for a string that looks like an array spec but has an unknown dtype or a
    malformed shape, so that `"f23[3]"` is reported instead of being passed as a string.
    """
    key = _KEY.match(text)
    if key:
        return Spec("key", shape=(int(key.group(1)),) if key.group(1) else ())
    if text.strip() in PYTHON_SCALARS:
        return Spec("python", value=PYTHON_SCALARS[text.strip()])
    match = _ARRAY.match(text)
    if match:
        code, dims = match.groups()
        if code not in DTYPES:
            raise SpecError(f"{text!r}: unknown dtype {code!r} (known: {', '.join(DTYPES)})")
        parts = [d.strip() for d in dims.split(",")] if dims.strip() else []
        if any(not p.isdigit() for p in parts):
            raise SpecError(f"{text!r}: the shape must be integers separated by commas, like f32[3,4]")
        return Spec("array", DTYPES[code], tuple(int(p) for p in parts))
    if _SPEC_LIKE.match(text) and "[" in text:
        raise SpecError(f"{text!r}: not a valid input spec (like \"f32[3,4]\", \"i32[]\" or \"key\")")
    return None


def check_example_value(value: object, where: str) -> None:
    """Raise SpecError for a malformed spec anywhere inside a declared example value."""
    if isinstance(value, str):
        try:
            parse_spec(value)
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None
    elif isinstance(value, list):
        for item in value:
            check_example_value(item, where)
    elif isinstance(value, dict):
        for item in value.values():
            check_example_value(item, where)


# -- annotations ---------------------------------------------------------------------------------
#: Annotation names that mean "an array of unknown shape" (the last dotted part is compared).
ARRAY_NAMES = frozenset({"Array", "ndarray", "ArrayLike", "ArrayImpl", "Tracer", "DeviceArray"})
KEY_NAMES = frozenset({"PRNGKeyArray", "KeyArray", "PRNGKey"})
#: jaxtyping dtype wrappers -> dtype (None: a key)
JAXTYPING_DTYPES = {
    "Float": "float32", "Float16": "float16", "Float32": "float32", "Float64": "float64", "BFloat16": "bfloat16",
    "Inexact": "float32", "Real": "float32", "Num": "float32", "Shaped": "float32",
    "Int": "int32", "Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64",
    "Integer": "int32", "UInt": "uint32", "UInt8": "uint8", "UInt32": "uint32",
    "Bool": "bool", "Complex": "complex64", "Complex64": "complex64", "Key": None,
}
_JAXTYPING = re.compile(r"^(?:[\w.]*\.)?(\w+)\[\s*([\w.]+)\s*,\s*(['\"])(.*)\3\s*\]$")
#: What a named dimension becomes: distinct small sizes, the same size for the same name.
NAMED_SIZES = (3, 4, 5, 6, 7)


@dataclass(frozen=True)
class AnnotationHint:
    """What an annotation says about a parameter: a fixed spec, or only "some array"."""

    spec: Spec | None = None
    array: bool = False  # an array of unknown shape: probes choose the shape


def read_annotation(text: str | None, sizes: dict[str, int]) -> AnnotationHint | None:
    """The input an annotation asks for; None when it says nothing usable.

    `sizes` maps the jaxtyping dimension names seen so far to their sizes, so that `"batch"`
    means the same size in every parameter of one function.
    """
    if not text:
        return None
    text = _unwrap_optional(text.strip().strip("'\""))
    last = text.rsplit(".", 1)[-1]
    if text in PYTHON_SCALARS:
        return AnnotationHint(Spec("python", value=PYTHON_SCALARS[text]))
    if last in KEY_NAMES:
        return AnnotationHint(Spec("key"))
    if last in ARRAY_NAMES:
        return AnnotationHint(array=True)
    match = _JAXTYPING.match(text)
    if match and match.group(1) in JAXTYPING_DTYPES:
        dtype = JAXTYPING_DTYPES[match.group(1)]
        shape = _dims(match.group(4), sizes)
        if shape is None:
            return AnnotationHint(array=dtype is not None) if dtype else AnnotationHint(Spec("key"))
        if dtype is None:
            return AnnotationHint(Spec("key", shape=shape[:1]))
        return AnnotationHint(Spec("array", dtype, shape))
    return None


def _unwrap_optional(text: str) -> str:
    match = re.match(r"^(?:typing\.)?Optional\[(.*)\]$", text)
    if match:
        return match.group(1).strip()
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):  # split on the `|` that are not inside brackets
        depth += char in "[("
        depth -= char in "])"
        if char == "|" and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    kept = [p for p in parts if p != "None"]
    return kept[0] if len(kept) == 1 else text


def _dims(text: str, sizes: dict[str, int]) -> tuple[int, ...] | None:
    """A jaxtyping shape string as sizes; None for one this cannot size (`*batch` in the middle …)."""
    shape = []
    for token in text.split():
        if token in ("...", "*batch") or token.startswith("*"):
            continue  # any number of leading dimensions: none
        token = token.lstrip("#").split("=")[0]
        if token.isdigit():
            shape.append(int(token))
        elif token == "_" or token.isidentifier():
            if token == "_":
                shape.append(2)
                continue
            if token not in sizes:
                sizes[token] = NAMED_SIZES[len(sizes) % len(NAMED_SIZES)]
            shape.append(sizes[token])
        else:
            return None
    return tuple(shape)
