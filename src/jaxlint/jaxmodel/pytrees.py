"""What stays static under a trace because of how a pytree is declared: parameters annotated with a
class registered as static, the attributes of objects built under the trace, flax.nnx modules'
data and static attributes, and the fields of dataclass pytrees (the module's, another module's of
the project, a library's from the framework table): leaves unless marked static."""
from __future__ import annotations

import libcst as cst

from ..syntax.arguments import Passing
from ..syntax.walk import last_name, walk
from ..semantic.model import SemanticModel
from ..semantic.scopes import Scope
from .values import ARRAY_MODULES, OTHER_ATTRIBUTES, STATIC_CALLS, Kind, declared_fields
from .calls import ClassInfo
from .transforms import (LINEN_MODULE_BASES, NNX_PYTREE_BASES, NNX_VARIABLE_LEAVES, NNX_VARIABLES, PYTREE_CLASS_FIELDS, PYTREE_DATACLASS_BASES,
                         PYTREE_DATACLASS_DECORATORS, STATIC_PYTREE_REGISTRATIONS, literal_truth)

FunctionNode = cst.FunctionDef | cst.Lambda
#: bases that make no pytree of a class: `object`, and flax.linen's `Module` (a dataclass JAX sees as
#: one leaf; `jax.tree_util.tree_leaves(module)` is `[module]`)
PLAIN_BASES = frozenset({"builtins.object"}) | LINEN_MODULE_BASES


class PytreeAttributes:
    """The part of `traced.TracedFunctions` that knows which attributes of traced objects are leaves
    (its state lives on `TracedFunctions`)."""

    def _static_params(self, function: FunctionNode) -> frozenset[str]:
        """Parameters annotated with a class of the module registered as a static pytree
        (`@jax.tree_util.register_static`): JAX passes them through as they are, never traced."""
        key = id(function)
        found = self._static_param_names.get(key)
        if found is None and key in self.external:
            found = self._static_param_names[key] = frozenset()  # the other module's classes: not known here
        if found is None:
            scope = self.scopes.get(key)
            outer = scope.parent if scope is not None and scope.parent is not None else self.ctx.module_scope
            p = function.params
            found = frozenset(
                param.name.value for param in (*p.posonly_params, *p.params, *p.kwonly_params)
                if param.annotation is not None and self._static_class(param.annotation.annotation, outer))
            self._static_param_names[key] = found
        return found

    def _static_class(self, annotation: cst.BaseExpression, scope: Scope) -> bool:
        if isinstance(annotation, cst.SimpleString) and isinstance(annotation.evaluated_value, str) \
                and annotation.evaluated_value.isidentifier():
            annotation = cst.Name(annotation.evaluated_value)  # `config: "Config"`
        cls = self._class_named(annotation, scope) if isinstance(annotation, cst.Name) else None
        if cls is None or cls.scope.parent is None:
            return False
        resolve = self._resolver(cls.scope.parent)
        return any(resolve(d.decorator) in STATIC_PYTREE_REGISTRATIONS for d in cls.node.decorators)

    def _object_attributes(self, function: FunctionNode, param: str,
                           static_leaves: bool = False) -> tuple[tuple[str, Kind], ...] | None:
        """The kinds of the attributes of a traced parameter whose class is known: a flax.nnx module
        (whose non-array attributes are static), or a dataclass pytree (whose fields are leaves unless
        declared static) where the transform traces every leaf (`static_leaves` False). None when
        the class is not known, or says nothing about its attributes."""
        cls = self._object_class(function, param)
        if isinstance(cls, str):
            return None if static_leaves else self._named_pytree_attributes(cls)
        if cls is None:
            return None
        found = self._pytree_attributes_of(cls)
        if found is None and not static_leaves:
            found = self._dataclass_attributes(cls)
        return found

    def _named_pytree_attributes(self, name: str) -> tuple[tuple[str, Kind], ...] | None:
        """The attributes of an instance of a class defined elsewhere: a library's dataclass pytree
        (the framework table), or one of another module of the project."""
        found = library_pytree_attributes(name)
        if found is None and self.project is not None:
            found = self.project.pytree_attributes(name)
        return found

    def pytree_class_attributes(self, name: str) -> tuple[tuple[str, Kind], ...] | None:
        """For the module's class `name`, where it is a dataclass pytree: its attributes (what the
        project answers other modules about it)."""
        binding = self.ctx.module_scope.bindings.get(name)
        if binding is None or len(binding.nodes) != 1:
            return None
        cls = self.classes.get(id(binding.nodes[0]))
        return self._dataclass_attributes(cls) if cls is not None else None

    def _object_class(self, function: FunctionNode, param: str) -> ClassInfo | str | None:
        """The class of a parameter's values: its annotation (a class of the module, or the qualified
        name of one from elsewhere), or the class of the module every call of the function passes an
        instance of. None when not known."""
        if type(function) is cst.Lambda or id(function) in self.external:
            return None
        scope = self.scopes.get(id(function))
        outer = scope.parent if scope is not None and scope.parent is not None else self.ctx.module_scope
        annotation = next((p.annotation for p in (*function.params.posonly_params, *function.params.params,
                                                  *function.params.kwonly_params) if p.name.value == param), None)
        if annotation is not None:
            shown = annotation.annotation
            if isinstance(shown, cst.SimpleString) and isinstance(shown.evaluated_value, str) \
                    and shown.evaluated_value.isidentifier():
                shown = cst.Name(shown.evaluated_value)  # `state: "TrainState"`
            cls = self._class_named(shown, outer) if isinstance(shown, cst.Name) else None
            return cls if cls is not None else self._resolver(outer)(shown)
        classes: set[int] = set()
        found: list[ClassInfo] = []
        sites = [*self.call_sites.get(id(function), ())]
        for use in self.applications.get(id(function), ()):
            sites.extend(use.sites or ())
        for site in sites:
            passed = site.bind().get(param)
            call_scope = self.call_scopes.get(id(site.call))
            if passed is None or passed.how is not Passing.ARGUMENT or call_scope is None \
                    or not isinstance(passed.values[0], cst.Name):
                return None
            instance = self._instance_of(passed.values[0], call_scope)
            if instance is None or instance[1] not in ("instance", "annotated"):
                return None
            if id(instance[0]) not in classes:
                classes.add(id(instance[0]))
                found.append(instance[0])
        return found[0] if len(found) == 1 else None

    def _dataclass_attributes(self, cls: ClassInfo) -> tuple[tuple[str, Kind], ...] | None:
        """For a dataclass pytree of the module (a registered dataclass, a NamedTuple, a subclass of
        a library's dataclass pytree): its leaf fields, traced; its static fields and any other
        attribute (a property, a method) not known. None when the class is not such a pytree."""
        if self._declared_fields is None:
            self._declared_fields = declared_fields(SemanticModel.of(self.ctx))
        dataclass = False
        leaves: set[str] = set()
        static: set[str] = set()
        for c in self._bases(cls, stop_outside=False):
            parent = c.scope.parent
            if parent is not None:
                resolve = self._resolver(parent)
                dataclass = dataclass or any(
                    resolve(d.decorator.func if type(d.decorator) is cst.Call else d.decorator)
                    in PYTREE_DATACLASS_DECORATORS for d in c.node.decorators)
            for base in self._external_bases(c):
                if base in PYTREE_DATACLASS_BASES:
                    dataclass = True
                    continue
                inherited = self._named_pytree_attributes(base)  # a library's, or the project's
                if inherited is not None:
                    dataclass = True
                    leaves.update(name for name, kind in inherited if kind == Kind.TREE)
            names, declared_static = self._declared_fields.get(id(c.node), ((), frozenset()))
            leaves.update(names)
            static |= declared_static
        if not dataclass:
            return None
        return (*((name, Kind.TREE) for name in sorted(leaves - static)), (OTHER_ATTRIBUTES, Kind.NONE))

    def _pytree_attributes_of(self, cls: ClassInfo) -> tuple[tuple[str, Kind], ...] | None:
        """For a class of the module derived from flax.nnx's pytree classes (whose attributes are
        static unless they hold arrays or Variables): the attributes known to hold data, and their
        kind; the others are static, or not known to be data, and not reported."""
        key = id(cls.node)
        if key in self._pytree_attributes:
            return self._pytree_attributes[key]
        self._pytree_attributes[key] = None
        chain = list(self._bases(cls, stop_outside=False))
        if not any(self._external_bases(c) & NNX_PYTREE_BASES for c in chain):
            return None
        values: dict[str, list[cst.BaseExpression | None]] = {}
        for c in chain:
            for attr, assigned in c.instance_values.items():
                values.setdefault(attr, []).extend(assigned)
        resolve = self._resolver(self.ctx.module_scope)
        data = []
        for attr, assigned in sorted(values.items()):
            kinds = {data_kind(v, resolve) for v in assigned}
            if len(kinds) == 1 and None not in kinds:
                kind = kinds.pop()
                data.append((attr, kind))
                if kind == Kind.TREE:  # a Variable: what reads its array is known, the rest is not
                    data.extend((f"{attr}.{leaf}", Kind.ARRAY) for leaf in sorted(NNX_VARIABLE_LEAVES))
                    data.append((f"{attr}.{OTHER_ATTRIBUTES}", Kind.NONE))
        self._pytree_attributes[key] = tuple(data)
        return self._pytree_attributes[key]

    def plain_class(self, cls: ClassInfo) -> bool:
        """Whether every instance of the module's class is certainly one leaf that JAX cannot trace (not
        a pytree): neither it nor a class it derives from, nor a subclass of the module, is declared
        a pytree in any way. Each of them has no decorator but `dataclasses.dataclass`, no metaclass,
        no `__init_subclass__`, no base but `object`, flax.linen's `Module` (a dataclass, not a
        pytree) and classes of the module; and no call that could register it is given the class
        (`register_pytree_node(Point, …)`)."""
        pending, seen = [cls], set()
        while pending:
            current = pending.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if not all(self._plain_definition(c) for c in self._bases(current, stop_outside=False)):
                return False
            pending.extend(self._subclasses_of(current))
        return True

    def unhashable_class(self, cls: ClassInfo) -> str | None:
        """Why hashing an instance of the module's class certainly raises `TypeError`, or None: along its
        single chain of bases, the first class that says how instances hash defines `__eq__` without
        `__hash__`, sets `__hash__ = None`, or is a `dataclasses.dataclass` that compares without being
        frozen (`eq=True`, the default, sets `__hash__` to None). A subclass of the module must be so too."""
        if not self.plain_class(cls):
            return None
        pending, seen, reason = [cls], set(), None
        while pending:
            current = pending.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            hashing = self._hashing_of(current)
            if not isinstance(hashing, str):
                return None
            reason = reason or hashing
            pending.extend(self._subclasses_of(current))
        return reason

    def _hashing_of(self, cls: ClassInfo) -> bool | str | None:
        """True when instances of the class hash, why not when they do not (decided by the first class
        of its chain that says so); None when not known (several bases, or a base defined elsewhere
        that is not `object`)."""
        current: ClassInfo | None = cls
        while current is not None:
            own = current.scope.bindings
            named = current.node.name.value
            if "__hash__" in own:
                nodes = own["__hash__"].statements
                if len(nodes) == 1 and type(nodes[0]) is cst.Assign and type(nodes[0].value) is cst.Name \
                        and nodes[0].value.value == "None":
                    return f"`{named}` sets `__hash__ = None`"
                return True
            if "__eq__" in own:
                return f"`{named}` defines `__eq__` without `__hash__`, which sets `__hash__` to None"
            compares = self._comparing_dataclass(current)
            if compares is not False:
                return None if compares is None else \
                    f"`{named}` is a dataclass that compares and is not frozen, which sets `__hash__` to None"
            bases, elsewhere = self._direct_bases(current)
            if elsewhere:
                return None  # flax.linen's Module defines `__hash__`; others are not known here
            if len(bases) > 1:
                return None
            current = bases[0] if bases else None
        return True  # `object`'s identity hash

    def linen_module(self, cls: ClassInfo) -> bool:
        """Whether the module's class derives from flax.linen's `Module`."""
        return bool(self._library_bases(cls) & LINEN_MODULE_BASES)

    def _comparing_dataclass(self, cls: ClassInfo) -> bool | None:
        """Whether the class is a `dataclasses.dataclass` whose `__eq__` replaces the hash: `eq` true
        and neither `frozen` nor `unsafe_hash`. None when its options are not literals."""
        parent = cls.scope.parent
        if parent is None:
            return None
        resolve = self._resolver(parent)
        for decorator in cls.node.decorators:
            expr = decorator.decorator
            call = expr if type(expr) is cst.Call else None
            if resolve(call.func if call is not None else expr) != "dataclasses.dataclass":
                continue
            options = {"eq": True, "frozen": False, "unsafe_hash": False}
            for arg in call.args if call is not None else ():
                truth = literal_truth(arg.value) if arg.keyword is not None else None
                if arg.keyword is None or truth is None:
                    return None
                options[arg.keyword.value] = truth
            return options["eq"] and not options["frozen"] and not options["unsafe_hash"]
        return False

    def _plain_definition(self, cls: ClassInfo) -> bool:
        parent = cls.scope.parent
        if parent is None or any(arg.keyword is not None for arg in cls.node.bases) \
                or "__init_subclass__" in cls.scope.bindings:
            return False
        resolve = self._resolver(parent)
        for decorator in cls.node.decorators:
            expr = decorator.decorator
            if resolve(expr.func if type(expr) is cst.Call else expr) != "dataclasses.dataclass":
                return False
        for arg in cls.node.bases:
            if type(arg.value) is cst.Name and self._class_named(arg.value, parent) is not None:
                continue
            if resolve(arg.value) not in PLAIN_BASES:
                return False
        return not self._given_to_a_registration(cls.node.name.value) and not _registers_itself(cls.node)

    def _given_to_a_registration(self, name: str) -> bool:
        """Whether the class's name is passed to a call whose name speaks of registering
        (`jax.tree_util.register_pytree_node(Point, …)`, a project's own `register(Point)`)."""
        for found in SemanticModel.of(self.ctx).names_in_statements([name]):
            call = found.grandparent
            if type(found.parent) is not cst.Arg or type(call) is not cst.Call:
                continue
            func = call.func
            called = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
            if type(func) not in (cst.Attribute, cst.Name) or "register" in called.lower():
                return True
        return False

    def _subclasses_of(self, cls: ClassInfo) -> list[ClassInfo]:
        return [other for other in self.classes.values() if cls in self._direct_bases(other)[0]]

    def _external_bases(self, cls: ClassInfo) -> set[str]:
        parent = cls.scope.parent
        if parent is None:
            return set()
        resolve = self._resolver(parent)
        return {name for arg in cls.node.bases if arg.keyword is None for name in [resolve(arg.value)] if name}


def _registers_itself(node: cst.ClassDef) -> bool:
    """Whether the class's own code calls something that speaks of registering (`register_pytree_node(
    cls, ...)` in a classmethod, `register(type(self))` in `__init__`): it may make itself a pytree."""
    found = [False]

    def enter(child: cst.CSTNode, _field: str) -> bool:
        if type(child) is cst.Call:
            called = last_name(child.func)
            if called is not None and "register" in called.lower():
                found[0] = True
        return not found[0]

    walk(node.body, enter, None)
    return found[0]


def library_pytree_attributes(cls: str | None) -> tuple[tuple[str, Kind], ...] | None:
    """The attributes of an instance of a library's dataclass pytree (flax's `TrainState`): its leaf
    fields are traced, the others not known. None for another class."""
    fields = PYTREE_CLASS_FIELDS.get(cls) if cls is not None else None
    if fields is None:
        return None
    return (*((name, Kind.TREE) for name in sorted(fields[0])), (OTHER_ATTRIBUTES, Kind.NONE))


def data_kind(value: cst.BaseExpression | None, resolve) -> Kind | None:
    """What an attribute assigned `value` holds under a trace, when it is a pytree leaf of a flax.nnx
    module: a Variable (whose value is traced), or an array; None for anything else."""
    if not isinstance(value, cst.Call):
        return None
    callee = resolve(value.func)
    if callee in NNX_VARIABLES:
        return Kind.TREE
    if callee is not None and callee.startswith(ARRAY_MODULES) and callee not in STATIC_CALLS:
        return Kind.ARRAY
    return None
