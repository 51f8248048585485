"""Finds the rules and runs them over a file: registry, checker and fix loop, notebooks."""
