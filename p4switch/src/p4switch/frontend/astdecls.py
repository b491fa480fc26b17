"""Build `syntax` declarations from lark's parse tree: types, externs, parsers, controls."""

from __future__ import annotations

import dataclasses
from typing import Any

from lark import v_args

from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.astbuild import CodeBuilder, type_of_head
from p4switch.ir import Annotation


@v_args(meta=True)
class DeclBuilder(CodeBuilder):
    """The whole tree: declarations on top of the statements and expressions of CodeBuilder."""

    def start(self, meta: Any, c: list[Any]) -> list[Any]:
        return [d for d in c if d is not None]

    def empty_decl(self, meta: Any, c: list[Any]) -> None:
        return None

    def const_decl(self, meta: Any, c: list[Any]) -> s.TopDecl:
        annos, type_, name, value = c
        stmt = s.ConstDecl(self._tok(name), type_, str(name), value, annos)
        return s.TopDecl(stmt.loc, str(name), stmt)

    def typedef_decl(self, meta: Any, c: list[Any]) -> s.TypedefDecl:
        return s.TypedefDecl(self._tok(c[2]), str(c[2]), c[1])

    def stack_typedef_decl(self, meta: Any, c: list[Any]) -> s.TypedefDecl:
        _annos, type_, size, name = c
        return s.TypedefDecl(
            self._tok(name), str(name), s.StackTypeRef(self._loc(meta), type_, size)
        )

    def newtype_decl(self, meta: Any, c: list[Any]) -> s.TypedefDecl:
        return s.TypedefDecl(self._tok(c[2]), str(c[2]), c[1], newtype=True, annotations=c[0])

    def _struct(self, kind: str, meta: Any, c: list[Any]) -> s.StructDecl:
        annos, name, tparams, *fields = c
        loc = self._tok(name)
        return s.StructDecl(loc, str(name), kind, tuple(fields), annos, tuple(tparams or ()))

    def struct_decl(self, meta: Any, c: list[Any]) -> s.StructDecl:
        return self._struct("struct", meta, c)

    def header_decl(self, meta: Any, c: list[Any]) -> s.StructDecl:
        return self._struct("header", meta, c)

    def header_union_decl(self, meta: Any, c: list[Any]) -> s.StructDecl:
        return self._struct("header_union", meta, c)

    def field(self, meta: Any, c: list[Any]) -> s.FieldDecl:
        annos, type_, name = c
        return s.FieldDecl(self._tok(name), type_, str(name), annos)

    def stack_field(self, meta: Any, c: list[Any]) -> s.FieldDecl:
        annos, type_, size, name = c
        ref = s.StackTypeRef(self._loc(meta), type_, size)
        return s.FieldDecl(self._tok(name), ref, str(name), annos)

    def enum_decl(self, meta: Any, c: list[Any]) -> s.EnumDecl:
        _annos, name, *members = c
        return s.EnumDecl(self._tok(name), str(name), tuple((str(m), None) for m in members))

    def ser_enum_decl(self, meta: Any, c: list[Any]) -> s.EnumDecl:
        _annos, type_, name, *members = c
        return s.EnumDecl(self._tok(name), str(name), tuple(members), type_)

    def enum_member(self, meta: Any, c: list[Any]) -> tuple[str, s.ExprSyntax]:
        return str(c[0]), c[1]

    def error_decl(self, meta: Any, c: list[Any]) -> s.ErrorDecl:
        return s.ErrorDecl(self._loc(meta), tuple(str(t) for t in c[1:]))

    def match_kind_decl(self, meta: Any, c: list[Any]) -> s.MatchKindDecl:
        return s.MatchKindDecl(self._loc(meta), tuple(str(t) for t in c[1:]))

    def extern_object_decl(self, meta: Any, c: list[Any]) -> s.ExternDecl:
        annos, name, tparams, *methods = c
        return s.ExternDecl(self._tok(name), str(name), tparams or (), tuple(methods), annos)

    def method(self, meta: Any, c: list[Any]) -> s.MethodDecl:
        annos, ret, name, tparams, params = c
        return s.MethodDecl(self._tok(name), str(name), ret, tparams or (), params, annos)

    def constructor(self, meta: Any, c: list[Any]) -> s.MethodDecl:
        annos, name, params = c
        return s.MethodDecl(self._tok(name), str(name), None, (), params, annos)

    def extern_function_decl(self, meta: Any, c: list[Any]) -> s.ExternFunctionDecl:
        annos, ret, name, tparams, params = c
        proto = s.MethodDecl(self._tok(name), str(name), ret, tparams or (), params, annos)
        return s.ExternFunctionDecl(proto.loc, str(name), proto)

    def params(self, meta: Any, c: list[Any]) -> tuple[s.ParamDecl, ...]:
        return tuple(p for p in c if p is not None)

    def param(self, meta: Any, c: list[Any]) -> s.ParamDecl:
        annos, direction, type_, name, default = c
        return s.ParamDecl(self._tok(name), direction, type_, str(name), annos, default)

    def dir_none(self, meta: Any, c: list[Any]) -> str:
        return ""

    def dir_in(self, meta: Any, c: list[Any]) -> str:
        return "in"

    def dir_out(self, meta: Any, c: list[Any]) -> str:
        return "out"

    def dir_inout(self, meta: Any, c: list[Any]) -> str:
        return "inout"

    def function_decl(self, meta: Any, c: list[Any]) -> s.FunctionDecl:
        annos, type_, name, tparams, params, body = c
        return s.FunctionDecl(
            self._tok(name), str(name), type_, params, body, annos, tuple(tparams or ())
        )

    def named_function_decl(self, meta: Any, c: list[Any]) -> s.FunctionDecl:
        """A function returning a named type (a header or struct): parsed as an expression,
        as a declaration's type is, so that it does not clash with an instantiation."""
        annos, head, *rest = c
        return self.function_decl(meta, [annos, type_of_head(head), *rest])

    def _block_type(self, kind: str, c: list[Any]) -> s.BlockTypeDecl:
        annos, name, tparams, params = c
        return s.BlockTypeDecl(self._tok(name), kind, str(name), tparams or (), params, annos)

    def parser_type_decl(self, meta: Any, c: list[Any]) -> s.BlockTypeDecl:
        return self._block_type("parser", c)

    def control_type_decl(self, meta: Any, c: list[Any]) -> s.BlockTypeDecl:
        return self._block_type("control", c)

    def package_decl(self, meta: Any, c: list[Any]) -> s.BlockTypeDecl:
        return self._block_type("package", c)

    def top_instantiation(self, meta: Any, c: list[Any]) -> s.TopDecl:
        stmt = self.local_var_or_instance(meta, [*c[:3], None])
        if not isinstance(stmt, s.Instantiation):
            raise P4CompileError.at(stmt.loc, "only constants and instantiations at top level")
        return s.TopDecl(stmt.loc, stmt.name, stmt)

    def top_generic_instantiation(self, meta: Any, c: list[Any]) -> s.TopDecl:
        stmt = self.local_generic_instance(meta, c)
        return s.TopDecl(stmt.loc, stmt.name, stmt)

    def parser_decl(self, meta: Any, c: list[Any]) -> s.ParserDecl:
        annos, name, params, ctor, *rest = c
        locals_ = tuple(_local(x) for x in rest if not isinstance(x, s.StateDecl))
        states = tuple(x for x in rest if isinstance(x, s.StateDecl))
        loc = self._tok(name)
        return s.ParserDecl(loc, str(name), params, locals_, states, annos, ctor or ())

    def parser_state(self, meta: Any, c: list[Any]) -> s.StateDecl:
        annos, name, *stmts, transition = c
        loc = self._tok(name)
        if transition is None:
            return s.StateDecl(loc, str(name), tuple(stmts), None, (), annos)
        select, cases = transition
        return s.StateDecl(loc, str(name), tuple(stmts), select, cases, annos)

    def transition_direct(self, meta: Any, c: list[Any]) -> tuple[None, tuple[Any, ...]]:
        return None, (
            s.SelectCaseSyntax(self._tok(c[0]), s.DefaultKey(self._tok(c[0])), str(c[0])),
        )

    def transition_select(self, meta: Any, c: list[Any]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(c[0]), tuple(c[1:])

    def transition_select_none(self, meta: Any, c: list[Any]) -> tuple[None, tuple[Any, ...]]:
        """`select()` with no keys (p4c's issue1291-bmv2.p4): only `default` or `_` can match,
        so it is the transition to the first case's state."""
        for case in c:
            if not isinstance(case.keyset, s.DefaultKey | s.DontCare):
                what = "a select with no keys matches only `default` or `_`"
                raise P4CompileError.at(case.loc, what)
        if not c:
            raise P4CompileError.at(self._loc(meta), "a select with no keys needs a `default` case")
        first = c[0]
        return None, (s.SelectCaseSyntax(first.loc, s.DefaultKey(first.loc), first.state),)

    def select_case(self, meta: Any, c: list[Any]) -> s.SelectCaseSyntax:
        return s.SelectCaseSyntax(self._loc(meta), c[0], str(c[1]))

    def tuple_key(self, meta: Any, c: list[Any]) -> s.TupleKey:
        return s.TupleKey(self._loc(meta), tuple(c))

    def mask(self, meta: Any, c: list[Any]) -> s.MaskExpr:
        return s.MaskExpr(self._loc(meta), c[0], c[1])

    def range(self, meta: Any, c: list[Any]) -> s.RangeExpr:
        return s.RangeExpr(self._loc(meta), c[0], c[1])

    def default_key(self, meta: Any, c: list[Any]) -> s.DefaultKey:
        return s.DefaultKey(self._loc(meta))

    def dont_care(self, meta: Any, c: list[Any]) -> s.DontCare:
        return s.DontCare(self._loc(meta))

    def control_decl(self, meta: Any, c: list[Any]) -> s.ControlDecl:
        annos, name, params, ctor, *locals_, apply = c
        locals_ = [_local(x) for x in locals_]
        loc = self._tok(name)
        return s.ControlDecl(loc, str(name), params, tuple(locals_), apply, annos, ctor or ())

    def ctor_params(self, meta: Any, c: list[Any]) -> tuple[s.ParamDecl, ...]:
        return tuple(c[0])

    def value_set_decl(self, meta: Any, c: list[Any]) -> s.ValueSetDecl:
        annos, type_, size, name = c
        return s.ValueSetDecl(self._tok(name), str(name), type_, size, annos)

    def action_decl(self, meta: Any, c: list[Any]) -> s.ActionDecl:
        annos, name, params, body = c
        return s.ActionDecl(self._tok(name), str(name), params, body, annos)

    def table_decl(self, meta: Any, c: list[Any]) -> s.TableDecl:
        annos, name, *items = c
        props: list[s.TableProperty] = []
        pending: list[Annotation] = []  # a property's annotations come before it
        for item in items:
            if isinstance(item, Annotation):
                pending.append(item)
            else:
                props.append(dataclasses.replace(item, annotations=tuple(pending)))
                pending = []
        return s.TableDecl(self._tok(name), str(name), tuple(props), annos)

    def key_prop(self, meta: Any, c: list[Any]) -> s.TableProperty:
        return s.TableProperty(self._loc(meta), "key", tuple(c))

    def actions_prop(self, meta: Any, c: list[Any]) -> s.TableProperty:
        return s.TableProperty(self._loc(meta), "actions", tuple(c))

    def default_action_prop(self, meta: Any, c: list[Any]) -> s.TableProperty:
        return s.TableProperty(self._loc(meta), "default_action", c[0])

    def const_default_action_prop(self, meta: Any, c: list[Any]) -> s.TableProperty:
        return s.TableProperty(self._loc(meta), "default_action", c[0], const=True)

    def entries_prop(self, meta: Any, c: list[Any]) -> s.TableProperty:
        return s.TableProperty(self._loc(meta), "entries", tuple(c))

    def const_entries_prop(self, meta: Any, c: list[Any]) -> s.TableProperty:
        return s.TableProperty(self._loc(meta), "entries", tuple(c), const=True)

    def other_prop(self, meta: Any, c: list[Any]) -> s.TableProperty:
        return s.TableProperty(self._tok(c[0]), str(c[0]), c[1])

    def key_element(self, meta: Any, c: list[Any]) -> s.KeyElement:
        expr, kind, annos = c
        return s.KeyElement(self._loc(meta), expr, str(kind), annos)

    def action_ref(self, meta: Any, c: list[Any]) -> s.ActionRefSyntax:
        return s.ActionRefSyntax(c[1].loc, c[1], c[0])

    def entry_const(self, meta: Any, c: list[Any]) -> bool:
        return True

    def entry(self, meta: Any, c: list[Any]) -> s.EntrySyntax:
        const, priority, keyset, action, annos = c
        if const is not None:
            # the control plane may not change or delete such an entry, which p4switch's
            # runtime does not enforce (p4c's init-entries-bmv2.p4)
            what = "a `const` entry in `entries` is not supported (declare `const entries`)"
            raise P4CompileError.at(self._loc(meta), what)  # the entry starts at `const`
        return s.EntrySyntax(self._loc(meta), keyset, action, priority, annos)


def _local(decl: Any) -> Any:
    """A constant declared in a parser or a control: the grammar builds it as at top level."""
    if isinstance(decl, s.TopDecl) and isinstance(decl.stmt, s.ConstDecl):
        return decl.stmt
    return decl
