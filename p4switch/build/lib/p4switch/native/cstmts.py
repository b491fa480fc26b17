"""Typed statements to lines of C, statement by statement as `p4switch.compiler.stmts` does."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from p4switch import ir
from p4switch.compiler.layout import (
    CLONE,
    CLONE_FIELD_LIST,
    CLONE_SESSION,
    TRUNCATE,
    flatten_slice,
    leaf_exprs,
    leaves,
)
from p4switch.compiler.layout import path_of as _path_of
from p4switch.compiler.source import Source
from p4switch.exceptions import CompilerBug, NativeUnsupported
from p4switch.native.cbits import pack, serialise, unpack
from p4switch.native.cexprs import CExprCompiler, literal


class CSource(Source):
    """Lines of C with indentation, and fresh temporary names: `Source` with C's blocks."""

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.line(header + " {")
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            self.line("}")


@dataclass
class CNames:
    """C names of the program's objects."""

    actions: dict[str, int] = field(default_factory=dict)  # action -> index (A<i>)
    action_ir: dict[str, ir.Action] = field(default_factory=dict)
    exits: set[str] = field(default_factory=set)  # actions that may run `exit`
    tables: dict[str, int] = field(default_factory=dict)  # table -> index (T<i>)
    registers: dict[str, tuple[int, int]] = field(default_factory=dict)  # -> (index, size)
    counters: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # (index, size, unit)
    sm: dict[str, int] = field(default_factory=dict)
    too_short: int = 1


@dataclass(frozen=True)
class CBlock:
    kind: str  # "action", "control", "parser" or "deparser"
    returns: str = "return;"


def path_of(e: ir.Expr) -> tuple[ir.Var, tuple[str, ...]]:
    found = _path_of(e)
    if found is None:
        raise CompilerBug(f"not a reference: {e}")
    return found


class CStmtCompiler:
    def __init__(self, x: CExprCompiler, names: CNames, src: CSource) -> None:
        self.x = x
        self.names = names
        self.src = src
        self.storage = x.storage

    def block(self, stmts: Sequence[ir.Stmt], info: CBlock) -> None:
        for st in stmts:
            code = _STATEMENTS.get(type(st))
            if code is None:
                raise NativeUnsupported(f"statement {type(st).__name__}", self.x.where)
            code(self, st, info)

    def exit_check(self, may_exit: bool, info: CBlock) -> None:
        """After what may `exit`: leave too (an action copying its out parameters out)."""
        if may_exit:
            leave = info.returns if info.kind == "action" else "return;"
            self.src.line(f"if (c->exiting) {leave}")

    # --- control flow ---------------------------------------------------------------------------

    def _if(self, st: ir.If, info: CBlock) -> None:
        keyword = "if"
        while True:  # an else holding one if is an else if: long chains do not nest deeper
            with self.src.block(f"{keyword} ({self.x.expr(st.cond)})"):
                self.block(st.then, info)
            if len(st.else_) == 1 and isinstance(st.else_[0], ir.If):
                st, keyword = st.else_[0], "else if"
                continue
            if st.else_:
                with self.src.block("else"):
                    self.block(st.else_, info)
            return

    def _return(self, st: ir.Return, info: CBlock) -> None:
        self.src.line(info.returns)

    def _exit(self, st: ir.Exit, info: CBlock) -> None:
        if info.kind in ("control", "deparser"):
            self.src.line(info.returns)
        elif info.kind == "action":  # out and inout parameters are copied out all the same
            self.src.line(f"c->exiting = 1; {info.returns}")
        else:
            raise NativeUnsupported("exit in a parser", self.x.where)

    # --- state ----------------------------------------------------------------------------------

    def _register_read(self, st: ir.RegisterRead, info: CBlock) -> None:
        i, size = self.names.registers[st.register]
        index = self._simple(st.index)
        self.store(st.dest, f"({index} < {size}ull ? c->reg[{i}][{index}] : 0ull)")

    def _register_write(self, st: ir.RegisterWrite, info: CBlock) -> None:
        i, size = self.names.registers[st.register]
        index = self._simple(st.index)
        self.src.line(f"if ({index} < {size}ull) c->reg[{i}][{index}] = {self.x.expr(st.value)};")

    def _random(self, st: ir.Random, info: CBlock) -> None:
        lo, hi = self._simple(st.lo), self._simple(st.hi)
        self.store(st.dest, f"({lo} < {hi} ? p4s_random(c, {lo}, {hi}) : {lo})")

    def _count(self, st: ir.CounterCount, info: CBlock) -> None:
        i, size, unit = self.names.counters[st.counter]
        index = self._simple(st.index)
        with self.src.block(f"if ({index} < {size}ull)"):
            if unit != "bytes":
                self.src.line(f"c->cpackets[{i}][{index}] += 1;")
            if unit != "packets":
                self.src.line(f"c->cbytes[{i}][{index}] += S[{self.names.sm['packet_length']}];")

    # --- standard metadata ----------------------------------------------------------------------

    def _mark_to_drop(self, st: ir.MarkToDrop, info: CBlock) -> None:
        self.src.line(f"S[{self.names.sm['egress_spec']}] = 511;")
        self.src.line(f"S[{self.names.sm['mcast_grp']}] = 0;")

    def _clone(self, st: ir.Clone, info: CBlock) -> None:
        self.src.line(f"S[{CLONE}] = 1;")
        self.src.line(f"S[{CLONE_SESSION}] = {self.x.expr(st.session)};")
        fl = "P4S_NONE" if st.field_list is None else literal(st.field_list)
        self.src.line(f"S[{CLONE_FIELD_LIST}] = {fl};")

    def _resubmit(self, st: ir.Resubmit, info: CBlock) -> None:
        what = (
            "recirculate_preserving_field_list"
            if st.recirculate
            else "resubmit_preserving_field_list"
        )
        raise NativeUnsupported(what, self.x.where)

    def _truncate(self, st: ir.Truncate, info: CBlock) -> None:
        self.src.line(f"S[{TRUNCATE}] = {self.x.expr(st.length)};")

    # --- assignments --------------------------------------------------------------------------

    def _assign(self, st: ir.Assign, info: CBlock) -> None:
        if isinstance(st.target.type, ir.StructT | ir.StackT | ir.TupleT):
            var, path = path_of(st.value)
            for leaf, _ in leaves(st.target.type):
                self.src.line(
                    f"{self._leaf(st.target, leaf)} = {self.storage.ref(var, path + leaf)};"
                )
            return
        self.store(st.target, self.x.expr(st.value))

    def store(self, target: ir.Expr, value: str) -> None:
        """Assign C expression `value` (already canonical) to scalar l-value `target`."""
        if isinstance(target, ir.Slice):
            base, hi, lo = flatten_slice(target)
            assert isinstance(base.type, ir.BitT)
            ref = self.storage.of(base)
            clear = base.type.mask ^ (((1 << (hi - lo + 1)) - 1) << lo)
            shifted = f"({value} << {lo})" if lo else value
            self.src.line(f"{ref} = ({ref} & {literal(clear)}) | {shifted};")
            return
        self.src.line(f"{self.storage.of(target)} = {value};")

    def _leaf(self, base: ir.Expr, leaf: tuple[str, ...]) -> str:
        var, path = path_of(base)
        return self.storage.ref(var, path + leaf)

    def _declare(self, st: ir.Declare, info: CBlock) -> None:
        var = st.var
        if isinstance(var.type, ir.StructT | ir.StackT | ir.TupleT):
            for leaf, _ in leaves(var.type):
                self.src.line(f"{self.storage.ref(var, leaf)} = 0;")
            if st.init is not None:
                self._assign(ir.Assign(ir.VarRef(var), st.init), info)
            return
        value = "0" if st.init is None else self.x.expr(st.init)
        self.src.line(f"{self.storage.ref(var, ())} = {value};")

    def _simple(self, e: ir.Expr) -> str:
        """`e` as something cheap to evaluate twice: a constant, a reference, or a temporary."""
        code = self.x.expr(e)
        if isinstance(e, ir.Const | ir.VarRef | ir.Member):
            return code
        tmp = self.src.temp()
        self.src.line(f"uint64_t {tmp} = {code};")
        return tmp

    # --- tables and actions -------------------------------------------------------------------

    def _apply(self, st: ir.ApplyTable, info: CBlock) -> None:
        self.src.line(f"T{self.names.tables[st.table]}(c, S, NULL);")
        self.exit_check(st.table in self.x.exits, info)

    def _switch(self, st: ir.SwitchTable, info: CBlock) -> None:
        run = self.src.temp("_run")
        self.src.line(f"uint32_t {run} = T{self.names.tables[st.table]}(c, S, NULL);")
        self.exit_check(st.table in self.x.exits, info)
        keyword = "if"
        for case in st.cases:
            if case.actions:
                cond = " || ".join(f"{run} == {self.names.actions[a]}" for a in case.actions)
                header = f"{keyword} ({cond})"
            else:
                header = "else" if keyword == "else if" else "if (1)"
            with self.src.block(header):
                self.block(case.body, info)
            keyword = "else if"

    def _call(self, st: ir.CallAction, info: CBlock) -> None:
        action = self.names.action_ir[st.action]
        args = ["c", "S"]
        outs = []
        for p, arg in zip(action.params, st.args, strict=True):
            for a in leaf_exprs(arg):  # a struct or header: one argument per scalar
                if p.direction in ("out", "inout"):
                    tmp = self.src.temp("_o")
                    value = "0" if p.direction == "out" else self.x.expr(a)
                    self.src.line(f"uint64_t {tmp} = {value};")
                    args.append("&" + tmp)
                    outs.append((a, tmp))
                else:
                    args.append(self.x.expr(a))
        self.src.line(f"A{self.names.actions[st.action]}({', '.join(args)});")
        for target, tmp in outs:  # copied out before an `exit` in the action leaves
            self.store(target, tmp)
        self.exit_check(st.action in self.names.exits, info)

    # --- packets --------------------------------------------------------------------------------

    def _set_valid(self, st: ir.SetValid, info: CBlock) -> None:
        self.src.line(f"{self.storage.valid(st.header)} = {1 if st.valid else 0};")

    def _extract(self, st: ir.Extract, info: CBlock) -> None:
        header = st.header.type
        assert isinstance(header, ir.StructT)
        header = header.fixed  # struct fields spread into their scalars
        size = header.width // 8
        var, path = path_of(st.header)
        targets = [self.storage.ref(var, (*path, *ir.field_path(f.name))) for f in header.fields]
        self.src.line(f"if (n - off < {size}) P4S_REJECT({self.names.too_short});")
        unpack(self.src, header, targets, "data + off")
        self.src.line(f"{self.storage.valid(st.header)} = 1;")
        self.src.line(f"off += {size};")

    def _advance(self, st: ir.Advance, info: CBlock) -> None:
        amount = self.src.temp("_n")
        self.src.line(f"uint64_t {amount} = {self.x.expr(st.bits)} >> 3;")
        self.src.line(f"if (n - off < {amount}) P4S_REJECT({self.names.too_short});")
        self.src.line(f"off += {amount};")

    def _verify(self, st: ir.Verify, info: CBlock) -> None:
        cond, error = self.x.expr(st.cond), self.x.expr(st.error)
        self.src.line(f"if (!({cond})) P4S_REJECT({error});")

    def _emit(self, st: ir.Emit, info: CBlock) -> None:
        header = st.header.type
        assert isinstance(header, ir.StructT)
        header = header.fixed  # struct fields spread into their scalars
        size = header.width // 8
        var, path = path_of(st.header)
        values = [self.storage.ref(var, (*path, *ir.field_path(f.name))) for f in header.fields]
        with self.src.block(f"if ({self.storage.valid(st.header)})"):
            self.src.line(f"if (cap - at < {size}) return -1;")
            pack(self.src, header, values, "o + at")
            self.src.line(f"at += {size};")

    # --- hashes and checksums -------------------------------------------------------------------

    def _bytes(self, data: tuple[ir.Expr, ...]) -> tuple[str, int]:
        """The items of a field list, concatenated bit by bit into a buffer: (buffer, bytes)."""
        parts: list[tuple[str, int]] = []
        for item in data:
            if isinstance(item.type, ir.StructT | ir.StackT):
                for leaf, t in leaves(item.type):
                    if leaf[-1] != "$valid":
                        parts.append((self._leaf(item, leaf), ir.bit_width(t)))
            else:
                parts.append((self.x.expr(item), ir.bit_width(item.type)))
        buf = self.src.temp("_b")
        nbytes = serialise(self.src, parts, buf)
        return buf, nbytes

    def _hash(self, st: ir.Hash, info: CBlock) -> None:
        assert isinstance(st.dest.type, ir.BitT)
        mask = literal(st.dest.type.mask)
        base = self._simple(st.base)
        if isinstance(st.max, ir.Const) and not st.max.value:
            self.store(st.dest, f"({base} & {mask})")
            return
        limit = self._simple(st.max)
        buf, nbytes = self._bytes(st.data)
        if st.algorithm == "identity" and nbytes > 8:
            value = f"p4s_identity_mod({buf}, {nbytes}, {limit})"
        else:
            value = f"({_algorithm(st.algorithm, self.x.where)}({buf}, {nbytes}) % {limit})"
        if isinstance(st.max, ir.Const):
            self.store(st.dest, f"(({base} + {value}) & {mask})")
        else:
            self.store(st.dest, f"({limit} ? (({base} + {value}) & {mask}) : ({base} & {mask}))")

    def _checksum(self, st: ir.Checksum, info: CBlock) -> None:
        assert isinstance(st.checksum.type, ir.BitT)
        if st.payload:
            raise NativeUnsupported("a checksum with payload", self.x.where)
        cond = self.x.expr(st.cond)
        always = isinstance(st.cond, ir.Const) and st.cond.value
        with self.src.block("if (1)" if always else f"if ({cond})"):
            buf, nbytes = self._bytes(st.data)
            algorithm = _algorithm(st.algorithm, self.x.where)
            value = f"({algorithm}({buf}, {nbytes}) & {literal(st.checksum.type.mask)})"
            if st.verify:
                test = f"{value} != {self.x.expr(st.checksum)}"
                self.src.line(f"if ({test}) S[{self.names.sm['checksum_error']}] = 1;")
            else:
                self.store(st.checksum, value)


ALGORITHMS = ("crc16", "crc32", "csum16", "xor16", "identity")


def _algorithm(name: str, where: str) -> str:
    if name not in ALGORITHMS:
        raise NativeUnsupported(f"hash algorithm {name}", where)
    return f"p4s_{name}"


# The code of each kind of statement: a method taking the statement and the block it is in.
_STATEMENTS: dict[type[ir.Stmt], Callable[[CStmtCompiler, Any, CBlock], None]] = {
    ir.Assign: CStmtCompiler._assign,
    ir.Declare: CStmtCompiler._declare,
    ir.If: CStmtCompiler._if,
    ir.ApplyTable: CStmtCompiler._apply,
    ir.SwitchTable: CStmtCompiler._switch,
    ir.CallAction: CStmtCompiler._call,
    ir.Return: CStmtCompiler._return,
    ir.Exit: CStmtCompiler._exit,
    ir.SetValid: CStmtCompiler._set_valid,
    ir.Extract: CStmtCompiler._extract,
    ir.Advance: CStmtCompiler._advance,
    ir.Verify: CStmtCompiler._verify,
    ir.Emit: CStmtCompiler._emit,
    ir.RegisterRead: CStmtCompiler._register_read,
    ir.RegisterWrite: CStmtCompiler._register_write,
    ir.CounterCount: CStmtCompiler._count,
    ir.MarkToDrop: CStmtCompiler._mark_to_drop,
    ir.Clone: CStmtCompiler._clone,
    ir.Hash: CStmtCompiler._hash,
    ir.Checksum: CStmtCompiler._checksum,
    ir.Truncate: CStmtCompiler._truncate,
    ir.Resubmit: CStmtCompiler._resubmit,
    ir.Random: CStmtCompiler._random,
}
