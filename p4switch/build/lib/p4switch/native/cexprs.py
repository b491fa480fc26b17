"""Typed expressions to C expressions over `uint64_t`, with P4's wraparound arithmetic.

As in `p4switch.compiler.exprs`, every value is canonical: a `bit<N>` or `int<N>` (N <= 64) is
its N-bit pattern in a `uint64_t`, a `bool` is 0 or 1. Only the operators that can leave the
range are masked; signed comparisons and right shifts flip or extend the sign bit. A value wider
than 64 bits has no C form here: `NativeUnsupported`, at generation time.
"""

from __future__ import annotations

from p4switch import ir
from p4switch.compiler.bits import lookahead_bytes
from p4switch.compiler.exprs import Storage
from p4switch.compiler.layout import Layout, Path
from p4switch.exceptions import CompilerBug, NativeUnsupported

MAX_WIDTH = 64


class CStorage(Storage):
    """`Storage` that also records the C locals a function uses, to declare them."""

    def __init__(self, layout: Layout) -> None:
        super().__init__(layout)
        self.used: set[str] = set()

    def ref(self, var: ir.Var, path: Path) -> str:
        name = super().ref(var, path)
        if not var.in_slots:
            self.used.add(name)
        return name


def literal(value: int | bool, where: str = "") -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if not 0 <= value < 1 << MAX_WIDTH:
        raise NativeUnsupported(f"constant {value} does not fit 64 bits", where)
    return f"{value:#x}ull" if value > 4096 else f"{value}ull"


def check_width(t: ir.Type, what: str, where: str) -> None:
    if isinstance(t, ir.BitT) and t.width > MAX_WIDTH:
        raise NativeUnsupported(f"{what} of type {t} (wider than 64 bits)", where)
    if isinstance(t, ir.VarbitT):
        raise NativeUnsupported(f"{what} of type {t}", where)


class CExprCompiler:
    def __init__(self, storage: CStorage, where: str) -> None:
        self.storage = storage
        self.where = where  # where the code being compiled comes from, for NativeUnsupported
        self.tables: dict[str, str] = {}  # table -> its C function
        self.exits: set[str] = set()  # tables whose actions may `exit`
        self.in_parser = False
        self.too_short = 1

    def expr(self, e: ir.Expr) -> str:
        check_width(e.type, f"expression {type(e).__name__}", self.where)
        if isinstance(e, ir.Const):
            return literal(e.value, self.where)
        if isinstance(e, ir.VarRef | ir.Member):
            return self.storage.of(e)
        if isinstance(e, ir.Slice):
            mask = (1 << (e.hi - e.lo + 1)) - 1
            base = self.expr(e.base)
            if e.lo == 0:
                return f"({base} & {literal(mask)})"
            return f"(({base} >> {e.lo}) & {literal(mask)})"
        if isinstance(e, ir.Cast):
            return self._cast(e)
        if isinstance(e, ir.Unary):
            return self._unary(e)
        if isinstance(e, ir.Binary):
            return self._binary(e)
        if isinstance(e, ir.Mux):
            return f"(({self.expr(e.cond)}) ? {self.expr(e.yes)} : {self.expr(e.no)})"
        if isinstance(e, ir.IsValid):
            return self.storage.valid(e.header)
        if isinstance(e, ir.TableHit):
            return self._table_hit(e)
        if isinstance(e, ir.Lookahead):
            return self._lookahead(e)
        raise CompilerBug(f"no C code for expression {type(e).__name__}")

    def _table_hit(self, e: ir.TableHit) -> str:
        check = " if (c->exiting) return;" if e.table in self.exits else ""
        test = "_hit" if e.hit else "!_hit"
        return f"({{ int _hit; {self.tables[e.table]}(c, S, &_hit);{check} (uint64_t)({test}); }})"

    def _lookahead(self, e: ir.Lookahead) -> str:
        if not self.in_parser:
            raise CompilerBug("lookahead outside a parser")
        if not isinstance(e.type, ir.BitT):
            raise NativeUnsupported(f"lookahead of type {e.type}", self.where)
        skip, nbytes, shift, need = lookahead_bytes(e)
        if nbytes > 8:
            raise NativeUnsupported(f"lookahead of {e.type} across more than 8 bytes", self.where)
        return (
            f"({{ if (n - off < {need}) P4S_REJECT({self.too_short}); "
            f"(p4s_get(data + off + {skip}, {nbytes}) >> {shift}) & {literal(e.type.mask)}; }})"
        )

    def _cast(self, e: ir.Cast) -> str:
        value = self.expr(e.expr)
        source, target = e.expr.type, e.type
        if isinstance(target, ir.BoolT):
            return f"(uint64_t)({value} == 1)"
        if not isinstance(target, ir.BitT):
            raise NativeUnsupported(f"a cast to {target}", self.where)
        if isinstance(source, ir.BoolT):
            return f"(uint64_t)({value} ? 1 : 0)"
        if not isinstance(source, ir.BitT):
            raise NativeUnsupported(f"a cast from {source}", self.where)
        if target.width < source.width:
            return f"({value} & {literal(target.mask)})"
        if target.width > source.width and source.signed:
            sign = literal(1 << (source.width - 1))
            return f"((({value} ^ {sign}) - {sign}) & {literal(target.mask)})"
        return value

    def _unary(self, e: ir.Unary) -> str:
        value = self.expr(e.expr)
        if e.op == "!":
            return f"(uint64_t)(!{value})"
        assert isinstance(e.type, ir.BitT)
        if e.op == "~":
            return f"({value} ^ {literal(e.type.mask)})"
        return f"((0ull - {value}) & {literal(e.type.mask)})"

    def _binary(self, e: ir.Binary) -> str:
        op, t = e.op, e.type
        a, b = self.expr(e.left), self.expr(e.right)
        if op in ("&&", "||", "==", "!="):
            return f"(uint64_t)({a} {op} {b})"
        if op in ("<", ">", "<=", ">="):
            lt = e.left.type
            if isinstance(lt, ir.BitT) and lt.signed:
                sign = literal(1 << (lt.width - 1))
                return f"(uint64_t)(({a} ^ {sign}) {op} ({b} ^ {sign}))"
            return f"(uint64_t)({a} {op} {b})"
        if not isinstance(t, ir.BitT):
            raise NativeUnsupported(f"operator {op} on {t}", self.where)
        mask = literal(t.mask)
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op in ("+", "-", "*"):
            return f"(({a} {op} {b}) & {mask})"
        if op in ("/", "%"):
            return f"(({b}) ? ({a}) {op} ({b}) : 0ull)"
        if op == "++":
            assert isinstance(e.right.type, ir.BitT)
            return f"(({a} << {e.right.type.width}) | {b})"
        if op == "<<":
            return self._shift_left(e, a, b, t)
        if op == ">>":
            return self._shift_right(e, a, b, t)
        if op in ("|+|", "|-|"):
            signed = "s" if t.signed else "u"
            fn = f"p4s_sat_{'add' if op == '|+|' else 'sub'}{signed}"
            return f"{fn}({a}, {b}, {t.width})"
        raise CompilerBug(f"no C code for operator {op}")

    @staticmethod
    def _shift_left(e: ir.Binary, a: str, b: str, t: ir.BitT) -> str:
        mask = literal(t.mask)
        if isinstance(e.right, ir.Const):
            return "0ull" if int(e.right.value) >= t.width else f"(({a} << {b}) & {mask})"
        return f"(({b}) < {t.width} ? (({a} << ({b})) & {mask}) : 0ull)"

    @staticmethod
    def _shift_right(e: ir.Binary, a: str, b: str, t: ir.BitT) -> str:
        if t.signed:
            sign = literal(1 << (t.width - 1))
            amount = f"(({b}) < 63 ? ({b}) : 63)"
            value = f"(int64_t)(({a} ^ {sign}) - {sign})"
            return f"((uint64_t)({value} >> {amount}) & {literal(t.mask)})"
        if isinstance(e.right, ir.Const):
            return "0ull" if int(e.right.value) >= MAX_WIDTH else f"({a} >> {b})"
        return f"(({b}) < 64 ? {a} >> ({b}) : 0ull)"
