"""Build `syntax` nodes from lark's parse tree: types, statements and expressions.

`DeclBuilder` (astdecls.py) adds the declarations; every node gets the user's file:line:col.
"""

from __future__ import annotations

import re
from typing import Any

from lark import Token, Transformer, Tree, v_args

from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.preprocess import Preprocessed
from p4switch.ir import Annotation, Loc

_WORD = re.compile(r"\w+|&&&|\.\.|[^\s\w]")
_INT = re.compile(r"(?:(\d+)([ws]))?(.*)", re.S)

_BINARY = {
    "lor": "||",
    "land": "&&",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "gt": ">",
    "le": "<=",
    "ge": ">=",
    "bor": "|",
    "bxor": "^",
    "band": "&",
    "shl": "<<",
    "shr": ">>",
    "add": "+",
    "sub": "-",
    "concat": "++",
    "sat_add": "|+|",
    "sat_sub": "|-|",
    "mul": "*",
    "div": "/",
    "mod": "%",
}
_UNARY = {"neg": "-", "pos": "+", "bnot": "~", "lnot": "!"}
_KEYWORD_TYPES = {
    "bool_type": "bool",
    "error_type": "error",
    "void_type": "void",
    "string_type": "string",
    "infint_type": "int",
}


def int_value(text: str) -> tuple[int, int | None, bool]:
    """(value, width or None, signed) of a P4 integer literal such as `8w0xff` or `0b1010`."""
    m = _INT.fullmatch(text)
    assert m is not None
    width = int(m[1]) if m[1] else None
    digits = m[3].replace("_", "")
    bases = {"0x": 16, "0X": 16, "0b": 2, "0B": 2, "0o": 8, "0O": 8, "0d": 10, "0D": 10}
    base = bases.get(digits[:2])
    value = int(digits[2:], base) if base else int(digits, 10)
    return value, width, m[2] == "s"


@v_args(meta=True)
class CodeBuilder(Transformer[Token, Any]):
    """Builds types, statements and expressions."""

    def __init__(self, pre: Preprocessed) -> None:
        super().__init__()
        self._pre = pre
        for rule, op in _BINARY.items():
            setattr(self, rule, self._binary(op))
        for rule, op in _UNARY.items():
            setattr(self, rule, self._unary(op))
        for rule, name in _KEYWORD_TYPES.items():
            setattr(self, rule, self._keyword_type(name))

    def _loc(self, meta: Any) -> Loc:
        if getattr(meta, "empty", True):
            return Loc(self._pre.origins[0][0] if self._pre.origins else "<input>", 0, 0)
        m = _WORD.match(self._pre.text, meta.start_pos)
        return self._pre.locate(meta.line, meta.column, m[0] if m else None)

    def _tok(self, tok: Token) -> Loc:
        return self._pre.locate(tok.line or 0, tok.column or 0, str(tok))

    def _binary(self, op: str) -> Any:
        return v_args(meta=True)(lambda meta, c: s.BinaryExpr(self._loc(meta), op, c[0], c[1]))

    def _unary(self, op: str) -> Any:
        return v_args(meta=True)(lambda meta, c: s.UnaryExpr(self._loc(meta), op, c[0]))

    def _keyword_type(self, name: str) -> Any:
        return v_args(meta=True)(lambda meta, c: s.KeywordTypeRef(self._loc(meta), name))

    def annotations(self, meta: Any, c: list[Any]) -> tuple[Annotation, ...]:
        return tuple(c)

    def annotation(self, meta: Any, c: list[Any]) -> Annotation:
        name, body = c
        if body is None:
            return Annotation(str(name))
        args, text = body
        return Annotation(str(name), args, text)

    def raw_annotation(self, meta: Any, c: list[Any]) -> Annotation:
        body = str(c[1])[1:-1]
        return Annotation(str(c[0]), (body,), body)

    def annotated_block(self, meta: Any, c: list[Any]) -> s.BlockStmt:
        block: s.BlockStmt = c[-1]
        return block  # annotations on a block statement are ignored

    def anno_body(self, meta: Any, c: list[Any]) -> tuple[tuple[Any, ...], str]:
        items = [x for x in c if x is not None]
        args = tuple(
            x.value if isinstance(x, s.StrLit | s.IntLit | s.BoolLit) else _source(x) for x in items
        )
        text = "" if getattr(meta, "empty", True) else self._pre.text[meta.start_pos : meta.end_pos]
        return args, " ".join(text.split())

    def named_type(self, meta: Any, c: list[Any]) -> s.NamedTypeRef:
        return s.NamedTypeRef(self._tok(c[0]), str(c[0]))

    def typedef_type(self, meta: Any, c: list[Any]) -> s.NamedTypeRef:
        return s.NamedTypeRef(self._tok(c[0]), str(c[0]))

    def generic_type(self, meta: Any, c: list[Any]) -> s.NamedTypeRef:
        return s.NamedTypeRef(self._tok(c[0]), str(c[0]), tuple(c[1]))

    def type_args(self, meta: Any, c: list[Any]) -> list[Any]:
        return c

    def dont_care_type(self, meta: Any, c: list[Any]) -> s.TypeRef:
        return s.KeywordTypeRef(self._loc(meta), "_")

    def bit_type(self, meta: Any, c: list[Any]) -> s.BitsRef:
        return s.BitsRef(self._loc(meta), self._width(c[0]), False)

    def varbit_type(self, meta: Any, c: list[Any]) -> s.VarbitRef:
        return s.VarbitRef(self._loc(meta), self._width(c[0]))

    def int_type(self, meta: Any, c: list[Any]) -> s.BitsRef:
        return s.BitsRef(self._loc(meta), self._width(c[0]), True)

    def _width(self, w: Token | s.ExprSyntax) -> s.ExprSyntax:
        return self.int_lit(None, [w]) if isinstance(w, Token) else w

    def bit1_type(self, meta: Any, c: list[Any]) -> s.BitsRef:
        loc = self._loc(meta)
        return s.BitsRef(loc, s.IntLit(loc, 1, None, False, "1"), False)

    def type_params(self, meta: Any, c: list[Any]) -> tuple[str, ...]:
        return tuple(str(t) for t in c)

    def local_var_or_instance(self, meta: Any, c: list[Any]) -> s.StmtSyntax:
        annos, head, name, init = c
        loc = self._tok(name)
        if isinstance(head, s.CallExpr):
            if init is not None:
                raise P4CompileError.at(init.loc, "an instantiation takes no initializer")
            type_ = type_of_head(head.callee)
            return s.Instantiation(loc, type_, head.args, str(name), annos)
        return s.VarDecl(loc, type_of_head(head), str(name), init, annos)

    def local_typed_var(self, meta: Any, c: list[Any]) -> s.VarDecl:
        annos, type_, name, init = c
        return s.VarDecl(self._tok(name), type_, str(name), init, annos)

    def local_generic_instance(self, meta: Any, c: list[Any]) -> s.Instantiation:
        annos, tname, targs, args, name = c
        type_ = s.NamedTypeRef(self._tok(tname), str(tname), tuple(targs))
        return s.Instantiation(self._tok(name), type_, tuple(args or ()), str(name), annos)

    def local_generic_var(self, meta: Any, c: list[Any]) -> s.VarDecl:
        annos, tname, targs, name, init = c
        type_ = s.NamedTypeRef(self._tok(tname), str(tname), tuple(targs))
        return s.VarDecl(self._tok(name), type_, str(name), init, annos)

    def generic_var_stmt(self, meta: Any, c: list[Any]) -> s.VarDecl:
        return self.local_generic_var(meta, [(), *c])

    def block(self, meta: Any, c: list[Any]) -> s.BlockStmt:
        return s.BlockStmt(self._loc(meta), tuple(c))

    def for_stmt(self, meta: Any, c: list[Any]) -> s.ForStmt:
        init, cond, updates, body = c
        return s.ForStmt(self._loc(meta), tuple(init or ()), cond, tuple(updates or ()), body)

    def for_list(self, meta: Any, c: list[Any]) -> list[Any]:
        return c

    def for_typed_var(self, meta: Any, c: list[Any]) -> s.VarDecl:
        return self.local_typed_var(meta, [(), *c])

    def for_var(self, meta: Any, c: list[Any]) -> s.StmtSyntax:
        return self.local_var_or_instance(meta, [(), *c])

    def for_in_stmt(self, meta: Any, c: list[Any]) -> s.ForInStmt:
        type_, name, over, body = c
        return s.ForInStmt(self._loc(meta), type_, str(name), over, body)

    def for_in_named_stmt(self, meta: Any, c: list[Any]) -> s.ForInStmt:
        head, name, over, body = c
        return s.ForInStmt(self._loc(meta), type_of_head(head), str(name), over, body)

    def break_stmt(self, meta: Any, c: list[Any]) -> s.BreakStmt:
        return s.BreakStmt(self._loc(meta))

    def continue_stmt(self, meta: Any, c: list[Any]) -> s.ContinueStmt:
        return s.ContinueStmt(self._loc(meta))

    def assign_stmt(self, meta: Any, c: list[Any]) -> s.AssignStmt:
        return s.AssignStmt(self._loc(meta), c[0], c[1])

    def compound_stmt(self, meta: Any, c: list[Any]) -> s.AssignStmt:
        """`x op= e`: `x = x op e`, marked compound: the checker evaluates `x` once (a call in
        its index is made once)."""
        target, op, value = c
        loc = self._loc(meta)
        value = s.BinaryExpr(loc, str(op)[:-1], target, value)
        return s.AssignStmt(loc, target, value, compound=True)

    def call_stmt(self, meta: Any, c: list[Any]) -> s.CallStmt:
        return s.CallStmt(self._loc(meta), c[0])

    def var_stmt(self, meta: Any, c: list[Any]) -> s.StmtSyntax:
        return self.local_var_or_instance(meta, [(), *c])

    def typed_var_stmt(self, meta: Any, c: list[Any]) -> s.VarDecl:
        return self.local_typed_var(meta, [(), *c])

    def generic_instance_stmt(self, meta: Any, c: list[Any]) -> s.Instantiation:
        return self.local_generic_instance(meta, [(), *c])

    def const_stmt(self, meta: Any, c: list[Any]) -> s.ConstDecl:
        type_, name, value = c
        return s.ConstDecl(self._tok(name), type_, str(name), value)

    def if_stmt(self, meta: Any, c: list[Any]) -> s.IfStmt:
        return s.IfStmt(self._loc(meta), c[0], c[1], c[2])

    def return_stmt(self, meta: Any, c: list[Any]) -> s.ReturnStmt:
        return s.ReturnStmt(self._loc(meta), c[0])

    def exit_stmt(self, meta: Any, c: list[Any]) -> s.ExitStmt:
        return s.ExitStmt(self._loc(meta))

    def empty_stmt(self, meta: Any, c: list[Any]) -> s.EmptyStmt:
        return s.EmptyStmt(self._loc(meta))

    def switch_stmt(self, meta: Any, c: list[Any]) -> s.SwitchStmt:
        return s.SwitchStmt(self._loc(meta), c[0], tuple(c[1:]))

    def switch_case(self, meta: Any, c: list[Any]) -> s.SwitchCaseSyntax:
        return s.SwitchCaseSyntax(self._loc(meta), c[0], c[1])

    def case_label(self, meta: Any, c: list[Any]) -> s.ExprSyntax:
        label: s.ExprSyntax = c[0]
        return label  # an action's name, or a constant of the switched value's type

    def default_label(self, meta: Any, c: list[Any]) -> None:
        return None

    def ternary(self, meta: Any, c: list[Any]) -> s.TernaryExpr:
        return s.TernaryExpr(self._loc(meta), c[0], c[1], c[2])

    def cast(self, meta: Any, c: list[Any]) -> s.CastExpr:
        return s.CastExpr(self._loc(meta), c[0], c[1])

    def member(self, meta: Any, c: list[Any]) -> s.MemberExpr:
        return s.MemberExpr(self._tok(c[1]), c[0], str(c[1]))

    def index(self, meta: Any, c: list[Any]) -> s.IndexExpr:
        return s.IndexExpr(self._loc(meta), c[0], c[1])

    def slice(self, meta: Any, c: list[Any]) -> s.SliceExpr:
        return s.SliceExpr(self._loc(meta), c[0], c[1], c[2])

    def call(self, meta: Any, c: list[Any]) -> s.CallExpr:
        return s.CallExpr(self._loc(meta), c[0], tuple(c[1] or ()))

    def generic_method_call(self, meta: Any, c: list[Any]) -> s.CallExpr:
        base, name, type_args, args = c
        callee = s.MemberExpr(self._tok(name), base, str(name))
        return s.CallExpr(self._loc(meta), callee, tuple(args or ()), tuple(type_args))

    def generic_call(self, meta: Any, c: list[Any]) -> s.CallExpr:
        name, type_args, args = c
        callee = s.Name(self._tok(name), str(name))
        return s.CallExpr(self._loc(meta), callee, tuple(args or ()), tuple(type_args))

    def lookahead(self, meta: Any, c: list[Any]) -> s.CallExpr:
        callee = s.MemberExpr(self._tok(c[1]), c[0], "lookahead")
        return s.CallExpr(self._loc(meta), callee, (), (c[2],))

    def args(self, meta: Any, c: list[Any]) -> list[Any]:
        return c

    def named_arg(self, meta: Any, c: list[Any]) -> s.NamedArg:
        return s.NamedArg(self._tok(c[0]), str(c[0]), c[1])

    def named_list_arg(self, meta: Any, c: list[Any]) -> s.NamedArg:
        value = s.ListLit(self._loc(meta), tuple(c[1] or ()))
        return s.NamedArg(self._tok(c[0]), str(c[0]), value)

    def expr_list(self, meta: Any, c: list[Any]) -> list[Any]:
        return c

    def init_list(self, meta: Any, c: list[Any]) -> list[Any]:
        return c

    def named_list_lit(self, meta: Any, c: list[Any]) -> s.ListLit:
        pairs = [x for x in c if x is not None]
        return s.ListLit(self._loc(meta), tuple(v for _, v in pairs), tuple(n for n, _ in pairs))

    def named_init(self, meta: Any, c: list[Any]) -> tuple[str, s.ExprSyntax]:
        return str(c[0]), c[1]

    def list_lit(self, meta: Any, c: list[Any]) -> s.ListLit:
        return s.ListLit(self._loc(meta), tuple(c[0] or ()))

    def int_lit(self, meta: Any, c: list[Any]) -> s.IntLit:
        tok = c[0]
        value, width, signed = int_value(str(tok))
        return s.IntLit(self._tok(tok), value, width, signed, str(tok))

    def true_lit(self, meta: Any, c: list[Any]) -> s.BoolLit:
        return s.BoolLit(self._loc(meta), True)

    def false_lit(self, meta: Any, c: list[Any]) -> s.BoolLit:
        return s.BoolLit(self._loc(meta), False)

    def str_lit(self, meta: Any, c: list[Any]) -> s.StrLit:
        raw = str(c[0])[1:-1]
        # backslash escapes decoded, any other character kept as written (UTF-8 names as p4c
        # keeps them: p4c's nonstandard_table_names-bmv2.p4)
        unescaped = raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
        return s.StrLit(self._tok(c[0]), unescaped)

    def name(self, meta: Any, c: list[Any]) -> s.Name:
        return s.Name(self._tok(c[0]), str(c[0]))

    def top_name(self, meta: Any, c: list[Any]) -> s.Name:
        return s.Name(self._loc(meta), str(c[0]), top_level=True)

    def error_member(self, meta: Any, c: list[Any]) -> s.ErrorMember:
        return s.ErrorMember(self._loc(meta), str(c[0]))

    def __default__(self, data: str, children: list[Any], meta: Any) -> Any:
        if isinstance(data, Token) or isinstance(children, Tree):  # pragma: no cover
            return Tree(data, children, meta)
        raise P4CompileError.at(self._loc(meta), f"unsupported construct ({data})")


def type_of_head(expr: s.ExprSyntax) -> s.TypeRef:
    """The type named by the head of `T x;` or `T(args) x;` (parsed as an expression)."""
    if isinstance(expr, s.Name) and not expr.top_level:
        return s.NamedTypeRef(expr.loc, expr.name)
    if isinstance(expr, s.IndexExpr):  # `H[2] hs;`: a header stack
        return s.StackTypeRef(expr.loc, type_of_head(expr.base), expr.index)
    raise P4CompileError.at(expr.loc, "expected a type name here")


def _source(expr: s.ExprSyntax) -> str:
    """A short rendering of an annotation argument that is not a plain literal."""
    if isinstance(expr, s.Name):
        return expr.name
    if isinstance(expr, s.MemberExpr):
        return f"{_source(expr.base)}.{expr.name}"
    return type(expr).__name__
