"""A case file: a P4 program, its entries and a sequence of steps, read into a `Case`.

    program: ../../p4src/innet.p4   # relative to the case file
    defines: {SLOTS: 4}             # p4c's and p4switch's -D
    ports: 5                        # switch ports 1..5 (or a list of port numbers)
    innet_round: {island: 0, hosts: 2, number: 7, groups: [[0, 1, 2], [3, 4, 5], [6, 7, 8]]}
    writes: [...]                   # batches installed before the steps
    frames: {name: frame, ...}      # frames the steps name
    steps:
      - send: {port: 1, frame: name, with: {innet: {src: 1}}, repeat: 2}
      - write: [{table: ..., match: {...}, action: ..., params: {...}}]
      - delete: [...]
      - read_counters: InnetIngress.stats

docs/p4diff.md describes every key. Everything that can be checked without the program's
P4Info is checked here, each mistake a `CaseError` naming the file, the line and the step;
names of tables, actions and counters are checked against the P4Info by `plan.check`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from innet.packetformat import DEFAULT_LANES, PacketFormat, PacketFormatError
from p4diff import frames as framing
from p4diff.exceptions import FrameError
from p4diff.fields import Where
from p4diff.innetround import InnetEdge, InstalledRounds, RoundError
from p4diff.writes import OPS, Batch, read_batch
from p4diff.yamlfile import Mapping as YamlMapping
from p4diff.yamlfile import Sequence as YamlSequence
from p4diff.yamlfile import load
from topo.exceptions import TopologyError
from topo.loader import default_wan, load_wan
from topo.siteplan import JOB

MAX_PORT = 510  # bit<9> egress ports; 511 is v1model's drop port
DEFAULT_SETTLE_S = 0.2
TOP_KEYS = (
    "description",
    "defines",
    "ports",
    "cpu_port",
    "settle",
    "innet_round",
    "writes",
    "frames",
)
STEP_KINDS = ("send", *OPS, "read_counters", "install_round", "retire_round")
FRAME_KINDS = ("hex", "layers", "frame")


@dataclass(frozen=True)
class Step:
    label: str  # "step 12", "setup 1"
    line: int | None
    what: str  # what it does, for reports

    @property
    def title(self) -> str:
        at = f" (line {self.line})" if self.line is not None else ""
        return f"{self.label}{at}: {self.what}"


@dataclass(frozen=True)
class Send(Step):
    port: int
    frame: bytes
    repeat: int = 1


@dataclass(frozen=True)
class Write(Step):
    batch: Batch


@dataclass(frozen=True)
class ReadCounters(Step):
    counter: str


@dataclass(frozen=True)
class Case:
    path: Path
    program: Path
    ports: tuple[int, ...]
    steps: tuple[Step, ...]
    defines: Mapping[str, str] = field(default_factory=dict)
    cpu_port: int | None = None
    settle: float = DEFAULT_SETTLE_S
    description: str = ""

    @property
    def packet_format(self) -> PacketFormat:
        """The innet packets' format: the program's `LANES` define, or innet.p4's default."""
        return packet_format_of(self.defines)


def load_case(path: Path) -> Case:
    """Read and check a case file; CaseError (exit status 2) names what is wrong and where."""
    path = Path(path)
    doc = load(path)
    top = Where(path, doc.line, "the case")
    top.keys(doc, "the case", ("program", "steps"), TOP_KEYS)
    program = (path.parent / top.text(doc["program"], "program")).resolve()
    if not program.is_file():
        raise top.fail(f"program {doc['program']} does not exist (looked for {program})")
    defines = _defines(top, doc.get("defines", YamlMapping()))
    try:
        packet_format = packet_format_of(defines)
    except PacketFormatError as err:
        raise top.fail(f"defines: LANES: {err}") from None
    innet = _innet(top.at(doc.get("innet_round"), "innet_round"), doc, path)
    ports = _ports(top, doc, innet[0] if innet is not None else None)
    cpu_port = doc.get("cpu_port")
    if cpu_port is not None:
        cpu_port = top.integer(cpu_port, "cpu_port", 0, MAX_PORT)
        if cpu_port in ports:
            raise top.fail(f"cpu_port {cpu_port} is also one of the ports")
    frames = doc.get("frames", YamlMapping())
    reader = _Steps(path, ports, cpu_port, innet, frames, packet_format)
    steps = reader.setup(doc.get("writes", YamlSequence()))
    for k, item in enumerate(top.sequence(doc["steps"], "steps")):
        steps.append(
            reader.step(Where(path, getattr(item, "line", doc.line), f"step {k + 1}"), item)
        )
    if not any(isinstance(s, Send) for s in steps):
        raise top.fail("steps: there is no send step, so there is nothing to compare")
    return Case(
        path,
        program,
        tuple(ports),
        tuple(steps),
        defines,
        cpu_port,
        top.number(doc.get("settle", DEFAULT_SETTLE_S), "settle"),
        str(doc.get("description", "")),
    )


def packet_format_of(defines: Mapping[str, str]) -> PacketFormat:
    """The packet format a program built with `defines` uses: its LANES, or innet.p4's 32."""
    return PacketFormat.parse(defines.get("LANES", str(DEFAULT_LANES)))


def _defines(where: Where, value: object) -> dict[str, str]:
    defines = {}
    for name, given in where.mapping(value, "defines").items():
        if isinstance(given, bool) or not isinstance(given, int | str):
            raise where.fail(f"defines: {name} = {given!r}; a define is a number or a word")
        defines[name] = str(given)
    return defines


FirstRound = tuple[int, list[list[int]]]  # innet_round's number and groups


def _innet(where: Where, doc: YamlMapping, path: Path) -> tuple[InstalledRounds, FirstRound] | None:
    if "innet_round" not in doc:
        return None
    spec = where.mapping(doc["innet_round"], "innet_round")
    where.keys(spec, "innet_round", ("island", "hosts", "number", "groups"), ("job", "wan"))
    try:
        wan = load_wan(path.parent / where.text(spec["wan"], "wan")) if "wan" in spec else None
    except TopologyError as err:
        raise where.fail(f"wan: {err}") from None
    try:
        edge = InnetEdge(
            wan or default_wan(),
            where.integer(spec["island"], "island"),
            where.integer(spec["hosts"], "hosts", 1, 253),
            where.integer(spec.get("job", JOB), "job", 0, 2**16 - 1),
        )
    except RoundError as err:
        raise where.fail(str(err)) from None
    return InstalledRounds(edge), _round(where, spec)


def _round(where: Where, spec: YamlMapping) -> FirstRound:
    number = where.integer(spec["number"], "round number", 0, 2**16 - 1)
    groups = where.sequence(spec["groups"], "groups")
    checked = [
        [where.integer(i, "an island", 0, 31) for i in where.sequence(g, "a group")] for g in groups
    ]
    return number, checked


def _ports(where: Where, doc: YamlMapping, rounds: InstalledRounds | None) -> list[int]:
    needed = list(rounds.edge.ports) if rounds is not None else []
    if "ports" not in doc:
        if rounds is None:
            raise where.fail("ports: how many ports the switch has (ports 1..N) is needed")
        return needed
    given = doc["ports"]
    if isinstance(given, int) and not isinstance(given, bool):
        ports = list(range(1, where.integer(given, "ports", 1, MAX_PORT) + 1))
    else:
        ports = [where.integer(p, "a port", 0, MAX_PORT) for p in where.sequence(given, "ports")]
        if len(set(ports)) != len(ports):
            raise where.fail(f"ports: {sorted(p for p in ports if ports.count(p) > 1)[0]} twice")
    missing = sorted(set(needed) - set(ports))
    if missing:
        raise where.fail(f"ports: the innet edge uses ports {needed}; {missing} are missing")
    return sorted(ports)


class _Steps:
    """Reads steps in order, keeping what depends on earlier ones (installed rounds)."""

    def __init__(
        self,
        path: Path,
        ports: list[int],
        cpu_port: int | None,
        innet: tuple[InstalledRounds, FirstRound] | None,
        frames: object,
        packet_format: PacketFormat,
    ) -> None:
        self.path, self.ports, self.cpu_port = path, ports, cpu_port
        self.packet_format = packet_format
        self.rounds: InstalledRounds | None = innet[0] if innet is not None else None
        self.first: FirstRound | None = innet[1] if innet is not None else None
        self.frames = Where(path, getattr(frames, "line", None), "frames").mapping(frames, "frames")

    def setup(self, writes: object) -> list[Step]:
        steps: list[Step] = []
        rounds, first = self.rounds, self.first
        if rounds is not None and first is not None:
            edge, (number, groups) = rounds.edge, first
            at = Where(self.path, None, "innet_round")
            steps.append(
                Write(
                    "setup 1",
                    None,
                    f"{edge.name}'s base entries (controller code)",
                    self._batch(at, rounds.base),
                )
            )
            batch = self._batch(at, lambda: rounds.install(number, groups))
            steps.append(Write("setup 2", None, f"round {number} at {edge.name}", batch))
        top = Where(self.path, getattr(writes, "line", None), "writes")
        for item in top.sequence(writes, "writes"):
            where = top.at(item, f"batch {len(steps) + 1}")
            batch = read_batch(where, item, "insert")
            self._check_replicas(where, batch)
            steps.append(
                Write(f"setup {len(steps) + 1}", where.line, _batch_what("write", batch), batch)
            )
        return steps

    def step(self, where: Where, item: Any) -> Step:
        spec = where.mapping(item, "a step")
        kind = where.one_of(spec, "a step", STEP_KINDS)
        where.keys(spec, "a step", (kind,), ("note",))
        label, where = where.label, where.at(spec, kind)
        note = str(spec["note"]) if "note" in spec else None
        value = spec[kind]
        if kind == "send":
            port, frame, repeat, what = self._send(where, value)
            return Send(label, where.line, note or what, port, frame, repeat)
        if kind == "read_counters":
            counter = where.text(value, "read_counters (a counter's P4Info name)")
            return ReadCounters(label, where.line, note or f"read counter {counter}", counter)
        if kind in OPS:
            batch = read_batch(where, value, OPS[kind])
            self._check_replicas(where, batch)
            return Write(label, where.line, note or _batch_what(kind, batch), batch)
        return self._round_step(where, label, kind, value, note)

    def _round_step(
        self, where: Where, label: str, kind: str, value: Any, note: str | None
    ) -> Write:
        rounds = self.rounds
        if rounds is None:
            raise where.fail(f"{kind} needs innet_round: at the top of the case")
        if kind == "retire_round":
            number = where.integer(value, "retire_round (a round number)", 0, 2**16 - 1)
            batch = self._batch(where, lambda: rounds.retire(number))
            return Write(label, where.line, note or f"retire round {number}", batch)
        spec = where.mapping(value, "install_round")
        where.keys(spec, "install_round", ("number", "groups"))
        number, groups = _round(where, spec)
        batch = self._batch(where, lambda: rounds.install(number, groups))
        return Write(label, where.line, note or f"install round {number}", batch)

    @staticmethod
    def _batch(where: Where, make: Callable[[], Batch]) -> Batch:
        try:
            batch = make()
        except RoundError as err:
            raise where.fail(str(err)) from None
        return batch

    def _check_replicas(self, where: Where, batch: Batch) -> None:
        allowed = {*self.ports, *([self.cpu_port] if self.cpu_port is not None else [])}
        outside = sorted(batch.ports() - allowed)
        if outside:
            raise where.fail(
                f"a replica's port {outside[0]} is not a port of this case ({_span(self.ports)})"
            )

    # --- frames ---------------------------------------------------------------------------

    def _send(self, where: Where, value: object) -> tuple[int, bytes, int, str]:
        spec = where.mapping(value, "send")
        where.keys(spec, "send", ("port",), (*FRAME_KINDS, "with", "truncate", "repeat"))
        port = where.integer(spec["port"], "port")
        if port not in self.ports:
            raise where.fail(f"port {port} is not a port of this case ({_span(self.ports)})")
        repeat = where.integer(spec.get("repeat", 1), "repeat", 1, 10_000)
        frame, what = self._frame(where, spec, ())
        times = f" x{repeat}" if repeat > 1 else ""
        return port, frame, repeat, f"send{times} on port {port}: {what}"

    def _frame(self, where: Where, spec: YamlMapping, seen: tuple[str, ...]) -> tuple[bytes, str]:
        try:
            layers, what = self._layers(where, spec, seen)
            frame = layers
            if isinstance(layers, list):
                frame = framing.build(layers, self.packet_format)
            if "truncate" in spec:
                keep = where.integer(spec["truncate"], "truncate", 1, len(frame) - 1)
                frame, what = frame[:keep], f"{what}, cut to {keep} bytes"
            return framing.checked(frame), what
        except FrameError as err:
            raise where.fail(f"frame: {err}") from None

    def _layers(self, where: Where, spec: YamlMapping, seen: tuple[str, ...]) -> tuple[Any, str]:
        """The frame's layers (a list), or its bytes when it is hex; and a short description."""
        kind = where.one_of(spec, "a frame", FRAME_KINDS)
        if "with" in spec and kind != "frame":
            raise where.fail("with: changes a named frame (frame: NAME); here there is none")
        if kind == "hex":
            data = framing.from_hex(spec["hex"])
            return data, f"{len(data)} bytes of hex"
        if kind == "layers":
            layers = where.sequence(spec["layers"], "layers")
            return list(layers), "/".join(framing.layer_kind(layer) for layer in layers)
        name = where.text(spec["frame"], "frame")
        if name not in self.frames:
            known = ", ".join(self.frames) or "none"
            raise where.fail(f"frame {name!r} is not defined under frames: (defined: {known})")
        if name in seen:
            raise where.fail(f"frame {name!r} is defined in terms of itself")
        base = where.at(self.frames[name], f"frames.{name}")
        named = base.mapping(self.frames[name], f"frame {name}")
        base.keys(named, f"frame {name}", (), (*FRAME_KINDS, "with"))
        layers, _ = self._layers(base, named, (*seen, name))
        if "with" not in spec:
            return layers, name
        if not isinstance(layers, list):
            raise where.fail(f"with: frame {name!r} is hex; only a frame of layers takes with")
        changes = where.mapping(spec["with"], "with")
        return _changed(where, layers, changes), f"{name} with {_shown(changes)}"


def _changed(where: Where, layers: list[Any], changes: YamlMapping) -> list[Any]:
    """The layers with `changes` (layer kind -> fields) merged into the first of each kind."""
    out = [dict(layer) for layer in layers]
    for kind, fields in changes.items():
        index = next((k for k, layer in enumerate(out) if kind in layer), None)
        if index is None:
            raise where.fail(f"with: the frame has no {kind} layer")
        old = out[index][kind]
        out[index] = {
            kind: {**old, **fields}
            if isinstance(old, dict) and isinstance(fields, dict)
            else fields
        }
    return out


def _shown(changes: Mapping[str, Any]) -> str:
    parts = []
    for kind, fields in changes.items():
        if isinstance(fields, dict):
            parts += [f"{kind}.{k}={v}" for k, v in fields.items()]
        else:
            parts.append(f"{kind}={fields}")
    return ", ".join(parts)


def _batch_what(kind: str, batch: Batch) -> str:
    n = len(batch.updates)
    refused = " (must be refused)" if batch.expect_refused else ""
    return f"{kind} {n} update{'s' if n != 1 else ''}{refused}"


def _span(ports: list[int]) -> str:
    if ports == list(range(ports[0], ports[-1] + 1)):
        return f"ports {ports[0]}..{ports[-1]}"
    return f"ports {', '.join(map(str, ports))}"
