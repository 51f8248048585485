"""What stays static under a trace because of how a pytree is declared: parameters annotated with a
class registered as static, the attributes of objects built under the trace, flax.nnx modules'
data and static attributes, and the fields of dataclass pytrees (the module's, another module's of
the project, a library's from the framework table): leaves unless marked static."""
from __future__ import annotations

import libcst as cst

from ..syntax.arguments import Passing
from ..semantic.model import SemanticModel
from ..semantic.scopes import Scope
from .values import ARRAY_MODULES, OTHER_ATTRIBUTES, STATIC_CALLS, Kind, declared_fields
from .calls import ClassInfo
from .transforms import (NNX_PYTREE_BASES, NNX_VARIABLE_LEAVES, NNX_VARIABLES, PYTREE_CLASS_FIELDS, PYTREE_DATACLASS_BASES,
                         PYTREE_DATACLASS_DECORATORS, STATIC_PYTREE_REGISTRATIONS)

FunctionNode = cst.FunctionDef | cst.Lambda


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

    def _external_bases(self, cls: ClassInfo) -> set[str]:
        parent = cls.scope.parent
        if parent is None:
            return set()
        resolve = self._resolver(parent)
        return {name for arg in cls.node.bases if arg.keyword is None for name in [resolve(arg.value)] if name}


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
