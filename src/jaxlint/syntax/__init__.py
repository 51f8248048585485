"""libcst primitives: the fast read-only walk, node positions, text fixes, noqa comments."""
