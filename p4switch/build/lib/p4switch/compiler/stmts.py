"""Typed statements to lines of Python."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from p4switch import ir
from p4switch.compiler import bits
from p4switch.compiler.exprs import ExprCompiler
from p4switch.compiler.fieldlists import field_bytes
from p4switch.compiler.layout import (
    CLONE,
    CLONE_FIELD_LIST,
    CLONE_SESSION,
    RECIRCULATE,
    RESUBMIT,
    TRUNCATE,
    flatten_slice,
    leaf_exprs,
    leaves,
    path_of,
)
from p4switch.compiler.source import Source
from p4switch.exceptions import CompilerBug


@dataclass
class Names:
    """Global names the generated code uses for the program's objects."""

    actions: dict[str, str] = field(default_factory=dict)  # action -> function
    action_ir: dict[str, ir.Action] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)  # table -> apply, returns hit
    table_runs: dict[str, str] = field(default_factory=dict)  # table -> apply, returns action
    registers: dict[str, tuple[str, int]] = field(default_factory=dict)  # -> (cells, size)
    counters: dict[str, tuple[str, str, int, str]] = field(default_factory=dict)
    meters: dict[str, str] = field(default_factory=dict)  # meter -> its MeterState's global
    value_sets: dict[str, str] = field(default_factory=dict)  # value set -> its state's global
    structs: dict[str, str] = field(default_factory=dict)  # header type -> struct.Struct
    sm: dict[str, int] = field(default_factory=dict)  # standard metadata field -> slot
    too_short: int = 1  # error.PacketTooShort
    header_too_short: int = 4  # error.HeaderTooShort
    invalid_argument: int = 6  # error.ParserInvalidArgument


@dataclass(frozen=True)
class Block:
    """What kind of function the statements go into, and what `return` means there."""

    kind: str  # "action", "control", "parser" or "deparser"
    returns: str = "return"
    outs: str = ""  # an action's out and inout parameters as a tuple, copied out on `exit`


class StmtCompiler:
    def __init__(self, x: ExprCompiler, names: Names, src: Source) -> None:
        self.x = x
        self.names = names
        self.src = src
        self.storage = x.storage

    def block(self, stmts: Sequence[ir.Stmt], info: Block) -> None:
        for st in stmts:
            self.stmt(st, info)

    def stmt(self, st: ir.Stmt, info: Block) -> None:
        code = _STATEMENTS.get(type(st))
        if code is None:
            raise CompilerBug(f"no code for statement {type(st).__name__}")
        code(self, st, info)

    # --- control flow ---------------------------------------------------------------------------

    def _if(self, st: ir.If, info: Block) -> None:
        keyword = "if"
        while True:  # an else holding one if is an elif: long chains do not nest deeper
            with self.src.block(f"{keyword} {self.x.expr(st.cond)}:"):
                self.block(st.then, info)
            if len(st.else_) == 1 and isinstance(st.else_[0], ir.If):
                st, keyword = st.else_[0], "elif"
                continue
            if st.else_:
                with self.src.block("else:"):
                    self.block(st.else_, info)
            return

    def _return(self, st: ir.Return, info: Block) -> None:
        self.src.line(info.returns)

    def _exit(self, st: ir.Exit, info: Block) -> None:
        self._leave(info)

    def _leave(self, info: Block) -> None:
        """`exit` here: in a control's own body leaving the function will do; an action hands
        its out and inout parameters to its caller, which copies them out and leaves too."""
        if info.kind in ("control", "deparser"):
            self.src.line("return")
        else:
            self.src.line(f"raise ControlExit({info.outs})")

    # --- state ----------------------------------------------------------------------------------

    def _register_read(self, st: ir.RegisterRead, info: Block) -> None:
        cells, size = self.names.registers[st.register]
        index = self._simple(st.index)
        self.store(st.dest, f"({cells}[{index}] if {index} < {size} else 0)")

    def _register_write(self, st: ir.RegisterWrite, info: Block) -> None:
        cells, size = self.names.registers[st.register]
        index = self._simple(st.index)
        with self.src.block(f"if {index} < {size}:"):
            self.src.line(f"{cells}[{index}] = {self.x.expr(st.value)}")

    def _digest(self, st: ir.DigestCall, info: Block) -> None:
        values = [self.x.expr(v) for v in st.values]
        bools = (isinstance(v.type, ir.BoolT) for v in st.values)
        values = [f"(1 if {v} else 0)" if b else v for v, b in zip(values, bools, strict=True)]
        self.src.line(f"DIGEST[0] = ({st.digest!r}, ({', '.join(values)},))")

    def _random(self, st: ir.Random, info: Block) -> None:
        lo, hi = self._simple(st.lo), self._simple(st.hi)
        self.store(st.dest, f"(RNG.randint({lo}, {hi}) if {lo} < {hi} else {lo})")

    # --- standard metadata ----------------------------------------------------------------------

    def _mark_to_drop(self, st: ir.MarkToDrop, info: Block) -> None:
        self.src.line(f"S[{self.names.sm['egress_spec']}] = 511")
        self.src.line(f"S[{self.names.sm['mcast_grp']}] = 0")

    def _clone(self, st: ir.Clone, info: Block) -> None:
        self.src.line(f"S[{CLONE}] = 1")
        self.src.line(f"S[{CLONE_SESSION}] = {self.x.expr(st.session)}")
        fl = -1 if st.field_list is None else st.field_list
        self.src.line(f"S[{CLONE_FIELD_LIST}] = {fl}")

    def _resubmit(self, st: ir.Resubmit, info: Block) -> None:
        self.src.line(f"S[{RECIRCULATE if st.recirculate else RESUBMIT}] = {st.field_list}")

    def _truncate(self, st: ir.Truncate, info: Block) -> None:
        self.src.line(f"S[{TRUNCATE}] = {self.x.expr(st.length)}")

    # --- assignments --------------------------------------------------------------------------

    def _assign(self, st: ir.Assign, info: Block) -> None:
        self.assign(st.target, st.value)

    def assign(self, target: ir.Expr, value: ir.Expr) -> None:
        if isinstance(target.type, ir.StructT | ir.StackT | ir.VarbitT | ir.TupleT):
            found = path_of(value)
            assert found is not None, "struct values are references (checked by the front-end)"
            var, path = found
            for leaf, _ in leaves(target.type):
                dst = self._leaf(target, leaf)
                self.src.line(f"{dst} = {self.storage.ref(var, path + leaf)}")
            return
        self.store(target, self.x.expr(value))

    def store(self, target: ir.Expr, value: str) -> None:
        """Assign Python expression `value` (already canonical) to scalar l-value `target`."""
        if isinstance(target, ir.Slice):
            base, hi, lo = flatten_slice(target)
            assert isinstance(base.type, ir.BitT)
            ref = self.storage.of(base)
            clear = base.type.mask ^ (((1 << (hi - lo + 1)) - 1) << lo)
            shifted = f"({value} << {lo})" if lo else value
            self.src.line(f"{ref} = ({ref} & {clear}) | {shifted}")
            return
        self.src.line(f"{self.storage.of(target)} = {value}")

    def _leaf(self, base: ir.Expr, leaf: tuple[str, ...]) -> str:
        found = path_of(base)
        assert found is not None
        return self.storage.ref(found[0], found[1] + leaf)

    def _declare(self, st: ir.Declare, info: Block) -> None:
        var = st.var
        if isinstance(var.type, ir.StructT | ir.StackT | ir.VarbitT | ir.TupleT):
            for leaf, t in leaves(var.type):
                zero = "False" if isinstance(t, ir.BoolT) else "0"
                self.src.line(f"{self.storage.ref(var, leaf)} = {zero}")
            if st.init is not None:
                self.assign(ir.VarRef(var), st.init)
            return
        if st.init is not None:
            value = self.x.expr(st.init)
        else:
            value = "False" if isinstance(var.type, ir.BoolT) else "0"
        self.src.line(f"{self.storage.ref(var, ())} = {value}")

    def _simple(self, e: ir.Expr) -> str:
        """`e` as something cheap to evaluate twice: a constant, a reference, or a temporary."""
        code = self.x.expr(e)
        if isinstance(e, ir.Const | ir.VarRef | ir.Member):
            return code
        tmp = self.src.temp()
        self.src.line(f"{tmp} = {code}")
        return tmp

    # --- tables and actions -------------------------------------------------------------------

    def _apply(self, st: ir.ApplyTable, info: Block) -> None:
        self.src.line(f"{self.names.tables[st.table]}(S)")

    def _switch(self, st: ir.SwitchTable, info: Block) -> None:
        run = self.src.temp("_run")
        self.src.line(f"{run} = {self.names.table_runs[st.table]}(S)")
        keyword = "if"
        for case in st.cases:
            if case.actions:
                cond = " or ".join(f"{run} == {a!r}" for a in case.actions)
                header = f"{keyword} {cond}:"
            else:
                header = "else:" if keyword == "elif" else "if True:"
            with self.src.block(header):
                self.block(case.body, info)
            keyword = "elif"

    def _call(self, st: ir.CallAction, info: Block) -> None:
        action = self.names.action_ir[st.action]
        fn = self.names.actions[st.action]
        args = ["S"]
        outs = []
        for p, arg in zip(action.params, st.args, strict=True):
            for a in leaf_exprs(arg):  # a struct or header: one argument per scalar
                args.append("0" if p.direction == "out" else self.x.expr(a))
                if p.direction in ("out", "inout"):
                    outs.append(a)
        call = f"{fn}({', '.join(args)})"
        if not outs:
            self.src.line(call)
            return
        result = self.src.temp("_o")
        with self.src.block("try:"):
            self.src.line(f"{result} = {call}")
        left = self.src.temp("_x")
        with self.src.block(f"except ControlExit as {left}:"):
            for i, target in enumerate(outs):  # copied out before leaving (spec: exit)
                self.store(target, f"{left}.values[{i}]")
            self._leave(info)
        for i, target in enumerate(outs):
            self.store(target, f"{result}[{i}]")

    def _meter(self, st: ir.MeterExecute, info: Block) -> None:
        meter = self.names.meters[st.meter]
        plen = self.names.sm["packet_length"]
        index = self.x.expr(st.index)
        self.store(st.dest, f"{meter}.execute({index}, S[{plen}], CLOCK())")

    def _count(self, st: ir.CounterCount, info: Block) -> None:
        packets, nbytes, size, unit = self.names.counters[st.counter]
        index = self._simple(st.index)
        with self.src.block(f"if {index} < {size}:"):
            if unit != "bytes":
                self.src.line(f"{packets}[{index}] += 1")
            if unit != "packets":
                self.src.line(f"{nbytes}[{index}] += S[{self.names.sm['packet_length']}]")

    # --- packets --------------------------------------------------------------------------------

    def _set_valid(self, st: ir.SetValid, info: Block) -> None:
        self.src.line(f"{self.storage.valid(st.header)} = {1 if st.valid else 0}")

    def _extract(self, st: ir.Extract, info: Block) -> None:
        header = st.header.type
        assert isinstance(header, ir.StructT)
        fixed = header.fixed
        size = fixed.width // 8
        found = path_of(st.header)
        assert found is not None
        var, path = found
        targets = [self.storage.ref(var, (*path, *ir.field_path(f.name))) for f in fixed.fields]
        self.src.line(f"if off + {size} > n: raise ParserReject({self.names.too_short}, off)")
        varbit = header.varbit
        nbits = self._varbit_size(st, varbit, size) if varbit is not None else ""
        if fixed.fields:
            bits.unpack(self.src, fixed, targets, self.names.structs[header.name], "data", "off")
        if varbit is not None:
            value = self._leaf(st.header, (varbit.name,))
            end = f"off + {size} + ({nbits} >> 3)"
            self.src.line(f"{value} = int.from_bytes(data[off + {size} : {end}], 'big')")
            self.src.line(f"{self._leaf(st.header, (varbit.name, ir.VARBIT_LEN))} = {nbits}")
            self.src.line(f"off += {nbits} >> 3")
        self.src.line(f"{self.storage.valid(st.header)} = 1")
        self.src.line(f"off += {size}")

    def _varbit_size(self, st: ir.Extract, field: ir.Field, size: int) -> str:
        """`extract(h, bits)`: `bits` for the varbit field, checked (more than its maximum:
        HeaderTooShort; not whole bytes: ParserInvalidArgument; past the packet's end:
        PacketTooShort), in a temporary."""
        assert isinstance(field.type, ir.VarbitT)
        assert st.bits is not None, "a varbit header takes extract(h, bits) (front-end)"
        nbits = self.src.temp("_vb")
        reject = "raise ParserReject({}, off)"
        self.src.line(f"{nbits} = {self.x.expr(st.bits)}")
        too_long = reject.format(self.names.header_too_short)
        self.src.line(f"if {nbits} > {field.type.max}: {too_long}")
        self.src.line(f"if {nbits} & 7: {reject.format(self.names.invalid_argument)}")
        short = reject.format(self.names.too_short)
        self.src.line(f"if off + {size} + ({nbits} >> 3) > n: {short}")
        return nbits

    def _advance(self, st: ir.Advance, info: Block) -> None:
        amount = self.src.temp("_n")
        self.src.line(f"{amount} = {self.x.expr(st.bits)} >> 3")
        self.src.line(f"if off + {amount} > n: raise ParserReject({self.names.too_short}, off)")
        self.src.line(f"off += {amount}")

    def _verify(self, st: ir.Verify, info: Block) -> None:
        cond, error = self.x.expr(st.cond), self.x.expr(st.error)
        self.src.line(f"if not {cond}: raise ParserReject({error}, off)")

    def _emit(self, st: ir.Emit, info: Block) -> None:
        header = st.header.type
        assert isinstance(header, ir.StructT)
        fixed = header.fixed
        found = path_of(st.header)
        assert found is not None
        var, path = found
        values = [self.storage.ref(var, (*path, *ir.field_path(f.name))) for f in fixed.fields]
        packer = self.names.structs[header.name]
        with self.src.block(f"if {self.storage.valid(st.header)}:"):
            joined = bits._joined(values) if values else ""
            if not values:
                pass  # a header of a varbit field alone
            elif bits.simple(fixed) and joined.startswith("S["):
                self.src.line(f"out.append({packer}.pack(*{joined}))")
            else:
                self.src.line(f"out.append({packer}.pack({bits.pack_args(fixed, values)}))")
            if header.varbit is not None:  # as many bytes as it holds
                value = self._leaf(st.header, (header.varbit.name,))
                length = self._leaf(st.header, (header.varbit.name, ir.VARBIT_LEN))
                self.src.line(f"out.append({value}.to_bytes({length} >> 3, 'big'))")

    # --- hashes and checksums -------------------------------------------------------------------

    def field_bytes(self, data: tuple[ir.Expr, ...]) -> str:
        return field_bytes(self.x, self._leaf, data)

    def _hash(self, st: ir.Hash, info: Block) -> None:
        assert isinstance(st.dest.type, ir.BitT)
        mask = st.dest.type.mask
        base = self.x.expr(st.base)
        if isinstance(st.max, ir.Const) and not st.max.value:
            self.store(st.dest, f"({base} & {mask})")
            return
        value = f"{st.algorithm}({self.field_bytes(st.data)})"
        limit = self._simple(st.max)
        if isinstance(st.max, ir.Const):
            self.store(st.dest, f"(({base} + {value} % {limit}) & {mask})")
        else:
            self.store(st.dest, f"((({base} + {value} % {limit}) if {limit} else {base}) & {mask})")

    def _checksum(self, st: ir.Checksum, info: Block) -> None:
        assert isinstance(st.checksum.type, ir.BitT)
        data = self.field_bytes(st.data)
        if st.payload:  # the packet's payload, past what the parser extracted
            data = f"{data} + PAYLOAD_DATA[0]"
        value = f"({st.algorithm}({data}) & {st.checksum.type.mask})"
        cond = self.x.expr(st.cond)
        always = isinstance(st.cond, ir.Const) and st.cond.value
        if st.verify:
            test = f"{value} != {self.x.expr(st.checksum)}"
            with self.src.block(f"if {test}:" if always else f"if {cond} and {test}:"):
                self.src.line(f"S[{self.names.sm['checksum_error']}] = 1")
            return
        if always:
            self.store(st.checksum, value)
            return
        with self.src.block(f"if {cond}:"):
            self.store(st.checksum, value)


# The code of each kind of statement: a method taking the statement and the block it is in.
_STATEMENTS: dict[type[ir.Stmt], Callable[[StmtCompiler, Any, Block], None]] = {
    ir.Assign: StmtCompiler._assign,
    ir.Declare: StmtCompiler._declare,
    ir.If: StmtCompiler._if,
    ir.ApplyTable: StmtCompiler._apply,
    ir.SwitchTable: StmtCompiler._switch,
    ir.CallAction: StmtCompiler._call,
    ir.Return: StmtCompiler._return,
    ir.Exit: StmtCompiler._exit,
    ir.SetValid: StmtCompiler._set_valid,
    ir.Extract: StmtCompiler._extract,
    ir.Advance: StmtCompiler._advance,
    ir.Verify: StmtCompiler._verify,
    ir.Emit: StmtCompiler._emit,
    ir.RegisterRead: StmtCompiler._register_read,
    ir.RegisterWrite: StmtCompiler._register_write,
    ir.CounterCount: StmtCompiler._count,
    ir.MarkToDrop: StmtCompiler._mark_to_drop,
    ir.Clone: StmtCompiler._clone,
    ir.Hash: StmtCompiler._hash,
    ir.Checksum: StmtCompiler._checksum,
    ir.Truncate: StmtCompiler._truncate,
    ir.Resubmit: StmtCompiler._resubmit,
    ir.MeterExecute: StmtCompiler._meter,
    ir.Random: StmtCompiler._random,
    ir.DigestCall: StmtCompiler._digest,
}
