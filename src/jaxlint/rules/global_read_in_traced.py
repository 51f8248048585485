"""JAX302: a function whose body runs once per trace reads a module variable that is reassigned elsewhere,
or an attribute of a `self` fixed at trace time that another method of the object replaces."""
from __future__ import annotations

import libcst as cst

from ..rulebase.rule import Rule
from ..semantic.names import BUILTIN_NAMES
from ..syntax.references import is_binding, is_reference


class GlobalReadInTraced(Rule):
    code = "JAX302"
    explains_trace = True

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reassigned: dict[str, str] | None = None
        #: (id(top-level function), id(class)) -> whether the module calls the function only from
        #: methods of the class (whose constructor sets up the variable read)
        self._instance_only: dict[tuple[int, int], bool] = {}

    def names_wanted(self) -> dict[str, str]:
        if self._reassigned is None:
            self._reassigned = self.analysis.module_state.reassigned
        return self._reassigned

    def visit_Name(self, node: cst.Name) -> None:
        walk, analysis = self.walk, self.analysis
        name = node.value
        if self._reassigned is None:
            self._reassigned = self.analysis.module_state.reassigned
        reason = self._reassigned.get(name)
        if reason is None:
            return
        info = analysis.trace_info(at=walk)
        if info is None or not info.runs_once:
            return
        parent = walk.parent
        if not is_reference(node, parent) or is_binding(node, parent):
            return
        state = self.analysis.module_state
        found = walk.scope.lookup(name)
        if found is None:
            if name in BUILTIN_NAMES:
                return
        elif found[0].kind != "module":
            return  # a local, a parameter or a closed-over variable of the same name
        if self._assigns_global_here(name):
            return  # the function rebinds it itself: JAX303 reports the assignment
        owner = state.constructor_setups.get(name)
        if owner is not None and self._runs_only_through_instances(owner):
            return  # set up by the constructor, read only by code that needs an instance built first
        if self._traced_afresh(info.node):
            return  # a new function object every time: traced again with the value current then
        top = walk.ancestors[1] if len(walk.ancestors) > 1 else None
        if top is not None and not state.may_change_after(name, top):
            return  # defined after the last rebinding: the function only ever sees the final value
        runs = self.analysis.top_level_runs
        if top is not None and runs.traced_before_change(name, top, walk.function()):
            return  # a script's step function, run (and traced) before the variable changes
        if isinstance(top, cst.If) and runs.defined_after_script_bindings(name, top, self._outermost_function()):
            return  # defined in the `__main__` block after the last assignment: sees the final value
        self.report(node, (
            f"`{name}` is a global variable {reason}, read inside a function traced by `{info.label}`: "
            f"its value at trace time is baked into the compiled code and later changes are ignored "
            f"until JAX retraces; pass `{name}` as an argument (or a `static_argnames` argument if it is "
            f"configuration)"), headline=f"global `{name}`, which changes, is read inside a function traced by `{info.label}`")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if type(node.value) is not cst.Name:
            return
        walk = self.walk
        parent = walk.parent
        if type(parent) is cst.Call and parent.func is node:
            return  # a callable kept on the object: calling it is not reading data
        if type(parent) is cst.Attribute and parent.value is node:
            grandparent = walk.ancestors[-3] if len(walk.ancestors) > 2 else None
            if type(grandparent) is cst.Call and grandparent.func is parent:
                return  # a helper object used for its methods (`self.net.apply(...)`)
        if walk.scope is None or self.analysis.trace_info(at=walk) is None:
            return
        read = self.analysis.baked_attributes.baked_read(node, walk.scope)
        if read is None:
            return
        receiver = read.receiver
        spelled = f"{node.value.value}.{read.attribute}"
        root = receiver.root.name.value
        through = "" if receiver.method is receiver.root else f" (through `{receiver.method.name.value}`, which it calls)"
        self.report(node, (
            f"`{spelled}` is replaced by `{read.replaced_by.name.value}`, but `{root}` is {receiver.how}{through}: "
            f"the value it reads at its first call is baked into the compiled code, and later calls keep "
            f"using it; make it a parameter of `{root}` and pass `{spelled}` at each call, "
            f"or make the class a pytree and pass `self` as a traced argument"))

    def _runs_only_through_instances(self, owner: cst.ClassDef) -> bool:
        """Whether the read runs only once an instance of `owner`, whose constructor sets the variable
        up, exists: it is in a method of `owner` (not a static or class method), or in a top-level
        function that the module only calls from such methods. The constructor has run before any
        of them is first traced; only building another instance rebinds the variable."""
        ancestors = self.walk.ancestors
        if len(ancestors) < 2:
            return False
        top = ancestors[1]
        if top is owner:
            method = next((a for a in ancestors[2:] if isinstance(a, cst.FunctionDef)), None)
            return method is not None and not _without_instance(method)
        if not isinstance(top, cst.FunctionDef):
            return False
        key = (id(top), id(owner))
        known = self._instance_only.get(key)
        if known is None:
            known = self._instance_only[key] = self._called_only_from_methods(top, owner)
        return known

    def _called_only_from_methods(self, function: cst.FunctionDef, owner: cst.ClassDef) -> bool:
        """Every reference to the top-level `function` in the module is a call made in a method of
        `owner` (at least one): stored or passed on, it could run at any time."""
        spelling = function.name.value
        calls = 0
        for name, scope, parent in self.analysis.semantic.name_occurrences({spelling}):
            if name is function.name or not is_reference(name, parent):
                continue
            found = scope.lookup(spelling)
            if found is None or found[0].kind != "module":
                continue  # another binding of the same spelling
            if not (isinstance(parent, cst.Call) and parent.func is name) or not _inside_method_of(scope, owner):
                return False
            calls += 1
        return calls > 0

    def _outermost_function(self) -> cst.FunctionDef | cst.Lambda | None:
        """The function around the read that a top-level block (`if __name__ == "__main__":`) holds."""
        return next((a for a in self.walk.ancestors[2:] if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)

    def _traced_afresh(self, function: cst.CSTNode) -> bool:
        """Whether the traced function is a new object each time it is traced, so that no compiled
        version outlives the value it read: a lambda jitted and called in one expression
        (`jax.jit(lambda: model.init(key, x), backend="cpu")()`, also through `jax.hessian`/`grad`/
        `partial` wrappers), or a lambda or `def` made in a loop body (made and traced again every
        iteration)."""
        ancestors = self.walk.ancestors
        index = next((i for i in range(len(ancestors) - 1, -1, -1) if ancestors[i] is function), None)
        if index is None:
            return False
        for i in range(index - 1, 0, -1):
            node = ancestors[i]
            if isinstance(node, (cst.For, cst.While)):
                return ancestors[i + 1] is node.body
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                break
        if not isinstance(function, cst.Lambda):
            return False
        i = index - 1
        while i >= 1 and isinstance(ancestors[i], cst.Arg) and isinstance(ancestors[i - 1], cst.Call):
            call = ancestors[i - 1]
            outer = ancestors[i - 2] if i >= 2 else None
            if isinstance(outer, cst.Call) and outer.func is call:
                return True  # `jax.jit(...)(...)`: traced now, never called again
            i -= 2
        return False

    def _assigns_global_here(self, name: str) -> bool:
        for scope in self.walk.scope.enclosing_for_lookup():
            if scope.kind == "function":
                return name in scope.globals and name in scope.bindings
        return False


def _without_instance(method: cst.FunctionDef) -> bool:
    """A `@staticmethod` or `@classmethod`: callable before any instance is built."""
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod")
               for d in method.decorators)


def _inside_method_of(scope, owner: cst.ClassDef) -> bool:
    """Whether `scope` is (or is nested in) a method of the class `owner` that needs an instance."""
    while scope is not None:
        parent = scope.parent
        if parent is not None and parent.node is owner:
            return isinstance(scope.node, cst.FunctionDef) and not _without_instance(scope.node)
        scope = parent
    return False
