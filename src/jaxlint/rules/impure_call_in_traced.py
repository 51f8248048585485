"""JAX304: clocks, sleeps, the environment, files, input and logging in a body that runs once per trace."""
from __future__ import annotations

import libcst as cst

from ..syntax.references import is_reference
from ..rulebase.rule import Rule

#: Clock reads: the value is frozen at trace time.
CLOCKS = frozenset(f"time.{name}" for name in (
    "time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
    "process_time_ns", "thread_time", "thread_time_ns",
)) | frozenset({
    "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today",
})
#: Read the current time only when called without the time to convert.
CLOCKS_WITHOUT_ARGUMENT = {"time.localtime": 0, "time.gmtime": 0, "time.ctime": 0, "time.asctime": 0, "time.strftime": 1}
SLEEPS = frozenset({"time.sleep"})
ENVIRONMENT_CALLS = frozenset({"os.getenv", "os.putenv", "os.unsetenv", "os.getenvb"})
INPUT_OUTPUT = frozenset({
    "builtins.input", "builtins.open", "io.open", "sys.stdout.write", "sys.stderr.write", "sys.stdout.writelines",
    "sys.stderr.writelines",
})
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})
LOG_FUNCTIONS = frozenset(f"logging.{m}" for m in LOG_METHODS) | frozenset(
    f"absl.logging.{m}" for m in (*LOG_METHODS, "vlog", "log_every_n", "log_first_n", "log_every_n_seconds"))
LOGGER_FACTORIES = frozenset({"logging.getLogger", "absl.logging.get_absl_logger"})
ENVIRON = "os.environ"
#: the only Name spelling `visit_Name` looks at
_ENVIRON_NAME = frozenset({"environ"})
#: The last component of every callee above: a cheap test before resolving names.
CANDIDATE_NAMES = frozenset(
    name.rsplit(".", 1)[1]
    for name in (*CLOCKS, *CLOCKS_WITHOUT_ARGUMENT, *SLEEPS, *ENVIRONMENT_CALLS, *INPUT_OUTPUT, *LOG_FUNCTIONS)
) | LOG_METHODS


class ImpureCallInTraced(Rule):
    code = "JAX304"
    explains_trace = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
        if last not in CANDIDATE_NAMES:
            return
        what = self._classify(node, self.walk.qualified_name(func))
        if what is None:
            return
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.runs_once:
            return
        call = f"`{self.analysis.module.code_for_node(node.func)}({'...' if node.args else ''})`"
        label = info.label
        headline = None
        if what == "clock":
            text = (f"{call} inside a function traced by `{label}` reads the clock once, while JAX traces the "
                    f"function: the value is frozen into the compiled code and every later call returns the same "
                    f"time; read the clock outside and pass it as an argument, or use `jax.experimental.io_callback`")
        elif what == "sleep":
            text = (f"{call} inside a function traced by `{label}` sleeps only while JAX traces the function, not "
                    f"on later calls; sleep outside the jitted function, or in a `jax.experimental.io_callback`")
            headline = f"{call} inside a function traced by `{label}` sleeps only while JAX traces it"
        elif what == "log":
            text = (f"{call} inside a function traced by `{label}` logs once per compilation, while JAX traces the "
                    f"function, and shows tracers instead of values; log outside, or use `jax.debug.callback` "
                    f"(or `jax.debug.print`) to log the values on every call")
        elif what == "environment":
            text = (f"{call} inside a function traced by `{label}` reads or changes the environment once, while "
                    f"JAX traces the function, not on every call; read it outside and pass the value as a "
                    f"(static) argument")
        else:
            text = (f"{call} inside a function traced by `{label}` does its I/O once, while JAX traces the "
                    f"function, not on every call; do it outside and pass the result in, or use "
                    f"`jax.experimental.io_callback` to run it on every call")
        self.report(node, text, headline=headline)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "environ" and self.walk.qualified_name(node) == ENVIRON:
            self._environ(node)

    def names_wanted(self) -> frozenset[str]:
        return _ENVIRON_NAME

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "environ" and is_reference(node, self.walk.parent) and self.walk.qualified_name(node) == ENVIRON:
            self._environ(node)

    def _environ(self, node: cst.BaseExpression) -> None:
        info = self.analysis.trace_info(at=self.walk)
        if info is None or not info.runs_once:
            return
        self.report(node, (
            f"`os.environ` inside a function traced by `{info.label}` is read (or changed) once, while JAX traces "
            f"the function: later changes to the environment are ignored by the compiled code; read it outside "
            f"and pass the value as a (static) argument"))

    def _classify(self, node: cst.Call, qname: str | None) -> str | None:
        if qname is not None:
            if qname in CLOCKS:
                return "clock"
            if qname in CLOCKS_WITHOUT_ARGUMENT:
                return "clock" if len(node.args) <= CLOCKS_WITHOUT_ARGUMENT[qname] else None
            if qname in SLEEPS:
                return "sleep"
            if qname in ENVIRONMENT_CALLS:
                return "environment"
            if qname in INPUT_OUTPUT:
                return "io"
            if qname in LOG_FUNCTIONS:
                return "log"
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in LOG_METHODS and isinstance(func.value, cst.Name):
            if self._is_module_logger(func.value.value):
                return "log"
        return None

    def _is_module_logger(self, name: str) -> bool:
        """`logger = logging.getLogger(...)` bound at module level, and only so."""
        found = self.walk.scope.lookup(name)
        if found is None or found[0].kind != "module":
            return False
        module = found[0]
        values = self.analysis.module_state.module_values(name)
        if not values or len(values) != len(found[1].nodes):
            return False
        return all(isinstance(v, cst.Call) and self.analysis.names.qualified_name(v.func, module) in LOGGER_FACTORIES
                   for v in values)
