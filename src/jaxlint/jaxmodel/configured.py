"""Integers a program's configuration gives: a configuration field's default, a command-line option's.

`for step in range(config.num_steps)` runs as many times as the configuration says, and where the
configuration object is one the program makes itself, that number is in the code:

* an instance of a dataclass (or a `NamedTuple`, a `flax.struct` dataclass, an Equinox module) made
  without that field (`config = Config()`): the field's default, `num_steps: int = 128`;
* the class itself (`Config.num_steps`), a dataclass or a plain class: its class attribute;
* the namespace `argparse` parses (`args = parser.parse_args()`): the option's `default=`, unless the
  command line gives another; likewise a dataclass parsed from the command line (`tyro.cli(Config)`);
* absl's flags (`FLAGS.num_steps`, or the holder `DEFINE_integer` returns, `.value`): the flag's
  default, unless the command line gives another;
* an `ml_collections.ConfigDict` a function of the file fills in (`config.num_steps = 128` in
  `get_config()`), called without arguments.

The configuration object is found through the bindings of its name where it is read: a name bound
once (at the module's top level, or in the function that defines a closure), the value of a helper
function of the file, or an object another module of the project makes (asked of the project). A
parameter is never followed (its value is the caller's), nor a name bound more than once, nor a
field that the file assigns anywhere (`args.num_steps = 5`, `self.num_steps = …` in the class's own
methods) unless the class is frozen. Read from the bindings and the sites the semantic model
records: no walk of its own.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ..semantic.literals import Literals
from ..semantic.model import SemanticModel
from ..semantic.scopes import Scope
from ..syntax.positions import node_spans
from ..syntax.walk import target_parts
from .external import ConfiguredInteger
from .name_origins import NameOrigins
from .transforms import PYTREE_DATACLASS_BASES, PYTREE_DATACLASS_DECORATORS

if TYPE_CHECKING:
    from ..semantic.source_file import SourceFile

#: Decorators that make a class a dataclass: its annotated fields take their defaults in `__init__`.
DATACLASS_DECORATORS = PYTREE_DATACLASS_DECORATORS | {"dataclasses.dataclass", "chex.dataclass"}
#: Of those and of the dataclass bases (`PYTREE_DATACLASS_BASES`), the ones whose instances cannot be
#: assigned to (`dataclasses.dataclass` is frozen with `frozen=True` only).
FROZEN_DATACLASSES = PYTREE_DATACLASS_BASES | {"flax.struct.dataclass"}
#: Bases whose class attribute of a field is not its default (a NamedTuple's is a descriptor).
DESCRIPTOR_FIELDS = frozenset({"typing.NamedTuple"})
#: Field declarations that may carry the default as `default=` (`x: int = field(default=3)`).
FIELD_DECLARATIONS = frozenset({"dataclasses.field", "flax.struct.field", "equinox.field", "chex.field"})
#: Functions that parse the command line into an instance of the dataclass they are given.
DATACLASS_COMMAND_LINES = frozenset({"tyro.cli"})
ARGUMENT_PARSER = "argparse.ArgumentParser"
#: Methods of an `ArgumentParser` that return an object whose `add_argument` adds to the parser.
ARGUMENT_GROUPS = frozenset({"add_argument_group", "add_mutually_exclusive_group"})
ABSL_FLAGS = "absl.flags.FLAGS"
ABSL_INTEGER_FLAGS = frozenset({"absl.flags.DEFINE_integer"})
CONFIG_DICTS = frozenset({"ml_collections.ConfigDict", "ml_collections.config_dict.ConfigDict"})
#: How a project question says the object was reached: read as a name (`cfg.num_steps`), or made
#: by calling the name with no argument at all, or with keywords that do not name the field.
READ, CALLED_BARE, CALLED_WITH_KEYWORDS = "read", "bare", "keywords"
_MAX_DEPTH = 6


class ConfiguredIntegers:
    """Per file: the integers configuration reads give (see the module docstring)."""

    def __init__(self, ctx: "SourceFile") -> None:
        self.ctx = ctx
        self._options: dict[str, list[tuple[cst.Call, Scope]]] | None = None
        self._flags: dict[str, list[cst.Call]] | None = None
        self._stores: dict[str, list[tuple[cst.BaseExpression, Scope]]] | None = None
        self._defaults_set: set[str] | None = None

    @classmethod
    def of(cls, ctx: "SourceFile") -> "ConfiguredIntegers":
        return ctx.fact(cls)

    @property
    def origins(self) -> NameOrigins:
        return NameOrigins.of(self.ctx)

    # -- questions ------------------------------------------------------------------------------
    def integer(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> ConfiguredInteger | None:
        """The integer a configuration read gives (`config.num_steps`, or a name bound to one);
        None when it is not one, or its value is not known."""
        if depth > _MAX_DEPTH:
            return None
        if type(expr) is cst.Attribute:
            return self._field(expr.value, expr.attr.value, scope, depth + 1)
        if type(expr) is cst.Name:
            value = self._single_value(expr, scope)
            return self.integer(value[0], value[1], depth + 1) if value is not None else None
        return None

    def exported(self, name: str, how: str, field: str) -> ConfiguredInteger | None:
        """For another module of the project: the integer `name.field` gives, where `name` is bound
        at this module's top level: read as it is (READ), or called (CALLED_BARE, CALLED_WITH_KEYWORDS)."""
        scope = self.ctx.module_scope
        found = scope.lookup(name)
        if found is None or len(found[1].nodes) != 1:
            return None
        binding = found[1]
        if binding.is_import_only:  # a re-export: what the module it comes from says
            target = self.ctx.names.binding_target(binding, scope)
            return self._ask_project(target, how, field) if target is not None else None
        node = binding.nodes[0]
        if type(node) is cst.ClassDef:
            return self._class_attribute(node, field, scope) if how == READ else self._instance_default(
                node, field, scope, command_line=False)
        if how == READ:
            value = self._single_value(cst.Name(name), scope, binding_only=True)
            return self._object_field(value[0], field, value[1], 0) if value is not None else None
        if how == CALLED_BARE and type(node) is cst.FunctionDef:
            return self._returned_field(node, field, scope, 0)
        return None

    # -- configuration objects ------------------------------------------------------------------
    def _field(self, base: cst.BaseExpression, field: str, scope: Scope, depth: int) -> ConfiguredInteger | None:
        """The integer `base.field` gives, `base` as written where it is read."""
        names = self.ctx.names
        if names.qualified_name(base, scope) == ABSL_FLAGS:
            return self._absl_flag(field)
        if type(base) is cst.Call:
            return self._made_field(base, field, scope, depth)
        if type(base) is cst.Attribute:  # `config_module.cfg.num_steps`: another module's object
            return self._ask_project(names.qualified_name(base, scope), READ, field)
        if type(base) is not cst.Name:
            return None
        found = scope.lookup(base.value)
        if found is not None and found[1].is_import_only:
            target = names.qualified_name(base, scope)
            return self._ask_project(target, READ, field) if target is not None else None
        if found is not None and len(found[1].nodes) == 1 and type(found[1].nodes[0]) is cst.ClassDef:
            return self._class_attribute(found[1].nodes[0], field, found[0])
        value = self._single_value(base, scope)
        if value is None:
            return None
        return self._object_field(value[0], field, value[1], depth)

    def _object_field(self, value: cst.BaseExpression, field: str, scope: Scope, depth: int) -> ConfiguredInteger | None:
        """The integer `field` of the object `value` makes (evaluated in `scope`) gives."""
        if depth > _MAX_DEPTH:
            return None
        if type(value) is cst.Name:
            return self._field(value, field, scope, depth + 1)
        if type(value) is not cst.Call:
            return None
        return self._made_field(value, field, scope, depth)

    def _made_field(self, call: cst.Call, field: str, scope: Scope, depth: int) -> ConfiguredInteger | None:
        """`field` of what the call makes: an instance, a parsed command line, a helper's value."""
        names = self.ctx.names
        func = call.func
        callee = names.qualified_name(func, scope)
        if type(func) is cst.Attribute and func.attr.value == "parse_args":
            return self._argparse_default(call, field, scope)
        if field == "value" and callee in ABSL_INTEGER_FLAGS:
            return self._flag_default(call, scope)
        if callee in DATACLASS_COMMAND_LINES and call.args and call.args[0].keyword is None:
            cls = self._class_named(call.args[0].value, scope)
            if cls is None:
                return None
            return self._instance_default(cls, field, _class_scope(cls, scope), command_line=True, made=call)
        how = _how_called(call, field)
        if type(func) is cst.Attribute:  # `configs.Config()`: a class or function of another module
            return self._ask_project(callee, how, field)
        if type(func) is not cst.Name:
            return None
        found = scope.lookup(func.value)
        if found is None or len(found[1].nodes) != 1:
            return None
        owner, binding = found
        node = binding.nodes[0]
        if binding.is_import_only:
            return self._ask_project(callee, how, field) if callee is not None and how is not None else None
        if type(node) is cst.ClassDef:
            return self._instance_default(node, field, owner, command_line=False, made=call) if how is not None else None
        if type(node) is cst.FunctionDef and how == CALLED_BARE:
            return self._returned_field(node, field, owner, depth)
        return None

    def _returned_field(self, function: cst.FunctionDef, field: str, owner: Scope, depth: int) -> ConfiguredInteger | None:
        """`field` of what a function of the file returns, called without arguments: the same integer
        on every path."""
        inner = SemanticModel.of(self.ctx).scopes.get(id(function))
        if function.decorators or function.asynchronous or inner is None:
            return None
        facts = self.origins.facts(inner)
        if facts.generator or facts.falls_off or not facts.returns or any(r is None for r in facts.returns):
            return None
        found = {self._returned_object_field(value, field, inner, depth + 1) for value in facts.returns}
        return found.pop() if len(found) == 1 else None

    def _returned_object_field(self, value: cst.BaseExpression, field: str, scope: Scope,
                               depth: int) -> ConfiguredInteger | None:
        if type(value) is cst.Name:
            made = self._single_value(value, scope)
            if made is not None and self._config_dict(made[0], made[1]):
                return self._config_dict_field(value, made[1], field)
        return self._object_field(value, field, scope, depth)

    # -- dataclasses and plain classes ------------------------------------------------------------
    def _class_named(self, expr: cst.BaseExpression, scope: Scope) -> cst.ClassDef | None:
        if type(expr) is not cst.Name:
            return None
        found = scope.lookup(expr.value)
        if found is None or len(found[1].nodes) != 1 or type(found[1].nodes[0]) is not cst.ClassDef:
            return None
        return found[1].nodes[0]

    def _instance_default(self, cls: cst.ClassDef, field: str, owner: Scope, command_line: bool,
                          made: cst.Call | None = None) -> ConfiguredInteger | None:
        """The default of `field` in an instance of a class of the file made without that field (by
        the call `made`, when it is in this file)."""
        kind = self._dataclass_kind(cls, owner)
        if kind is None:
            return self._class_attribute(cls, field, owner, made) if self._plain_class(cls, owner) else None
        declared = self._declared_default(cls, field, owner)
        if declared is None or (not kind and self._assigned(field, cls, made=made)):
            return None
        value, statement = declared
        what = f"the default of `{cls.name.value}.{field}`"
        return ConfiguredInteger(value, what, self._line(statement), command_line=command_line)

    def _class_attribute(self, cls: cst.ClassDef, field: str, owner: Scope,
                         made: cst.Call | None = None) -> ConfiguredInteger | None:
        """`Config.num_steps`: the class attribute, for a dataclass (its field's default) or a plain
        class of the file, never assigned elsewhere."""
        kind = self._dataclass_kind(cls, owner)
        if kind is None and not self._plain_class(cls, owner):
            return None
        if any(base in DESCRIPTOR_FIELDS for base in self._bases(cls, owner)):
            return None
        declared = self._declared_default(cls, field, owner)
        if declared is None or self._assigned(field, cls, classes_too=True, made=made):
            return None
        value, statement = declared
        what = (f"the default of `{cls.name.value}.{field}`" if kind is not None
                else f"the class attribute `{cls.name.value}.{field}`")
        return ConfiguredInteger(value, what, self._line(statement))

    def _dataclass_kind(self, cls: cst.ClassDef, owner: Scope) -> bool | None:
        """None: not a dataclass; True: a frozen one (its instances cannot be assigned to); False: a
        dataclass whose instances can. One with its own `__init__` is none of them: its defaults
        are what that `__init__` does."""
        if _defines(cls, "__init__"):
            return None
        names = self.ctx.names
        frozen, found = False, False
        for decorator in cls.decorators:
            target = decorator.decorator
            called = target.func if type(target) is cst.Call else target
            name = names.qualified_name(called, owner)
            if name in DATACLASS_DECORATORS:
                found = True
                frozen = frozen or name in FROZEN_DATACLASSES or type(target) is cst.Call and any(
                    a.keyword is not None and a.keyword.value == "frozen" and type(a.value) is cst.Name
                    and a.value.value == "True" for a in target.args)
        bases = self._bases(cls, owner)
        if any(base in PYTREE_DATACLASS_BASES for base in bases):
            found, frozen = True, True
        if not found or any(base not in PYTREE_DATACLASS_BASES for base in bases):
            return None  # another base may declare the field, or an `__init__`
        return frozen

    def _plain_class(self, cls: cst.ClassDef, owner: Scope) -> bool:
        """A class with no base, decorator or constructor of its own: its instances read its class
        attributes until they are assigned."""
        return (not cls.decorators and not self._bases(cls, owner) and not cls.keywords
                and not any(_defines(cls, name) for name in ("__init__", "__new__", "__getattr__",
                                                             "__getattribute__", "__post_init__")))

    def _bases(self, cls: cst.ClassDef, owner: Scope) -> list[str | None]:
        names = self.ctx.names
        return [names.qualified_name(arg.value, owner) for arg in cls.bases
                if not (type(arg.value) is cst.Name and arg.value.value == "object")]

    def _declared_default(self, cls: cst.ClassDef, field: str, owner: Scope) -> tuple[int, cst.CSTNode] | None:
        """The integer the class body gives `field` (`num_steps: int = 128`, `= field(default=128)`,
        or a plain `num_steps = 128`), with its statement; None when it is bound otherwise too."""
        found = []
        body = cls.body.body if type(cls.body) is cst.IndentedBlock else ()
        for line in body:
            if type(line) is not cst.SimpleStatementLine:
                if type(line) not in (cst.FunctionDef, cst.ClassDef) or line.name.value == field:
                    return None  # a field bound in a branch or a loop of the body, or a method of its name
                continue
            for small in line.body:
                if type(small) is cst.AnnAssign and type(small.target) is cst.Name and small.target.value == field:
                    found.append((small.value, small))
                elif type(small) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == field
                                                       for t in small.targets):
                    found.append((small.value if len(small.targets) == 1 else None, small))
        if len(found) != 1 or found[0][0] is None:
            return None
        value, statement = found[0]
        if type(value) is cst.Call and self.ctx.names.qualified_name(value.func, owner) in FIELD_DECLARATIONS:
            value = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "default"), None)
            if value is None:
                return None
        integer = Literals.of(self.ctx).integer(value, owner)
        return (integer, statement) if integer is not None else None

    # -- argparse --------------------------------------------------------------------------------
    def _argparse_default(self, call: cst.Call, field: str, scope: Scope) -> ConfiguredInteger | None:
        """`parser.parse_args().field`: the `default=` of the one option of the file with that
        destination, added to that parser (or a group of it)."""
        if any(a.keyword is not None or a.star or type(a.value) in (cst.List, cst.Tuple) for a in call.args):
            return None  # parses a list written here, or into a namespace given to it
        parser = self._parser(call.func.value, scope)
        options = self._argparse_options().get(field, [])
        if parser is None or len(options) != 1 or field in self._defaults_set_by_code():
            return None
        option, option_scope = options[0]
        receiver = option.func.value
        made = self._parser(receiver, option_scope)
        if made is None:
            group = self._single_value(receiver, option_scope) if type(receiver) is cst.Name else None
            if group is None or type(group[0]) is not cst.Call or type(group[0].func) is not cst.Attribute \
                    or group[0].func.attr.value not in ARGUMENT_GROUPS:
                return None
            made = self._parser(group[0].func.value, group[1])
        if made is not parser or self._assigned(field, None):
            return None
        keywords = {a.keyword.value: a.value for a in option.args if a.keyword is not None}
        if any(a.star for a in option.args) or "nargs" in keywords or not _literal_false(keywords.get("required")):
            return None
        action = keywords.get("action")
        if action is not None and not (type(action) is cst.SimpleString and action.evaluated_value == "store"):
            return None
        kind = keywords.get("type")
        if kind is not None and self.ctx.names.qualified_name(kind, option_scope) != "builtins.int":
            return None
        default = keywords.get("default")
        value = Literals.of(self.ctx).integer(default, option_scope) if default is not None else None
        if value is None:
            return None
        spelled = _option_strings(option)
        shown = next((s for s in spelled if s.startswith("--")), spelled[0] if spelled else field)
        return ConfiguredInteger(value, f"the default of `{shown}`", self._line(option), command_line=True)

    def _parser(self, expr: cst.BaseExpression, scope: Scope) -> cst.Call | None:
        """The `argparse.ArgumentParser(...)` call a name is bound to, once."""
        if type(expr) is not cst.Name:
            return None
        value = self._single_value(expr, scope)
        if value is None or type(value[0]) is not cst.Call:
            return None
        return value[0] if self.ctx.names.qualified_name(value[0].func, value[1]) == ARGUMENT_PARSER else None

    def _argparse_options(self) -> dict[str, list[tuple[cst.Call, Scope]]]:
        """destination -> each `X.add_argument(...)` call of the file that adds an option with it."""
        if self._options is None:
            self._options = {}
            for site in SemanticModel.of(self.ctx).sites_of(cst.Call):
                func = site.node.func
                if type(func) is cst.Attribute and func.attr.value == "add_argument":
                    destination = _destination(site.node)
                    if destination is not None:
                        self._options.setdefault(destination, []).append((site.node, site.scope))
        return self._options

    def _defaults_set_by_code(self) -> set[str]:
        """Options and flags whose default the code changes: argparse's `set_defaults(name=…)` (every
        name, written as `*`, where it passes `**defaults`), absl's `FLAGS.set_default("name", …)`."""
        if self._defaults_set is None:
            self._defaults_set = set()
            for site in SemanticModel.of(self.ctx).sites_of(cst.Call):
                func = site.node.func
                if type(func) is not cst.Attribute:
                    continue
                if func.attr.value == "set_defaults":
                    for arg in site.node.args:
                        self._defaults_set.add(arg.keyword.value if arg.keyword is not None else "*")
                elif func.attr.value == "set_default":
                    name = _argument(site.node, 0, "name")
                    self._defaults_set.add(name.evaluated_value if type(name) is cst.SimpleString else "*")
        return self._defaults_set

    # -- absl flags ------------------------------------------------------------------------------
    def _absl_flag(self, field: str) -> ConfiguredInteger | None:
        """`FLAGS.num_steps`: the default of the one `DEFINE_integer('num_steps', …)` of the file."""
        defined = self._absl_definitions().get(field, [])
        return self._flag_default(defined[0], self.ctx.module_scope) if len(defined) == 1 else None

    def _flag_default(self, call: cst.Call, scope: Scope) -> ConfiguredInteger | None:
        name = _argument(call, 0, "name")
        default = _argument(call, 1, "default")
        if type(name) is not cst.SimpleString or default is None:
            return None
        flag = name.evaluated_value
        value = Literals.of(self.ctx).integer(default, scope)
        if value is None or len(self._absl_definitions().get(flag, [])) != 1 or self._assigned(flag, None) \
                or flag in self._defaults_set_by_code():
            return None
        return ConfiguredInteger(value, f"the default of the flag `--{name.evaluated_value}`", self._line(call),
                                 command_line=True)

    def _absl_definitions(self) -> dict[str, list[cst.Call]]:
        if self._flags is None:
            self._flags = {}
            names = self.ctx.names
            for site in SemanticModel.of(self.ctx).sites_of(cst.Call):
                if names.qualified_name(site.node.func, site.scope) in ABSL_INTEGER_FLAGS:
                    name = _argument(site.node, 0, "name")
                    if type(name) is cst.SimpleString and isinstance(name.evaluated_value, str):
                        self._flags.setdefault(name.evaluated_value, []).append(site.node)
        return self._flags

    # -- ml_collections --------------------------------------------------------------------------
    def _config_dict(self, value: cst.BaseExpression, scope: Scope) -> bool:
        return type(value) is cst.Call and not value.args and \
            self.ctx.names.qualified_name(value.func, scope) in CONFIG_DICTS

    def _config_dict_field(self, holder: cst.Name, scope: Scope, field: str) -> ConfiguredInteger | None:
        """`config.num_steps = 128` in the function that makes the ConfigDict `config` and returns it:
        the one store of that field in the file, in the function's own body (not a branch of it)."""
        stores = self._attribute_stores().get(field, [])
        if len(stores) != 1:
            return None
        receiver, store_scope = stores[0]
        if store_scope.node is not scope.node or type(receiver) is not cst.Name or receiver.value != holder.value:
            return None
        statement = _top_level_assignment(scope.node, receiver)
        if statement is None or len(statement.targets) != 1 or self._changed_otherwise(holder, scope):
            return None
        value = Literals.of(self.ctx).integer(statement.value, scope)
        if value is None:
            return None
        return ConfiguredInteger(value, f"`{holder.value}.{field}` as `{scope.node.name.value}()` sets it",
                                 self._line(statement))

    def _changed_otherwise(self, holder: cst.Name, scope: Scope) -> bool:
        """Whether the function also fills the ConfigDict by item or by a method (`config["n"] = 1`,
        `config.update(...)`), or hands it to another function, which may."""
        for site in SemanticModel.of(self.ctx).sites_of(cst.Call, cst.Assign, cst.AugAssign):
            if site.scope.node is not scope.node:
                continue
            node = site.node
            if type(node) is cst.Call:
                func = node.func
                if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == holder.value:
                    return True
                if any(type(a.value) is cst.Name and a.value.value == holder.value for a in node.args):
                    return True
                continue
            targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
            if any(type(t) is cst.Subscript and type(t.value) is cst.Name and t.value.value == holder.value
                   for t in targets):
                return True
        return False

    # -- helpers ---------------------------------------------------------------------------------
    def _single_value(self, name: cst.Name, scope: Scope,
                      binding_only: bool = False) -> tuple[cst.BaseExpression, Scope] | None:
        """The one value a name holds where it is read (`name = value`, bound once), with the scope
        that evaluates it; None for a parameter, a name bound more than once or otherwise."""
        origins = self.origins
        found = origins.origins(name.value, scope) if binding_only else origins.reaching(name, scope)
        if found is None:
            return None
        owner, bound = found
        values = [o for o in bound if o.kind != "annotation"]
        if len(values) != 1 or values[0].kind != "value" or values[0].value is None:
            return None
        return values[0].value, owner

    def _assigned(self, field: str, cls: cst.ClassDef | None, classes_too: bool = False,
                  made: cst.Call | None = None) -> bool:
        """Whether the file assigns the attribute `field` of an object that may be the configuration
        object (`made` by that call, if known): any receiver but `self` in the methods of another
        class (`self.num_steps = n` in a trainer's `__init__` sets the trainer's own), and a name
        bound once to another instance of a class of the file (`tuned = Config(); tuned.n = 8`)."""
        for receiver, scope in self._attribute_stores().get(field, ()):
            if type(receiver) is not cst.Name or receiver.value not in ("self", "cls"):
                if type(receiver) is cst.Name and made is not None and self._other_instance(receiver, scope, made):
                    continue
                return True
            method_class = scope.parent.node if scope.parent is not None and scope.parent.kind == "class" else None
            if method_class is None or method_class is cls or (classes_too and receiver.value == "cls"):
                return True
        return False

    def _other_instance(self, receiver: cst.Name, scope: Scope, made: cst.Call) -> bool:
        """The name holds an instance of a class of the file made by another call than `made`."""
        value = self._single_value(receiver, scope)
        return (value is not None and type(value[0]) is cst.Call and value[0] is not made
                and self._class_named(value[0].func, value[1]) is not None)

    def _attribute_stores(self) -> dict[str, list[tuple[cst.BaseExpression, Scope]]]:
        """attribute -> (receiver, scope) of each assignment of an attribute so named in the file,
        `setattr(x, "name", …)` included (a `setattr` with a computed name stores under `*`)."""
        if self._stores is None:
            self._stores = {}
            model = SemanticModel.of(self.ctx)
            for site in model.sites_of(cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Call):
                node = site.node
                if type(node) is cst.Call:
                    name = self.ctx.names.qualified_name(node.func, site.scope)
                    if name == "builtins.setattr" or type(node.func) is cst.Attribute and node.func.attr.value == "__setattr__":
                        attribute = _argument(node, 1 if name == "builtins.setattr" else 0, "name")
                        key = attribute.evaluated_value if type(attribute) is cst.SimpleString else "*"
                        receiver = node.args[0].value if name == "builtins.setattr" and node.args else node.func
                        self._stores.setdefault(key, []).append((receiver, site.scope))
                    continue
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                for target in targets:
                    for store in (part for part in target_parts(target) if type(part) is cst.Attribute):
                        self._stores.setdefault(store.attr.value, []).append((store.value, site.scope))
            for key in list(self._stores):
                if key != "*":
                    self._stores[key] = self._stores[key] + self._stores.get("*", [])
        return self._stores

    def _ask_project(self, dotted: str | None, how: str | None, field: str) -> ConfiguredInteger | None:
        project = self.ctx.project
        if project is None or dotted is None or how is None or self._assigned(field, None):
            return None  # an object of another module may still be assigned here (`cfg.num_steps = 5`)
        return project.configured(dotted, how, field)

    def _line(self, node: cst.CSTNode) -> int:
        return node_spans(self.ctx.module, [node])[id(node)][0][0]


def _class_scope(cls: cst.ClassDef, scope: Scope) -> Scope:
    """The scope a class of the file is defined in, as seen from a scope that reads it."""
    found = scope.lookup(cls.name.value)
    return found[0] if found is not None else scope


def _how_called(call: cst.Call, field: str) -> str | None:
    """How a call of a class or function is made, as far as `field` is concerned: with no argument
    at all, with keywords other than `field` only, or None (positional arguments, `**kw`, or the field)."""
    if not call.args:
        return CALLED_BARE
    if all(a.keyword is not None and not a.star and a.keyword.value != field for a in call.args):
        return CALLED_WITH_KEYWORDS
    return None


def _defines(cls: cst.ClassDef, name: str) -> bool:
    body = cls.body.body if type(cls.body) is cst.IndentedBlock else ()
    return any(type(line) is cst.FunctionDef and line.name.value == name for line in body)


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return positional[position] if position < len(positional) else None


def _option_strings(call: cst.Call) -> list[str]:
    return [a.value.evaluated_value for a in call.args if a.keyword is None and type(a.value) is cst.SimpleString
            and isinstance(a.value.evaluated_value, str)]


def _destination(call: cst.Call) -> str | None:
    """The attribute of the parsed namespace an `add_argument` call fills: `dest=`, else its first
    long option (`--num-steps` -> `num_steps`), else its first short one; None for a positional."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dest":
            value = arg.value
            return value.evaluated_value if type(value) is cst.SimpleString else None
    spelled = _option_strings(call)
    if any(a.star for a in call.args) or not spelled or not all(s.startswith("-") for s in spelled):
        return None
    chosen = next((s for s in spelled if s.startswith("--")), spelled[0])
    return chosen.lstrip("-").replace("-", "_") or None


def _literal_false(value: cst.BaseExpression | None) -> bool:
    return value is None or type(value) is cst.Name and value.value == "False"


def _top_level_assignment(function: cst.CSTNode, receiver: cst.Name) -> cst.Assign | None:
    """The `=` statement of the function's own body (not nested in a branch) that has the attribute
    of `receiver` among its targets."""
    body = function.body.body if type(function.body) is cst.IndentedBlock else ()
    for line in body:
        if type(line) is not cst.SimpleStatementLine:
            continue
        for small in line.body:
            if type(small) is cst.Assign and any(type(t.target) is cst.Attribute and t.target.value is receiver
                                                 for t in small.targets):
                return small
    return None
