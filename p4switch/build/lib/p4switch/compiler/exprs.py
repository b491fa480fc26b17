"""Typed expressions to Python expressions, with P4's wraparound arithmetic.

Every value is kept canonical: a `bit<N>` or `int<N>` as its N-bit pattern, so only the
operators that can leave the range (+, -, *, <<, unary -, ~) are masked. Signed comparisons
and right shifts flip the sign bit (x ^ 2**(N-1)) to compare or shift as Python ints.
"""

from __future__ import annotations

from p4switch import ir
from p4switch.compiler.bits import lookahead_bytes
from p4switch.compiler.layout import Layout, Path, path_of
from p4switch.exceptions import CompilerBug

_LOCAL = str.maketrans({"$": "_0"})


class Storage:
    """Where a variable's scalars live: a slot of the packet list, or a Python local."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._names: dict[ir.Var, str] = {}

    def local(self, var: ir.Var) -> str:
        if var not in self._names:
            self._names[var] = f"v{len(self._names)}_{var.name}"
        return self._names[var]

    def ref(self, var: ir.Var, path: Path) -> str:
        if var.in_slots:
            return f"S[{self.layout.slot(var, path)}]"
        return self.local(var) + "".join("_" + p.translate(_LOCAL) for p in path)

    def of(self, e: ir.Expr) -> str:
        found = path_of(e)
        assert found is not None, f"not a reference: {e}"
        return self.ref(*found)

    def valid(self, header: ir.Expr) -> str:
        var, path = path_of(header) or (None, ())
        assert var is not None
        return self.ref(var, (*path, "$valid"))


def literal(value: int | bool) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return hex(value) if value > 4096 else str(value)


class ExprCompiler:
    def __init__(self, storage: Storage, tables: dict[str, str] | None = None) -> None:
        self.storage = storage
        self.tables = tables if tables is not None else {}  # table name -> its apply function
        self.lookahead: str | None = None  # a format string, set while compiling a parser

    def expr(self, e: ir.Expr) -> str:
        if isinstance(e, ir.Const):
            return literal(e.value)
        if isinstance(e, ir.VarRef | ir.Member):
            return self.storage.of(e)
        if isinstance(e, ir.Slice):
            mask = (1 << (e.hi - e.lo + 1)) - 1
            base = self.expr(e.base)
            return f"({base} & {mask})" if e.lo == 0 else f"(({base} >> {e.lo}) & {mask})"
        if isinstance(e, ir.Cast):
            return self._cast(e)
        if isinstance(e, ir.Unary):
            return self._unary(e)
        if isinstance(e, ir.Binary):
            return self._binary(e)
        if isinstance(e, ir.Mux):
            return f"({self.expr(e.yes)} if {self.expr(e.cond)} else {self.expr(e.no)})"
        if isinstance(e, ir.IsValid):
            return self.storage.valid(e.header)
        if isinstance(e, ir.TableHit):
            call = f"{self.tables[e.table]}(S)"
            return call if e.hit else f"(not {call})"
        if isinstance(e, ir.Lookahead):
            assert self.lookahead is not None, "lookahead outside a parser"
            assert isinstance(e.type, ir.BitT)
            skip, nbytes, shift, need = lookahead_bytes(e)
            return self.lookahead.format(nbytes, shift, e.type.mask, skip, need)
        raise CompilerBug(f"no code for expression {type(e).__name__}")

    def _cast(self, e: ir.Cast) -> str:
        value = self.expr(e.expr)
        source, target = e.expr.type, e.type
        if isinstance(target, ir.BoolT):
            return f"({value} == 1)"
        assert isinstance(target, ir.BitT)
        if isinstance(source, ir.BoolT):
            return f"(1 if {value} else 0)"
        assert isinstance(source, ir.BitT)
        if target.width < source.width:
            return f"({value} & {target.mask})"
        if target.width > source.width and source.signed:
            sign = 1 << (source.width - 1)
            return f"((({value} ^ {sign}) - {sign}) & {target.mask})"
        return value

    def _unary(self, e: ir.Unary) -> str:
        value = self.expr(e.expr)
        if e.op == "!":
            return f"(not {value})"
        assert isinstance(e.type, ir.BitT)
        if e.op == "~":
            return f"({value} ^ {e.type.mask})"
        return f"(-{value} & {e.type.mask})"

    def _binary(self, e: ir.Binary) -> str:
        op, t = e.op, e.type
        a, b = self.expr(e.left), self.expr(e.right)
        if op in ("&&", "||"):
            return f"({a} {'and' if op == '&&' else 'or'} {b})"
        if op in ("==", "!="):
            return f"({a} {op} {b})"
        if op in ("<", ">", "<=", ">="):
            lt = e.left.type
            if isinstance(lt, ir.BitT) and lt.signed:
                sign = 1 << (lt.width - 1)
                return f"(({a} ^ {sign}) {op} ({b} ^ {sign}))"
            return f"({a} {op} {b})"
        assert isinstance(t, ir.BitT)
        mask = t.mask
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op in ("+", "-", "*"):
            return f"(({a} {op} {b}) & {mask})"
        if op in ("/", "%"):
            return f"(({a} {'//' if op == '/' else '%'} {b}) if {b} else 0)"
        if op == "++":
            assert isinstance(e.right.type, ir.BitT)
            return f"(({a} << {e.right.type.width}) | {b})"
        if op == "<<":
            if isinstance(e.right, ir.Const):
                return "0" if int(e.right.value) >= t.width else f"(({a} << {b}) & {mask})"
            return f"((({a} << {b}) & {mask}) if {b} < {t.width} else 0)"
        if op == ">>":
            if t.signed:
                sign = 1 << (t.width - 1)
                return f"(((({a} ^ {sign}) - {sign}) >> {b}) & {mask})"
            return f"({a} >> {b})"
        if op in ("|+|", "|-|"):
            return self._saturating(op, a, b, t)
        raise CompilerBug(f"no code for operator {op}")

    def _saturating(self, op: str, a: str, b: str, t: ir.BitT) -> str:
        sign = "+" if op == "|+|" else "-"
        if not t.signed:
            if sign == "+":
                return f"min({a} + {b}, {t.mask})"
            return f"max({a} - {b}, 0)"
        half = 1 << (t.width - 1)
        value = f"((({a} ^ {half}) - {half}) {sign} (({b} ^ {half}) - {half}))"
        return f"(max({-half}, min({half - 1}, {value})) & {t.mask})"
