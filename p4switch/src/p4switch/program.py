"""Compile a P4_16 v1model program once: its P4Info, its run-time specs, and its pipeline.

    >>> from p4switch import EXAMPLES
    >>> program = compile_file(EXAMPLES / "l2.p4")  # forwarding by destination MAC
    >>> state = program.new_state()  # tables, registers, counters, replication engine
    >>> pipe = program.pipeline(state, cpu_port=510)
    >>> pipe.process(ingress_port=1, data=bytes(64))  # [(egress_port, frame), ...]; no entry
    []

As a command: `python -m p4switch.program prog.p4 [-I dir] [--p4info out.txt]` checks the
program, writes its P4Info, and exits with status 2 and one `file:line:col: error: ...` line
when the program is refused.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from p4.config.v1 import p4info_pb2

from p4switch import ir, runtime
from p4switch.compiler import CompiledCode, Pipeline, generate
from p4switch.exceptions import CompilerBug, P4CompileError, P4SwitchError, one_line
from p4switch.frontend.parser import parse
from p4switch.frontend.preprocess import Preprocessed, preprocess
from p4switch.frontend.typecheck import check_program
from p4switch.native import NativePipeline
from p4switch.native.pipeline import PipelineArgumentError
from p4switch.p4info import build_p4info, write_p4info

__all__ = ["CompiledProgram", "Pipeline", "compile_file", "main"]


@dataclass(frozen=True, eq=False)
class CompiledProgram:
    p4info: p4info_pb2.P4Info
    actions: tuple[runtime.ActionSpec, ...]
    tables: tuple[runtime.TableSpec, ...]
    registers: tuple[runtime.RegisterSpec, ...]
    counters: tuple[runtime.CounterSpec, ...]
    program: ir.Program = field(repr=False)
    code: CompiledCode = field(repr=False)
    meters: tuple[runtime.MeterSpec, ...] = ()
    value_sets: tuple[runtime.ValueSetSpec, ...] = ()
    digests: tuple[runtime.DigestSpec, ...] = ()
    profiles: tuple[runtime.ProfileSpec, ...] = ()

    def new_state(self, clock: Callable[[], int] = time.monotonic_ns) -> runtime.SwitchState:
        """Fresh run-time state for this program, with its tables' declared entries installed;
        meters and digest lists run on `clock` (nanoseconds)."""
        return runtime.SwitchState(
            self.actions,
            self.tables,
            self.registers,
            self.counters,
            self.meters,
            clock,
            value_sets=self.value_sets,
            digests=self.digests,
            profiles=self.profiles,
        )

    def pipeline(
        self,
        state: runtime.SwitchState,
        *,
        cpu_port: int | None = None,
        parser_reject: str = "ingress",
        seed: int | None = None,
        backend: str = "python",
        clock: Callable[[], int] | None = None,
    ) -> Pipeline | NativePipeline:
        """A packet processor running this program against `state`.

        A packet the parser rejects is counted (`parser_error.<Name>`) and, by default, goes on
        to ingress with `standard_metadata.parser_error` set, as on BMv2, so the same program
        behaves the same on both targets; `parser_reject="drop"` drops it instead. `seed` fixes
        the `random` extern's sequence. `backend="native"` runs the program compiled to C
        (`p4switch.native`; NativeUnsupported or NativeBuildError when it cannot be). `clock`
        (nanoseconds, `time.monotonic_ns` unless given) is what the global timestamps count on.
        """
        if backend == "native":
            return NativePipeline(
                self.program,
                state,
                cpu_port=cpu_port,
                parser_reject=parser_reject,
                seed=seed,
                clock=clock,
            )
        if backend != "python":
            raise PipelineArgumentError(f"backend must be 'python' or 'native', not {backend!r}")
        return Pipeline(
            self.code, state, cpu_port=cpu_port, parser_reject=parser_reject, seed=seed, clock=clock
        )


def compile_file(
    path: Path,
    include_dirs: Sequence[Path] = (),
    defines: Mapping[str, str] | None = None,
    *,
    confined: bool = False,
) -> CompiledProgram:
    """Preprocess (with these -D defines), parse, check and compile `path`; P4CompileError when
    it is refused, CompilerBug when the compiler fails otherwise (a p4switch bug; it says where).
    `confined`: `#include` only from p4switch's include directory, the program's directory and
    `include_dirs`, regular files only (for programs sent over P4Runtime)."""
    path = Path(path)
    pre = preprocess(path, include_dirs, defines, confined=confined)
    try:
        return _compile(pre, path)
    except (P4SwitchError, MemoryError):
        raise
    except Exception as exc:  # a p4switch bug, not the program's: say so, and where
        raise CompilerBug.of(exc) from exc


def _compile(pre: Preprocessed, path: Path) -> CompiledProgram:
    program = check_program(parse(pre), str(path))
    try:
        p4info = build_p4info(program)
    except ValueError as exc:
        raise P4CompileError(str(path), 0, 0, str(exc)) from None
    return CompiledProgram(
        p4info=p4info,
        actions=tuple(_action_spec(a) for a in program.actions),
        tables=tuple(_table_spec(t, program.direct_meters) for t in program.tables),
        registers=tuple(
            runtime.RegisterSpec(r.name, r.value_type.width, r.size) for r in program.registers
        ),
        counters=tuple(runtime.CounterSpec(c.name, c.size, c.unit) for c in program.counters),
        meters=tuple(runtime.MeterSpec(m.name, m.size, m.unit) for m in program.meters),
        value_sets=tuple(
            runtime.ValueSetSpec(
                v.name, v.bitwidth, v.size, tuple(runtime.KeySpec(n, k, w) for n, w, k in v.fields)
            )
            for v in program.value_sets
        ),
        digests=tuple(_digest_spec(d) for d in program.digests),
        profiles=tuple(_profile_spec(p, program) for p in program.action_profiles),
        program=program,
        code=generate(program),
    )


def _digest_spec(d: ir.Digest) -> runtime.DigestSpec:
    def fields(t: ir.StructT, prefix: str) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for f in t.fields:
            name = prefix + f.name
            if isinstance(f.type, ir.StructT):
                out += fields(f.type, name + ".")
            elif isinstance(f.type, ir.ErrorT) or (
                isinstance(f.type, ir.EnumT) and f.type.underlying is None
            ):
                out.append((name, 0))  # sent by name
            else:
                out.append((name, ir.bit_width(f.type)))
        return out

    t = d.type
    if isinstance(t, ir.TupleT):  # `digest(r, {a, b})`: its items, numbered
        t = ir.StructT(d.name, tuple(ir.Field(str(i), e) for i, e in enumerate(t.elements)))
    return runtime.DigestSpec(d.name, tuple(fields(t, "")))


def _action_spec(a: ir.Action) -> runtime.ActionSpec:
    params = tuple(runtime.ParamSpec(p.name, ir.bit_width(p.type)) for p in a.control_params)
    return runtime.ActionSpec(a.name, params)


def _field_match(m: tuple[int, int] | ir.KeyRange) -> runtime.FieldMatch:
    if isinstance(m, ir.KeyRange):
        return runtime.range_match(m.low, m.high)
    return runtime.FieldMatch(*m)


def _table_spec(t: ir.Table, meters: tuple[ir.DirectMeter, ...] = ()) -> runtime.TableSpec:
    return runtime.TableSpec(
        name=t.name,
        keys=tuple(runtime.KeySpec(k.name, k.match_kind, k.bitwidth, k.symbols) for k in t.keys),
        actions=tuple(r.action for r in t.actions),
        default_action=runtime.ActionCall(t.default_action, t.default_args),
        const_default=t.const_default,
        size=t.size,
        table_only=frozenset(r.action for r in t.actions if r.scope == "TABLE_ONLY"),
        default_only=frozenset(r.action for r in t.actions if r.scope == "DEFAULT_ONLY"),
        direct_counter=t.direct_counter,
        direct_meter=t.direct_meter,
        direct_meter_unit=next((d.unit for d in meters if d.name == t.direct_meter), "packets"),
        static_entries=tuple(
            runtime.StaticEntry(
                tuple(_field_match(m) for m in e.match),
                runtime.ActionCall(e.action, e.args),
                e.priority,
            )
            for e in t.entries or ()
        ),
        const_entries=t.const_entries,
        implementation=t.implementation,
        support_timeout=t.support_timeout,
    )


def _profile_spec(p: ir.ActionProfile, program: ir.Program) -> runtime.ProfileSpec:
    tables = [program.table(t) for t in p.tables]
    refs = [r for t in tables[:1] for r in t.actions]  # its tables list the same actions
    return runtime.ProfileSpec(
        name=p.name,
        size=p.size,
        tables=p.tables,
        actions=tuple(r.action for r in refs),
        default_only=frozenset(r.action for r in refs if r.scope == "DEFAULT_ONLY"),
        selector=p.selector,
        max_group_size=p.max_group_size,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="p4switch.program", description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="the P4_16 v1model program")
    parser.add_argument("-I", dest="include", type=Path, action="append", default=[])
    parser.add_argument(
        "-D", dest="defines", action="append", default=[], metavar="NAME=VALUE", help="define"
    )
    parser.add_argument("--p4info", type=Path, help="write P4Info here (.txt or .bin)")
    parser.add_argument("--python", type=Path, help="write the generated Python here")
    args = parser.parse_args(argv)
    defines = dict((d.partition("=")[0], d.partition("=")[2] or "1") for d in args.defines)
    try:
        compiled = compile_file(args.source, args.include, defines)
    except P4CompileError as exc:
        print(exc, file=sys.stderr)
        return 2
    except CompilerBug as exc:  # a p4switch bug, not the program's: one line, no traceback
        print(f"{args.source}: {one_line(exc)}", file=sys.stderr)
        return exc.exit_status
    if args.p4info:
        write_p4info(compiled.p4info, args.p4info)
    if args.python:
        args.python.write_text(compiled.code.source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
