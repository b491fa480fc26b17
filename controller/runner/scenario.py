"""What `innet run SCENARIO` emulates: a YAML scenario, checked in full before anything starts.

    name: nine-cities                 # [a-z0-9-]+, names the results folder
    topology: nine-cities             # a built-in WAN (topo/data/NAME.yaml) or a path to a
                                      # WAN file, relative to the scenario file
    hosts: 2                          # hosts per island (a leader and workers), 1..8
    scale: 100000                     # the emulation divides rates, memory and the update by it
    lanes: 32                         # int32 values per innet packet: 32, 64, 128 or 256
    bandwidth: 10Gbps                 # each island's access rate
    wan_bandwidth: null               # overrides every WAN link's capacity when given
    wan_jitter: null                  # overrides every WAN link's jitter (e.g. 2ms) when given;
                                      # else each link's own (`jitter:` in the WAN file, or 0)
    wan_loss: 0                       # each WAN link loses this share of frames (flags rounds)
    memory: [25.6MB, 1.6GB]           # aggregator memory per site; the run repeats for each
    update_size: model                # the model's own size, or a size at least as large
    schedules: [all-to-all, cliques-3]   # planner families, compared in this order
    networks: [plain, inna]           # what the edges do: plain (route; the hosts run ring
                                      # all-reduce or direct exchange), multicast (replicate;
                                      # the hosts sum), inna (replicate and merge: the default),
                                      # gloo (torch.distributed over TCP through plain edges)
    training: {rounds: 12, inner_steps: 20, hidden: 32, batch_size: 32,
               inner_lr: 0.003, outer_lr: 0.7, outer_momentum: 0.9}
                                      # and the model, overlap and targets (training_spec.py)
    compute: {step_time: 450ms}       # the emulated system's compute per inner step, at full
                                      # scale (or from FLOPs: training_spec.py); absent: none
    one_dc: true                      # also play the islands in one building, the reference
                                      # row (default: true when `compute` is given)
    round_deadline: 60s               # a round still running after this has failed
    seed: 1
    cluster: 10.0.0.1:6379            # run on the Ray cluster whose head is here (absent: on
                                      # this machine; innet run --cluster overrides it)
    placement: {Tokyo: 10.0.0.2, ...} # each city's machine, by its address in the cluster,
                                      # every city once (absent: chosen, docs/cluster.md)

Sizes and rates are full-scale figures; delays are kept, so round times are those of the
full-size system. Only `name` is required; `schedules` defaults to every family the planner
knows for the topology. Every mistake raises `ScenarioError`: "file:line: key: what is wrong".

Every (network, schedule) is played at every memory point for `inna`, and once (at the first
memory point) for the other networks, whose edges hold no partial sums.

`lanes` (32, 64, 128 or 256) makes the run's packet format (`innet.packetformat.PacketFormat`,
`Scenario.packet_format`), which the run passes to its switches, its island processes and the
planner.

Memory maps to innet.p4's slot pool (`topo.siteplan.SlotPool`): two banks of SLOTS slots of
4 x lanes bytes, SLOTS a power of two with 2 x SLOTS x 4 x lanes B <= memory / scale.
`Scenario.pool` gives the pool for one memory point, and the full-scale memory its slots stand for.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import yaml

from controller.planner.exceptions import PlanError
from controller.planner.optimise import Planner
from controller.runner.exceptions import ScenarioError
from controller.runner.training_spec import (
    TRAINING_FIELDS as TRAINING_FIELDS,  # re-exported: the scenario's sections live there
)
from controller.runner.training_spec import (
    ComputeSpec,
    ScriptSpec,
    Training,
    names_script,
    parse_compute,
    parse_script,
    parse_training,
)
from innet.jsontypes import JSONObject
from innet.packetformat import DEFAULT_LANES, PacketFormat, PacketFormatError
from innet.units import format_size, parse_duration, parse_rate, parse_size
from innet.vocabulary import SCENARIO_NETWORKS, NetworkMode, VocabularyError
from topo.exceptions import SlotPoolError, TopologyError
from topo.loader import load_wan, parse_wan
from topo.siteplan import SlotPool
from topo.wan import Wan
from topo.yamlfile import YamlReader, line_of

MAX_HOSTS = 8
MAX_LOSS = 0.5  # a link losing half its frames is a broken link, not a WAN
MAX_JITTER_S = 1.0  # a link whose delay strays by more than a second is not a WAN link
NAME_PATTERN = re.compile(r"[a-z0-9-]+")
DEFAULT_TOPOLOGY = "nine-cities"

_KEYS = (
    "name",
    "topology",
    "hosts",
    "scale",
    "bandwidth",
    "wan_bandwidth",
    "memory",
    "update_size",
    "schedules",
    "training",
    "round_deadline",
    "seed",
    "wan_loss",
    "networks",
    "wan_jitter",
    "lanes",
    "compute",
    "one_dc",
    "cluster",
    "placement",
)


@dataclass(frozen=True)
class Scenario:
    name: str
    topology: str  # a built-in name, or the absolute path of a WAN file
    hosts: int
    scale: float
    bandwidth_bps: float
    wan_bandwidth_bps: float | None
    memory_bytes: tuple[int, ...]  # full scale, one run per entry
    update_bytes: int | None  # full scale; None: the model's own size
    schedules: tuple[str, ...]
    training: Training
    round_deadline_s: float
    seed: int
    wan: Wan = field(compare=False, repr=False)
    path: Path | None = field(default=None, compare=False)  # the file it was loaded from
    wan_loss: float = 0.0  # each WAN link loses this share of frames, each way (the planner not)
    networks: tuple[NetworkMode, ...] = (NetworkMode.INNA,)  # in the order they are played
    # key path ("update_size", "schedules[1]", ...) -> its line in the file, for later checks
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)
    wan_jitter_s: float | None = None  # every WAN link's jitter; None: the WAN file's own
    packet_format: PacketFormat = field(default_factory=PacketFormat)  # from `lanes`
    compute: ComputeSpec | None = None  # the emulated system's compute (training_spec.py)
    one_dc: bool = False  # play the same islands in one building too: the reference row
    cluster: str | None = None  # the Ray cluster's head to run on (None: this machine)
    placement: tuple[str, ...] | None = None  # per city (WAN order): its machine's address
    script: ScriptSpec | None = None  # the user's training script, when it is one

    @property
    def jitter_s(self) -> float:
        """The largest jitter of any WAN link the run emulates (0: none)."""
        return max((link.jitter_s for link in self.wan.links), default=0.0)

    def fail(self, key: str, what: str) -> ScenarioError:
        """A ScenarioError at `key`'s line (for checks made after parsing, e.g. by resolve)."""
        return ScenarioError(self.path or "<scenario>", self.lines.get(key), key, what)

    @property
    def islands(self) -> tuple[str, ...]:
        """City names of the islands, in the topology's order."""
        return self.wan.names

    def pool(self, memory_bytes: int) -> SlotPool:
        """The switches' slot pool for this full-scale memory (topo/siteplan.py)."""
        return SlotPool.for_memory(memory_bytes, self.scale, self.packet_format)

    def update_bytes_for(self, model_bytes: int) -> int:
        """The full-scale update size for a model of `model_bytes`; refuses one below it."""
        if self.update_bytes is None:
            return model_bytes
        if self.update_bytes < model_bytes:
            raise self.fail(
                "update_size",
                f"{format_size(self.update_bytes)} is below the model's size "
                f"({model_bytes} B); give 'model' or at least {model_bytes}B",
            )
        return self.update_bytes

    def to_dict(self) -> JSONObject:
        """The resolved scenario as YAML-ready data; loading it again gives an equal Scenario."""
        wan_bw = self.wan_bandwidth_bps
        return {
            "name": self.name,
            "topology": self.topology,
            "hosts": self.hosts,
            "scale": int(self.scale) if self.scale.is_integer() else self.scale,
            "bandwidth": _rate_text(self.bandwidth_bps),
            "wan_bandwidth": None if wan_bw is None else _rate_text(wan_bw),
            "memory": [_size_text(m) for m in self.memory_bytes],
            "update_size": "model" if self.update_bytes is None else _size_text(self.update_bytes),
            "schedules": list(self.schedules),
            "training": self.script.to_dict()
            if self.script is not None
            else {f.name: getattr(self.training, f.name) for f in dataclasses.fields(Training)},
            "round_deadline": f"{self.round_deadline_s:.15g}s",
            "seed": self.seed,
            "wan_loss": self.wan_loss,
            "networks": [network.value for network in self.networks],
            "wan_jitter": None if self.wan_jitter_s is None else f"{self.wan_jitter_s:.15g}s",
            "lanes": self.packet_format.lanes,
            "compute": None if self.compute is None else self.compute.to_dict(),
            "one_dc": self.one_dc,
            "cluster": self.cluster,
            "placement": None
            if self.placement is None
            else dict(zip(self.wan.names, self.placement, strict=True)),
        }


def builtin_topologies() -> tuple[str, ...]:
    data = importlib.resources.files("topo.data")
    return tuple(
        sorted(p.name[: -len(".yaml")] for p in data.iterdir() if p.name.endswith(".yaml"))
    )


def load_scenario(path: Path | str) -> Scenario:
    """Load and check the scenario in a YAML file."""
    path = Path(path)
    return parse_scenario(YamlReader(path, ScenarioError).read("scenario"), path)


def parse_scenario(text: str, path: Path | str = "<string>") -> Scenario:
    """Parse and check scenario YAML; a relative topology path is resolved beside `path`."""
    doc = YamlReader(path, ScenarioError)
    root = doc.compose(text, empty="empty file; a scenario needs at least a name")
    top = doc.options(root, "", _KEYS, document="the scenario")
    if "name" not in top:
        raise doc.fail(root, "name", "missing; name the scenario (letters a-z, digits, '-')")
    name = doc.text(top["name"], "name")
    if not NAME_PATTERN.fullmatch(name):
        raise doc.fail(top["name"], "name", f"{name!r} may only use a-z, 0-9 and '-'")
    packet_format = _packet_format(doc, top.get("lanes"))  # first: later checks use its slots
    topology, wan = _topology(doc, top.get("topology"), path)
    hosts = doc.integer(top.get("hosts"), "hosts", 2, low=1, high=MAX_HOSTS)
    scale = doc.number(top.get("scale"), "scale", 100000.0, low=1.0)
    bandwidth = doc.quantity(top.get("bandwidth"), "bandwidth", parse_rate, "10Gbps")
    wan_bandwidth = None
    if "wan_bandwidth" in top:
        wan_bandwidth = doc.quantity(top["wan_bandwidth"], "wan_bandwidth", parse_rate)
    memory = _memory(doc, top.get("memory"), scale, packet_format)
    update = None
    if "update_size" in top and doc.scalar(top["update_size"]) != "model":
        update = doc.quantity(top["update_size"], "update_size", parse_size)
    schedules = _schedules(doc, top.get("schedules"), wan)
    script = None
    if names_script(top.get("training")):
        script = parse_script(doc, top["training"], Path(path).parent)
        training = Training()
    else:
        training = parse_training(doc, top.get("training"))
    compute = parse_compute(doc, top.get("compute"))
    if script is not None and compute is not None:
        why = (
            "a training script's compute is its own, on this machine (each play's wall time); "
            "an emulated compute applies to innet's own training only"
        )
        raise doc.fail(top["compute"], "compute", why)
    one_dc = doc.boolean(top.get("one_dc"), "one_dc", default=compute is not None)
    deadline = doc.quantity(top.get("round_deadline"), "round_deadline", parse_duration, "60s")
    seed = doc.integer(top.get("seed"), "seed", 1, low=0)
    loss = doc.number(top.get("wan_loss"), "wan_loss", 0.0, low=0.0)
    if loss >= MAX_LOSS:
        why = f"{loss:g} is the share of frames each link loses: it must be below {MAX_LOSS:g}"
        raise doc.fail(top["wan_loss"], "wan_loss", why)
    networks = _networks(doc, top.get("networks"))
    jitter = _jitter(doc, top.get("wan_jitter"))
    cluster = None if "cluster" not in top else doc.text(top["cluster"], "cluster")
    placement = _placement(doc, top.get("placement"), wan)
    if wan_bandwidth is not None:
        wan = wan.with_capacity(wan_bandwidth)
    if jitter is not None:
        wan = wan.with_jitter(jitter)
    return Scenario(
        name,
        topology,
        hosts,
        scale,
        bandwidth,
        wan_bandwidth,
        memory,
        update,
        schedules,
        training,
        deadline,
        seed,
        wan,
        Path(path),
        loss,
        networks,
        _lines(top),
        jitter,
        packet_format=packet_format,
        compute=compute,
        one_dc=one_dc,
        cluster=cluster,
        placement=placement,
        script=script,
    )


def _placement(doc: YamlReader, node: yaml.Node | None, wan: Wan) -> tuple[str, ...] | None:
    """`placement`: every city of the WAN once, each to a machine's IPv4 address (the tunnels
    between machines are IPv4); None when absent."""
    if node is None or doc.scalar(node) is None:
        return None
    given = doc.options(node, "placement", wan.names, document="placement")
    missing = [city for city in wan.names if city not in given]
    if missing:
        raise doc.fail(
            node,
            "placement",
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} placed on no machine: "
            "give every city a machine, or leave placement out to have it chosen",
        )
    machines = []
    for city in wan.names:
        address = doc.text(given[city], f"placement.{city}")
        try:
            ipaddress.IPv4Address(address)
        except ValueError:
            raise doc.fail(
                given[city],
                f"placement.{city}",
                f"{address!r} is not an IPv4 address: give the machine's address in the cluster",
            ) from None
        machines.append(address)
    return tuple(machines)


def _packet_format(doc: YamlReader, node: yaml.Node | None) -> PacketFormat:
    """`lanes`: the packet format of a lane count innet.p4 is built with."""
    lanes = doc.integer(node, "lanes", DEFAULT_LANES, low=1)
    try:
        return PacketFormat(lanes)
    except PacketFormatError as err:
        raise doc.fail(node, "lanes", str(err)) from None


def _jitter(doc: YamlReader, node: yaml.Node | None) -> float | None:
    """`wan_jitter`: a duration in [0, MAX_JITTER_S], or None (absent or null)."""
    if node is None or doc.scalar(node) is None:
        return None
    jitter = doc.quantity(node, "wan_jitter", lambda t: parse_duration(t, allow_zero=True))
    if jitter > MAX_JITTER_S:
        why = f"{node.value} is more than {MAX_JITTER_S:g} s: no WAN link strays that far"
        raise doc.fail(node, "wan_jitter", why)
    return jitter


def _lines(top: Mapping[str, yaml.Node]) -> dict[str, int]:
    """The line of every top-level key's value, and of each item of a list value."""
    lines = {}
    for key, node in top.items():
        lines[key] = line_of(node)
        if isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[f"{key}[{i}]"] = line_of(item)
    return lines


def _topology(doc: YamlReader, node: yaml.Node | None, path: Path | str) -> tuple[str, Wan]:
    name = DEFAULT_TOPOLOGY if node is None else doc.text(node, "topology")
    builtin = builtin_topologies()
    try:
        if "/" not in name and not name.endswith((".yaml", ".yml")):
            if name not in builtin:
                raise doc.fail(
                    node,
                    "topology",
                    f"unknown topology {name!r}; built-in: {', '.join(builtin)}, "
                    "or give the path of a WAN file (ending in .yaml)",
                )
            resource = importlib.resources.files("topo.data") / f"{name}.yaml"
            return name, parse_wan(resource.read_text(encoding="utf-8"), f"topo/data/{name}.yaml")
        file = (Path(path).parent / name).resolve()
        if not file.is_file():
            raise doc.fail(
                node, "topology", f"no WAN file {file}; built-in topologies: {', '.join(builtin)}"
            )
        return str(file), load_wan(file)
    except TopologyError as err:
        raise doc.fail(node, "topology", f"cannot load {name!r}: {err}") from None


def _memory(
    doc: YamlReader, node: yaml.Node | None, scale: float, packet_format: PacketFormat
) -> tuple[int, ...]:
    if node is None:
        return (parse_size("1.6GB"),)
    items = node.value if isinstance(node, yaml.SequenceNode) else [node]
    if not items:
        raise doc.fail(node, "memory", "an empty list; give one size or a list of sizes")
    memory: list[int] = []
    for i, item in enumerate(items):
        key = f"memory[{i}]" if isinstance(node, yaml.SequenceNode) else "memory"
        size = doc.quantity(item, key, parse_size)
        try:
            SlotPool.for_memory(size, scale, packet_format)
        except SlotPoolError as err:
            raise doc.fail(item, key, str(err)) from None
        if size in memory:
            raise doc.fail(item, key, f"{format_size(size)} is listed twice")
        memory.append(size)
    return tuple(memory)


def _schedules(doc: YamlReader, node: yaml.Node | None, wan: Wan) -> tuple[str, ...]:
    planner = Planner(wan)
    if node is None:
        return tuple(planner.default_families())
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise doc.fail(node, "schedules", "must be a non-empty list of schedule families")
    names: list[str] = []
    for i, item in enumerate(node.value):
        family = doc.text(item, f"schedules[{i}]")
        try:
            planner.check_family(family)
        except PlanError as err:
            raise doc.fail(item, f"schedules[{i}]", str(err)) from None
        if family in names:
            raise doc.fail(item, f"schedules[{i}]", f"{family!r} is listed twice")
        names.append(family)
    return tuple(names)


def _networks(doc: YamlReader, node: yaml.Node | None) -> tuple[NetworkMode, ...]:
    if node is None:
        return (NetworkMode.INNA,)
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        known = ", ".join(SCENARIO_NETWORKS)
        raise doc.fail(node, "networks", f"must be a non-empty list of {known}")
    names: list[NetworkMode] = []
    for i, item in enumerate(node.value):
        try:
            network = NetworkMode.parse(doc.text(item, f"networks[{i}]"), among=SCENARIO_NETWORKS)
        except VocabularyError as err:
            raise doc.fail(item, f"networks[{i}]", str(err)) from None
        if network in names:
            raise doc.fail(item, f"networks[{i}]", f"{network!r} is listed twice")
        if network == NetworkMode.GLOO and (missing := _gloo_missing()) is not None:
            raise doc.fail(item, f"networks[{i}]", f"gloo cannot run here: {missing}")
        names.append(network)
    return tuple(names)


def _gloo_missing() -> str | None:
    from workers.gloo import gloo_available  # torch: only when a scenario asks for gloo

    return gloo_available()


def _size_text(n: int) -> str:
    """Exact size text in the largest SI unit: 25600000 -> "25.6MB"."""
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= factor:
            return f"{(Decimal(n) / factor).normalize():f}{unit}"
    return f"{n}B"


def _rate_text(bps: float) -> str:
    for unit, factor in (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("Kbps", 1e3)):
        if bps >= factor:
            return f"{bps / factor:.15g}{unit}"
    return f"{bps:.15g}bps"
