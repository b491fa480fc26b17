"""p4c's STF packet tests (`.stf` beside a sample program), read and run against an in-process
p4switch with the semantics p4c's BMv2 runner gives them (p4c's backends/bmv2/bmv2stf.py).

What is read, one command a line (`#` starts a comment; words are case-insensitive):

- `add TABLE [PRIORITY] FIELD:VALUE ... ACTION(PARAM:VALUE, ...)`: a table entry, written as a
  P4Runtime INSERT. Names are matched as BMv2's runner matches them: a table or action by its
  full name or a suffix of it, a key field by its name, a suffix after a dot, `NAME$3` for
  `NAME[3]`, `h.valid` for `h.$valid$`. A value is hex (`0x`), binary (`0b`), octal (`0o`) or
  decimal; a ternary one may carry `*` nibbles (each a 0 in the mask) or be `V&&&M`; an lpm one
  is `V/LEN` or has `*` nibbles (the prefix stops at the first); a range one is `LO->HI`. A key
  field not given matches anything (an exact one: 0, as BMv2's runner fills it). The STF priority
  (higher wins, as BMv2's runner reads it) is sent as PRIORITY + 1, for P4Runtime's 0 means none;
  a table that needs one gets 1 when none is given.
- `setdefault TABLE ACTION(PARAM:VALUE, ...)`: the table's default action (MODIFY).
- `packet PORT HEX`: a frame in on PORT (spaces between hex digits allowed).
- `expect PORT HEX`: the next frame out of PORT; `*` is any nibble, a final `$` asks for exactly
  that length (otherwise a longer frame matches). `expect PORT` alone: a frame of any content
  (BMv2's runner fails such a test, for it never marks that port's expectation met; none of
  p4c's v1model tests has one).
- `check_counter NAME(INDEX) [packets] ==|!=|<|<=|>|>= VALUE`: an indexed counter's packet
  count, read where the command stands (BMv2's runner ignores this command; p4switch's is
  checked). Byte counts are not read (`bytes`: unsupported).
- `mirroring_add SESSION PORT`: a clone session to PORT; `mc_mgrp_create GROUP`,
  `mc_node_create RID PORT...` (node handles count from 0 in creation order),
  `mc_node_associate GROUP HANDLE`: multicast groups, written before the next packet.
- `wait`: nothing to wait for in process.

Any other command (`remove`, `counter_read`, `register_write`, `meter_set_rates`, ...) makes the
test unsupported by this runner (`StfUnsupported`), not a failure of the switch.

Outcome, as BMv2's runner decides it: per port, the frames out of it in order against the
expected ones in order; a missing or an extra frame fails. Only ports some `packet` or `expect`
names are looked at (BMv2 has no interface for the others: frames sent there are lost).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2


class StfError(ValueError):
    """A line of an STF file this reader cannot read: `line N: what`."""


class StfUnsupported(Exception):
    """A command this runner does not carry out: the test is not run."""


@dataclass(frozen=True)
class TableAdd:
    line: int
    table: str
    priority: int | None
    keys: tuple[tuple[str, str], ...]
    action: str
    args: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SetDefault:
    line: int
    table: str
    action: str
    args: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Packet:
    line: int
    port: int
    data: bytes


@dataclass(frozen=True)
class Expect:
    line: int
    port: int
    pattern: str | None  # upper-case hex with `*`, optionally ending in `$`; None: any frame


@dataclass(frozen=True)
class CheckCounter:
    line: int
    name: str
    index: int
    op: str
    value: int


@dataclass(frozen=True)
class MirroringAdd:
    line: int
    session: int
    port: int


@dataclass(frozen=True)
class GroupCreate:
    line: int
    group: int


@dataclass(frozen=True)
class NodeCreate:
    line: int
    rid: int
    ports: tuple[int, ...]


@dataclass(frozen=True)
class NodeAssociate:
    line: int
    group: int
    handle: int


@dataclass(frozen=True)
class Unsupported:
    line: int
    text: str


Command = (
    TableAdd
    | SetDefault
    | Packet
    | Expect
    | CheckCounter
    | MirroringAdd
    | GroupCreate
    | NodeCreate
    | NodeAssociate
    | Unsupported
)

_ACTION = re.compile(r"([A-Za-z_$][\w.$\[\]]*)\s*\((.*)\)\s*$")
_COUNTER = re.compile(
    r"check_counter\s+([\w.$]+)\s*\(\s*(\w+)\s*\)\s*(?:(packets|bytes)\s*)?"
    r"(?:(==|!=|<=|>=|<|>)\s*(\w+))?\s*$",
    re.IGNORECASE,
)
_OPS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def parse_stf(text: str) -> list[Command]:
    """The commands of an STF file, in order; StfError names a line it cannot read."""
    commands: list[Command] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            command = _parse_line(number, line)
        except (ValueError, IndexError) as err:
            raise StfError(f"line {number}: {err}: {line}") from None
        if command is not None:
            commands.append(command)
    return commands


def _parse_line(number: int, line: str) -> Command | None:
    word = line.split()[0].lower()
    rest = line[len(word) :].strip()
    words = rest.split()
    if word == "packet":
        return Packet(number, int(words[0], 0), bytes.fromhex("".join(words[1:])))
    if word == "expect":
        data = "".join(words[1:]).upper()
        if data and not re.fullmatch(r"[0-9A-F*]*\$?", data):
            raise ValueError("expected hex digits, `*` and a final `$`")
        return Expect(number, int(words[0], 0), data or None)
    if word == "add":
        return _parse_add(number, rest)
    if word == "setdefault":
        table, _, call = rest.partition(" ")
        action, args = _parse_call(call)
        return SetDefault(number, table, action, args)
    if word == "check_counter":
        return _parse_check_counter(number, line)
    if word == "mirroring_add":
        return MirroringAdd(number, int(words[0], 0), int(words[1], 0))
    if word == "mc_mgrp_create":
        return GroupCreate(number, int(words[0], 0))
    if word == "mc_node_create":
        return NodeCreate(number, int(words[0], 0), tuple(int(w, 0) for w in words[1:]))
    if word == "mc_node_associate":
        return NodeAssociate(number, int(words[0], 0), int(words[1], 0))
    if word == "wait":
        return None
    return Unsupported(number, word)


def _parse_add(number: int, rest: str) -> TableAdd:
    table, _, tail = rest.partition(" ")
    match = _ACTION.search(tail)
    if match is None:
        raise ValueError("an entry ends with ACTION(ARGS)")
    words = tail[: match.start()].split()
    priority = None
    if words and re.fullmatch(r"\d+", words[0]):
        priority = int(words.pop(0))
    keys = []
    for word in words:
        name, sep, value = word.partition(":")
        if not sep or not value:
            raise ValueError(f"key `{word}` is not FIELD:VALUE")
        keys.append((name, value))
    action, args = _parse_call(match.group(0))
    return TableAdd(number, table, priority, tuple(keys), action, args)


def _parse_call(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    match = _ACTION.fullmatch(text.strip())
    if match is None:
        raise ValueError("expected ACTION(ARGS)")
    args = []
    for item in filter(None, (a.strip() for a in match.group(2).split(","))):
        name, sep, value = item.partition(":")
        if not sep:
            raise ValueError(f"argument `{item}` is not NAME:VALUE")
        args.append((name.strip(), value.strip()))
    return match.group(1), tuple(args)


def _parse_check_counter(number: int, line: str) -> CheckCounter | Unsupported:
    match = _COUNTER.fullmatch(line)
    if match is None:
        raise ValueError("expected check_counter NAME(INDEX) [packets|bytes] [OP VALUE]")
    name, index, unit, op, value = match.groups()
    if unit is not None and unit.lower() == "bytes":
        return Unsupported(number, "check_counter bytes")
    if op is None:
        return Unsupported(number, "check_counter without a condition")
    if not index.isdigit() or not value[:1].isdigit():
        return Unsupported(number, "check_counter with a symbolic index or value")
    return CheckCounter(number, name, int(index), op, int(value, 0))


# --- running ---------------------------------------------------------------------------------


class Switch(Protocol):
    """What the runner needs of a switch (p4switch.InProcessSwitch is one)."""

    p4info: p4info_pb2.P4Info

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None: ...

    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]: ...

    def counter(self, name: str) -> list[int]: ...


class Target(Protocol):
    """A switch that takes frames and gives back what came out at the end (BMv2 running
    apart, bench/bmv2.py); `InProcess` makes a `Switch` one."""

    p4info: p4info_pb2.P4Info

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None: ...

    def send(self, port: int, frame: bytes) -> None: ...

    def counter(self, name: str) -> list[int]: ...

    def frames(self) -> list[tuple[int, bytes]]:
        """Every frame out so far, as (port, frame), in order per port."""
        ...


class InProcess:
    """A `Switch` as a `Target`: each frame processed when sent, what came out kept."""

    def __init__(self, switch: Switch) -> None:
        self.switch = switch
        self.p4info = switch.p4info
        self.out: list[tuple[int, bytes]] = []

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None:
        self.switch.write(updates)

    def send(self, port: int, frame: bytes) -> None:
        self.out += self.switch.process(port, frame)

    def counter(self, name: str) -> list[int]:
        return self.switch.counter(name)

    def frames(self) -> list[tuple[int, bytes]]:
        return self.out


@dataclass(frozen=True)
class Outcome:
    """`passed`, or the first difference (`detail`); `frames`: what came out of the ports the
    test names, in order per port (none when the test stopped before its end)."""

    passed: bool
    detail: str = ""
    frames: tuple[tuple[int, bytes], ...] = ()


@dataclass
class _Replication:
    nodes: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)  # (rid, ports)
    groups: dict[int, list[int]] = field(default_factory=dict)  # group -> node handles
    written: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)


def check_supported(commands: Sequence[Command]) -> None:
    """StfUnsupported for the first command this runner does not carry out."""
    for command in commands:
        if isinstance(command, Unsupported):
            raise StfUnsupported(f"line {command.line}: `{command.text}`")


def ports(commands: Sequence[Command]) -> tuple[set[int], set[int]]:
    """The ports frames come in on (`packet`) and all the ports a line names."""
    inputs = {c.port for c in commands if isinstance(c, Packet)}
    return inputs, inputs | {c.port for c in commands if isinstance(c, Expect)}


def run_stf(switch: Switch, commands: Sequence[Command]) -> Outcome:
    """Carry out `commands` on `switch` and compare what came out with what was expected.
    StfUnsupported for a command this runner does not carry out; a refused write or a counter
    check that fails is a failed outcome."""
    return run_stf_on(InProcess(switch), commands)


def run_stf_on(target: Target, commands: Sequence[Command]) -> Outcome:
    """`run_stf` on any `Target`."""
    check_supported(commands)
    names = _Names(target.p4info)
    replication = _Replication()
    expected: dict[int, list[Expect]] = {}
    _, watched = ports(commands)
    for command in commands:
        if isinstance(command, Packet):
            _write_groups(target, replication)
            target.send(command.port, command.data)
        elif isinstance(command, Expect):
            expected.setdefault(command.port, []).append(command)
        elif isinstance(command, CheckCounter):
            outcome = _check_counter(target, names, command)
            if not outcome.passed:
                return outcome
        elif isinstance(command, TableAdd | SetDefault | MirroringAdd):
            update = names.update(command)
            try:
                target.write([update])
            except Exception as err:  # the switch's refusal, whatever its class
                return Outcome(False, f"line {command.line}: write refused: {_one_line(err)}")
        elif isinstance(command, GroupCreate):
            replication.groups.setdefault(command.group, [])
        elif isinstance(command, NodeCreate):
            replication.nodes.append((command.rid, command.ports))
        elif isinstance(command, NodeAssociate):
            replication.groups.setdefault(command.group, []).append(command.handle)
    sent: dict[int, list[bytes]] = {}
    for port, frame in target.frames():
        if port in watched:
            sent.setdefault(port, []).append(frame)
    outcome = compare(expected, sent)
    frames = tuple((port, frame) for port in sorted(sent) for frame in sent[port])
    return Outcome(outcome.passed, outcome.detail, frames)


def compare(expected: dict[int, list[Expect]], sent: dict[int, list[bytes]]) -> Outcome:
    """Per port, in order, as BMv2's runner compares: the first difference, or a pass."""
    for port in sorted(expected.keys() | sent.keys()):
        wanted, got = expected.get(port, []), sent.get(port, [])
        for index, (expect, frame) in enumerate(zip(wanted, got, strict=False)):
            if expect.pattern is None:
                continue
            difference = frame_difference(expect.pattern, frame)
            if difference:
                return Outcome(
                    False, f"port {port} frame {index} (line {expect.line}): {difference}"
                )
        if len(wanted) != len(got):
            extra = (
                f", first extra {got[len(wanted)][:16].hex()}..." if len(got) > len(wanted) else ""
            )
            return Outcome(
                False, f"port {port}: expected {len(wanted)} frame(s), got {len(got)}{extra}"
            )
    return Outcome(True)


def frame_difference(pattern: str, frame: bytes) -> str:
    """Empty when `frame` matches `pattern` (hex, `*` any nibble, `$` exact length), else the
    first difference: byte offset, expected and got."""
    exact = pattern.endswith("$")
    pattern = pattern.rstrip("$")
    got = frame.hex().upper()
    if exact and len(got) > len(pattern):
        return f"{len(frame)} bytes, expected exactly {len(pattern) // 2}"
    if len(got) < len(pattern):
        return f"{len(frame)} bytes, expected at least {(len(pattern) + 1) // 2}"
    for i, want in enumerate(pattern):
        if want != "*" and want != got[i]:
            start = i - i % 2
            return (
                f"byte {i // 2}: expected {pattern[start : start + 16]}, "
                f"got {got[start : start + 16]}"
            )
    return ""


def _check_counter(switch: Switch | Target, names: _Names, command: CheckCounter) -> Outcome:
    name = names.counter(command.name)
    counts = switch.counter(name)
    if command.index >= len(counts):
        return Outcome(False, f"line {command.line}: {name} has {len(counts)} cells")
    count = counts[command.index]
    if _OPS[command.op](count, command.value):
        return Outcome(True)
    return Outcome(
        False,
        f"line {command.line}: {name}[{command.index}] counted {count} packets, "
        f"expected {command.op} {command.value}",
    )


def _write_groups(switch: Switch | Target, replication: _Replication) -> None:
    for group, handles in replication.groups.items():
        replicas = tuple(
            (port, replication.nodes[h][0]) for h in handles for port in replication.nodes[h][1]
        )
        if not replicas or replication.written.get(group) == replicas:
            continue
        entry = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=group)
        entry.replicas.extend(
            p4runtime_pb2.Replica(egress_port=port, instance=rid) for port, rid in replicas
        )
        update = p4runtime_pb2.Update(
            type=p4runtime_pb2.Update.MODIFY
            if group in replication.written
            else p4runtime_pb2.Update.INSERT
        )
        update.entity.packet_replication_engine_entry.multicast_group_entry.CopyFrom(entry)
        switch.write([update])
        replication.written[group] = replicas


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


class _Names:
    """STF names resolved against a P4Info, and STF commands made P4Runtime updates."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.actions = {a.preamble.id: a for a in p4info.actions}
        self.sessions: set[int] = set()

    def counter(self, name: str) -> str:
        return _by_name(name, [c.preamble.name for c in self.p4info.counters], "counter")

    def table(self, name: str) -> p4info_pb2.Table:
        tables = {t.preamble.name: t for t in self.p4info.tables}
        return tables[_by_name(name, list(tables), "table")]

    def action(self, table: p4info_pb2.Table, name: str) -> p4info_pb2.Action:
        actions = {
            self.actions[r.id].preamble.name: self.actions[r.id]
            for r in table.action_refs
            if r.id in self.actions
        }
        return actions[_by_name(name, list(actions), f"action of {table.preamble.name}")]

    def update(self, command: TableAdd | SetDefault | MirroringAdd) -> p4runtime_pb2.Update:
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        if isinstance(command, MirroringAdd):
            if command.session in self.sessions:
                update.type = p4runtime_pb2.Update.MODIFY
            self.sessions.add(command.session)
            session = update.entity.packet_replication_engine_entry.clone_session_entry
            session.session_id = command.session
            session.replicas.add(egress_port=command.port, instance=0)
            return update
        table = self.table(command.table)
        entry = update.entity.table_entry
        entry.table_id = table.preamble.id
        action = self.action(table, command.action)
        entry.action.action.action_id = action.preamble.id
        params = {p.name: p for p in action.params}
        for name, value in command.args:
            if name not in params:
                raise StfError(
                    f"line {command.line}: {action.preamble.name} has no parameter {name}"
                )
            number = _number(value)
            param = entry.action.action.params.add(param_id=params[name].id)
            param.value = _bytes(number, params[name].bitwidth, f"{name}:{value}")
        if isinstance(command, SetDefault):
            update.type = p4runtime_pb2.Update.MODIFY
            entry.is_default_action = True
            return update
        self._keys(table, command, entry)
        return update

    def _keys(
        self, table: p4info_pb2.Table, command: TableAdd, entry: p4runtime_pb2.TableEntry
    ) -> None:
        fields = {f.name: f for f in table.match_fields}
        given: dict[str, str] = {}
        for name, text in command.keys:
            given[_key_name(name, list(fields), table.preamble.name)] = text
        kinds = p4info_pb2.MatchField.MatchType
        needs_priority = False
        for f in table.match_fields:
            kind = kinds.Name(f.match_type)
            needs_priority |= kind in ("TERNARY", "RANGE", "OPTIONAL")
            if f.name not in given and kind != "EXACT":
                continue  # matches anything
            match = p4runtime_pb2.FieldMatch(field_id=f.id)
            _field_match(match, kind, f.bitwidth, given.get(f.name, "0"), entry)
            if match.WhichOneof("field_match_type") is not None:  # a don't-care is left out
                entry.match.append(match)
        if needs_priority or command.priority is not None:
            entry.priority = 1 if command.priority is None else command.priority + 1


def _by_name(name: str, names: list[str], what: str) -> str:
    """`name` itself, else the one name ending in `.name`, else the one ending in `name`."""
    if name in names:
        return name
    for suffix in (f".{name}", name):
        found = [n for n in names if n.endswith(suffix)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise StfError(f"{what} `{name}` is ambiguous: {', '.join(sorted(found))}")
    raise StfError(f"no {what} `{name}` (there are: {', '.join(sorted(names)) or 'none'})")


def _key_name(name: str, names: list[str], table: str) -> str:
    name = re.sub(r"\$(\d+)", r"[\1]", name)
    candidates = [name, f"{name}.$valid$"]
    if name.endswith(".valid"):
        candidates.append(name[: -len("valid")] + "$valid$")
    if name == "valid":
        candidates.append("$valid$")
    for candidate in candidates:
        if candidate in names:
            return candidate
        found = [n for n in names if n.endswith("." + candidate)]
        if len(found) == 1:
            return found[0]
    raise StfError(f"no key field `{name}` in {table} (there are: {', '.join(names)})")


def _number(text: str) -> int:
    return int(text, 0) if not re.fullmatch(r"0\d+", text) else int(text, 10)


def _bytes(value: int, width: int, what: str) -> bytes:
    if value < 0 or value >> max(width, 1):
        raise StfError(f"{what} does not fit in {width} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _digits(text: str) -> tuple[str, int]:
    """The digits of a prefixed constant and the bits one digit stands for."""
    prefixes = {"0x": 4, "0b": 1, "0o": 3}
    prefix = text[:2].lower()
    if prefix not in prefixes:
        raise StfError(f"`{text}`: a ternary or prefix value with `*` is hex, binary or octal")
    return text[2:], prefixes[prefix]


def _wildcard(text: str) -> tuple[int, int, int]:
    """A constant with `*` digits: (value, mask of the digits given, bits written)."""
    digits, bits = _digits(text)
    base = 1 << bits
    value = mask = 0
    for digit in digits:
        value, mask = value * base, mask * base
        if digit != "*":
            value += int(digit, base)
            mask += base - 1
    return value, mask, len(digits) * bits


def _field_match(
    match: p4runtime_pb2.FieldMatch,
    kind: str,
    width: int,
    text: str,
    entry: p4runtime_pb2.TableEntry,
) -> None:
    what = f"{text} (bit<{width}> {kind.lower()})"
    full = (1 << width) - 1
    if kind == "EXACT" or kind == "OPTIONAL":
        target = match.exact if kind == "EXACT" else match.optional
        target.value = _bytes(_number(text), width, what)
    elif kind == "TERNARY":
        if "&&&" in text:
            value, mask = (_number(t) for t in text.split("&&&"))
        elif "*" in text:
            value, mask, _ = _wildcard(text)
        else:
            value, mask = _number(text), full
        mask &= full
        if mask:
            match.ternary.value = _bytes(value & mask, width, what)
            match.ternary.mask = _bytes(mask, width, what)
    elif kind == "LPM":
        if "/" in text:
            value_text, length_text = text.split("/")
            value, length = _number(value_text), int(length_text, 0)
        elif "*" in text:  # as BMv2's runner: the digits given count, `*` ones are zeros
            digits, bits = _digits(text)
            value = int(digits.replace("*", "0"), 1 << bits)
            length = min(width, (len(digits) - digits.count("*")) * bits)
        else:
            value, length = _number(text), width
        if length:
            prefix_mask = full ^ ((1 << (width - length)) - 1)
            match.lpm.value = _bytes(value & prefix_mask, width, what)
            match.lpm.prefix_len = length
    elif kind == "RANGE":
        low, _, high = text.partition("->")
        match.range.low = _bytes(_number(low), width, what)
        match.range.high = _bytes(_number(high or low), width, what)
    else:
        raise StfUnsupported(f"match kind {kind} of table {entry.table_id}")
