"""Binding-level facts about one file: scopes, qualified names, literals, module state, containers."""
