"""Typed statements of the program model, each extern call lowered to its own statement."""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.ir.expressions import Expr, Var

# --- statements -------------------------------------------------------------------------------


class Stmt:
    pass


@dataclass(frozen=True)
class Assign(Stmt):
    target: Expr
    value: Expr


@dataclass(frozen=True)
class Declare(Stmt):
    var: Var
    init: Expr | None


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then: tuple[Stmt, ...]
    else_: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class ApplyTable(Stmt):
    table: str


@dataclass(frozen=True)
class SwitchCase:
    actions: tuple[str, ...]  # fully qualified action names; () for `default`
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class SwitchTable(Stmt):
    table: str
    cases: tuple[SwitchCase, ...]


@dataclass(frozen=True)
class CallAction(Stmt):
    action: str
    args: tuple[Expr, ...]  # one per parameter; out/inout ones are l-values


@dataclass(frozen=True)
class Return(Stmt):
    pass


@dataclass(frozen=True)
class Exit(Stmt):
    pass


@dataclass(frozen=True)
class SetValid(Stmt):
    header: Expr
    valid: bool


@dataclass(frozen=True)
class Extract(Stmt):
    header: Expr
    bits: Expr | None = None  # the size of a header's varbit field: `extract(h, bits)`


@dataclass(frozen=True)
class Advance(Stmt):
    bits: Expr


@dataclass(frozen=True)
class Emit(Stmt):
    header: Expr


@dataclass(frozen=True)
class Verify(Stmt):
    cond: Expr
    error: Expr


@dataclass(frozen=True)
class RegisterRead(Stmt):
    register: str
    dest: Expr
    index: Expr


@dataclass(frozen=True)
class RegisterWrite(Stmt):
    register: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class CounterCount(Stmt):
    counter: str
    index: Expr


@dataclass(frozen=True)
class MeterExecute(Stmt):
    meter: str
    index: Expr
    dest: Expr  # the color: 0 green, 1 yellow, 2 red


@dataclass(frozen=True)
class MarkToDrop(Stmt):
    pass


@dataclass(frozen=True)
class Clone(Stmt):
    kind: str  # "I2E" or "E2E"
    session: Expr
    field_list: int | None = None


@dataclass(frozen=True)
class Resubmit(Stmt):
    """`resubmit_preserving_field_list` (ingress) or `recirculate_preserving_field_list`
    (egress): the packet goes through the pipeline again, keeping that field list."""

    recirculate: bool
    field_list: int


@dataclass(frozen=True)
class DigestCall(Stmt):
    """`digest(receiver, data)`: the values of `data` as they are now, sent after ingress."""

    digest: str  # its name (the struct type's)
    receiver: Expr  # evaluated; BMv2 ignores it
    values: tuple[Expr, ...]  # the struct's scalars, in order


@dataclass(frozen=True)
class Hash(Stmt):
    dest: Expr
    algorithm: str
    base: Expr
    data: tuple[Expr, ...]
    max: Expr


@dataclass(frozen=True)
class Truncate(Stmt):
    length: Expr  # bytes


@dataclass(frozen=True)
class Random(Stmt):
    dest: Expr
    lo: Expr
    hi: Expr


@dataclass(frozen=True)
class Checksum(Stmt):
    verify: bool  # verify_checksum (True) or update_checksum (False)
    cond: Expr
    data: tuple[Expr, ...]
    checksum: Expr
    algorithm: str
    payload: bool = False  # `*_with_payload`: the payload follows the fields
