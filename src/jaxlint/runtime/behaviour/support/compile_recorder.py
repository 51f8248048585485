"""Recording XLA compilations, with the argument types of each and the subject's line that caused it."""
from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any

from ...subject import Subject
from .frames import caller_line, source_paths


COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@dataclass
class Compile:
    fun_name: str
    shapes: str  # the abstract argument types from the compile log, "" when not logged
    line: int | None  # the innermost line of the subject's file on the stack when it compiled


class CompileRecorder:
    """Records the XLA compilations run while it is active, with the subject's line that caused each.

    Counts JAX's monitoring event for a backend compilation; takes the argument types from the
    `jax_log_compiles` message logged just before it, captured here so nothing reaches the logs.
    """

    def __init__(self, subject: Subject):
        self.paths = source_paths(subject)
        self.compiles: list[Compile] = []
        self._shapes = threading.local()
        self._handler: Any = None
        self._saved: Any = None

    def _listener(self, event: str, duration: float, **kwargs: Any) -> None:
        if event != COMPILE_EVENT:
            return
        self.compiles.append(Compile(str(kwargs.get("fun_name", "?")), getattr(self._shapes, "last", ""),
                                     caller_line(self.paths, sys._getframe(1))))
        self._shapes.last = ""

    def __enter__(self) -> "CompileRecorder":
        import logging

        import jax
        from jax import monitoring

        recorder = self

        class Capture(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                try:
                    text = record.getMessage()
                except Exception:  # noqa: BLE001
                    return
                if text.startswith("Compiling ") and " with global shapes and types " in text:
                    shapes = text.split(" with global shapes and types ", 1)[1].split(". Argument mapping", 1)[0]
                    recorder._shapes.last = shapes

        jax_logger = logging.getLogger("jax")
        self._handler = Capture(level=logging.DEBUG)
        self._saved = (jax.config.jax_log_compiles, jax_logger.propagate)
        jax_logger.addHandler(self._handler)
        jax_logger.propagate = False
        jax.config.update("jax_log_compiles", True)
        monitoring.register_event_duration_secs_listener(self._listener)
        return self

    def __exit__(self, *exc: Any) -> None:
        import logging

        import jax
        from jax import monitoring

        try:
            monitoring.unregister_event_duration_listener(self._listener)
        except Exception:  # noqa: BLE001
            pass
        jax.config.update("jax_log_compiles", self._saved[0])
        jax_logger = logging.getLogger("jax")
        jax_logger.removeHandler(self._handler)
        jax_logger.propagate = self._saved[1]
