"""Binding-level facts about one file: scopes, qualified names, literals, module state, containers."""
# a file's scopes ask for their bindings through `SourceFile.record_bindings`, which the model sets
from . import model  # noqa: F401
