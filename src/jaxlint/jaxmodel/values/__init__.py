"""The JAX value domain: the lattice of what a value is (`lattice`), the tables of JAX's API it reads
(`tables`), and its transfer over one scope on the generic interpreter (`flow`)."""
from .flow import NOTHING, PLAIN, CallFacts, KindView, State, ValueFlow, as_value, wrapper_of
from .lattice import (BOTTOM, CONCRETE_ARRAY, MAY, MUST, NO, OF_KIND, STATIC, TRACED_ARRAY, TRACED_CONTAINER,
                      OTHER_ATTRIBUTES, TRACED_MASK, TRACED_PARAM, TRACED_TREE, UNKNOWN, Certainty, Form, Kind, Provenance, Source,
                      Value, any_of, join, of_kind, value_from_json, value_to_json)
from .static_fields import declared_fields
from .tables import (ARRAY_ATTRIBUTES, AT_UPDATES, ARRAY_EVIDENCE_ATTRIBUTES, ARRAY_MODULES, ARRAY_ONLY_ATTRIBUTES, BITWISE, BOOL_FUNCTIONS, COLLECTIVES, CONCRETIZING_METHODS,
                     CONVERSIONS, DIRECT_TRANSFORMS, DTYPE_QUERIES, LAX_COMPARISONS, LAX_CONTROL_FLOW, MAX_ITEMS,
                     REFERENCE_CALLS, STATIC_ATTRIBUTES, STATIC_CALLS, STATIC_LEAF_TRANSFORMS, TRACER_CLASSES,
                     TRANSFORM_WRAPPERS, TREE_FLATTENS, TREE_FUNCTIONS)

__all__ = [
    "ARRAY_ATTRIBUTES", "AT_UPDATES", "ARRAY_EVIDENCE_ATTRIBUTES", "ARRAY_MODULES", "ARRAY_ONLY_ATTRIBUTES", "BITWISE", "BOOL_FUNCTIONS", "BOTTOM", "COLLECTIVES", "CONCRETE_ARRAY",
    "CONCRETIZING_METHODS", "CONVERSIONS", "DIRECT_TRANSFORMS", "DTYPE_QUERIES", "LAX_COMPARISONS",
    "LAX_CONTROL_FLOW", "MAX_ITEMS", "MAY", "MUST", "NO", "NOTHING", "OF_KIND", "OTHER_ATTRIBUTES", "PLAIN", "REFERENCE_CALLS",
    "STATIC", "STATIC_ATTRIBUTES", "STATIC_CALLS", "STATIC_LEAF_TRANSFORMS", "TRACED_ARRAY", "TRACED_CONTAINER",
    "TRACED_MASK", "TRACED_PARAM", "TRACED_TREE", "TRACER_CLASSES", "TRANSFORM_WRAPPERS", "TREE_FLATTENS",
    "TREE_FUNCTIONS", "UNKNOWN", "CallFacts", "Certainty", "Form", "Kind", "KindView", "Provenance", "Source",
    "State", "Value", "ValueFlow", "any_of", "as_value", "declared_fields", "join", "of_kind",
    "value_from_json", "value_to_json", "wrapper_of",
]
