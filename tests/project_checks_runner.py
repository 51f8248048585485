"""Runs a fixture project's `jax_checks.py` under JAX and prints what each check raised, where.

Usage: python project_checks_runner.py PROJECT_DIR. Prints one JSON list: for each check, the
function, the exception class names (or null) and the frames inside the project (path
relative to the project, line), outermost first. Run in its own process: the project's modules (`helpers`,
`cyc`, ...) must not meet other tests' modules in `sys.modules`.
"""
import importlib
import json
import os
import sys
import traceback

import jax

project = os.path.realpath(sys.argv[1])
checks_module = {}
sys.path[:0] = [project, os.path.join(project, "src")]
exec(open(os.path.join(project, "jax_checks.py"), encoding="utf-8").read(), checks_module)
sys.path[:0] = [os.path.join(project, entry) for entry in checks_module.get("PATH", [])]
jax.config.update("jax_debug_key_reuse", True)


def frames_in_project(exc):
    """The traceback's frames in the project's modules, outermost first: [path, line] pairs."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.realpath(f.filename).startswith(project + os.sep)
              and not f.filename.endswith("jax_checks.py")]
    cause = exc.__cause__ or exc.__context__
    if not frames and cause is not None:
        return frames_in_project(cause)
    return [[os.path.relpath(os.path.realpath(f.filename), project), f.lineno] for f in frames]


results = []
for kind in ("CHECKS", "JITTED"):
    for module_name, function_name, arguments, expected in checks_module.get(kind, []):
        function = getattr(importlib.import_module(module_name), function_name)
        if kind == "JITTED":
            function = jax.jit(function)
        try:
            function(*arguments())
        except Exception as exc:  # noqa: BLE001 - any exception is evidence
            results.append({"function": function_name, "expected": expected,
                            "raised": [c.__name__ for c in type(exc).__mro__],
                            "frames": frames_in_project(exc)})
        else:
            results.append({"function": function_name, "expected": expected, "raised": None, "frames": []})
print(json.dumps(results))
