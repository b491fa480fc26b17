"""Scenarios: the shipped ones load, defaults resolve, every mistake names file:line and key."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from controller.runner.exceptions import ScenarioError
from controller.runner.scenario import Training, load_scenario, parse_scenario
from innet.packetformat import PacketFormat
from topo.siteplan import SlotPool

REPO = Path(__file__).resolve().parents[4]
SHIPPED = sorted((REPO / "scenarios").glob("*.yaml"))


def write(tmp_path: Path, text: str, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_four_scenarios_are_shipped() -> None:
    names = {p.stem for p in SHIPPED}
    assert {"nine-cities", "memory-sweep", "schedule-comparison", "what-the-network-buys"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_scenario_loads_and_says_what_it_shows(path: Path) -> None:
    lanes = yaml.safe_load(path.read_text()).get("lanes", 32)
    scenario = load_scenario(path)
    assert scenario.packet_format == PacketFormat(lanes)
    assert scenario.name == path.stem
    assert path.read_text().startswith("# ")
    assert len(scenario.islands) == 9
    for memory in scenario.memory_bytes:
        assert scenario.pool(memory).slots_per_bank >= 1


def test_the_default_scenario_is_quick() -> None:
    doc = yaml.safe_load((REPO / "scenarios" / "nine-cities.yaml").read_text())
    assert (doc["scale"], doc["lanes"], doc["training"]["rounds"]) == (2000, 256, 8)
    assert doc["memory"] == ["25.6MB", "1.6GB"]  # 4 and 256 slots per bank of 1 KB at 2000
    assert doc["schedules"] == ["all-to-all", "cliques-3"]
    assert doc["training"]["hidden"] == 1666  # 124,960 parameters: a 1 GB update at full scale


def test_memory_sweep_and_schedule_comparison_cover_what_they_say() -> None:
    """As written: the memory points and families they name, at the demo's scale and model."""
    sweep = yaml.safe_load((REPO / "scenarios" / "memory-sweep.yaml").read_text())
    assert sweep["memory"] == ["25.6MB", "51.2MB", "102.4MB", "204.8MB", "409.6MB", "1.6GB"]
    assert sweep["schedules"] == ["all-to-all", "cliques-3"]
    comparison = yaml.safe_load((REPO / "scenarios" / "schedule-comparison.yaml").read_text())
    assert comparison["memory"] == "1.6GB"
    assert comparison["schedules"] == ["all-to-all", "cliques-3", "ring-pairs", "exponential-pairs"]
    for doc in (sweep, comparison):
        assert (doc["scale"], doc["lanes"], doc["training"]["hidden"]) == (2000, 256, 1666)


def test_defaults_resolve(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, "name: tiny\n"))
    assert scenario.topology == "nine-cities"
    assert (scenario.hosts, scenario.scale, scenario.bandwidth_bps) == (2, 100000.0, 10e9)
    assert scenario.wan_bandwidth_bps is None
    assert scenario.memory_bytes == (1_600_000_000,)
    assert scenario.update_bytes is None
    assert scenario.schedules == ("all-to-all", "cliques-3", "ring-pairs", "exponential-pairs")
    assert scenario.training == Training(12, 20, 32, 32, 0.003, 0.7, 0.9)
    assert (scenario.round_deadline_s, scenario.seed) == (60.0, 1)


def test_null_stands_for_the_default(tmp_path: Path) -> None:
    text = "name: tiny\nhosts: null\nmemory: null\ntraining: null\nwan_bandwidth: null\n"
    scenario = load_scenario(write(tmp_path, text))
    assert scenario.hosts == 2 and scenario.memory_bytes == (1_600_000_000,)
    assert scenario.training == Training()


def test_given_values_are_parsed(tmp_path: Path) -> None:
    text = """\
name: custom-1
hosts: 4
scale: 1000
bandwidth: 1Gbps
wan_bandwidth: 100Gb/s
memory: 64MB
update_size: 2GB
schedules: [ring-pairs]
training: {rounds: 3, inner_lr: 0.01}
round_deadline: 1500ms
seed: 0
"""
    s = load_scenario(write(tmp_path, text))
    assert (s.hosts, s.scale, s.bandwidth_bps, s.wan_bandwidth_bps) == (4, 1000.0, 1e9, 1e11)
    assert (s.memory_bytes, s.update_bytes, s.schedules) == ((64_000_000,), 2e9, ("ring-pairs",))
    assert s.training == Training(rounds=3, inner_lr=0.01)
    assert (s.round_deadline_s, s.seed) == (1.5, 0)


def test_to_dict_loads_back_as_the_same_scenario(tmp_path: Path) -> None:
    text = "name: again\nmemory: [25.6MB, 1GiB]\nupdate_size: 1.5GB\nwan_bandwidth: 40Gbps\n"
    first = load_scenario(write(tmp_path, text))
    dumped = yaml.safe_dump(first.to_dict(), sort_keys=False)
    again = load_scenario(write(tmp_path, dumped, "resolved.yaml"))
    assert again == first
    assert first.to_dict()["memory"] == ["25.6MB", "1.073741824GB"]


def test_topology_path_is_relative_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "wan").mkdir()
    shutil.copy(REPO / "topo" / "data" / "nine-cities.yaml", tmp_path / "wan" / "mine.yaml")
    scenario = load_scenario(write(tmp_path, "name: mine\ntopology: wan/mine.yaml\n"))
    assert scenario.topology == str((tmp_path / "wan" / "mine.yaml").resolve())
    assert len(scenario.islands) == 9
    assert load_scenario(write(tmp_path, yaml.safe_dump(scenario.to_dict()), "r.yaml")).wan


def test_a_broken_topology_file_names_both_files(tmp_path: Path) -> None:
    write(tmp_path, "name: x\nsources: {}\ncities: []\nlinks: []\n", "wan.yaml")
    with pytest.raises(ScenarioError) as err:
        load_scenario(write(tmp_path, "name: x\ntopology: wan.yaml\n"))
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'scenario.yaml'}:2: topology: ")
    assert "wan.yaml:3" in message and "at least 2 cities" in message


BAD = [
    # (id, scenario text after "name: bad\n", key, line, words the reason must contain)
    ("unknown-key", "hostss: 2\n", "hostss", 2, ["unknown key", "did you mean 'hosts'"]),
    (
        "unknown-training-key",
        "training:\n  inner_step: 3\n",
        "training.inner_step",
        3,
        ["unknown key", "did you mean 'inner_steps'"],
    ),
    ("unknown-key-no-match", "colour: red\n", "colour", 2, ["unknown key", "known: name"]),
    ("twice", "hosts: 2\nhosts: 3\n", "hosts", 3, ["given twice", "line 2"]),
    ("hosts-text", "hosts: two\n", "hosts", 2, ["whole number", "'two'"]),
    ("hosts-bool", "hosts: yes\n", "hosts", 2, ["whole number"]),
    ("hosts-zero", "hosts: 0\n", "hosts", 2, ["from 1 to 8", "got 0"]),
    ("hosts-negative", "hosts: -2\n", "hosts", 2, ["from 1 to 8"]),
    ("hosts-too-many", "hosts: 9\n", "hosts", 2, ["from 1 to 8", "got 9"]),
    ("rounds-zero", "training:\n  rounds: 0\n", "training.rounds", 3, ["at least 1", "got 0"]),
    ("rounds-negative", "training: {rounds: -3}\n", "training.rounds", 2, ["at least 1"]),
    (
        "inner-steps-float",
        "training:\n  inner_steps: 2.5\n",
        "training.inner_steps",
        3,
        ["whole number", "'2.5'"],
    ),
    ("inner-lr-zero", "training: {inner_lr: 0}\n", "training.inner_lr", 2, ["above 0"]),
    (
        "momentum-one",
        "training: {outer_momentum: 1.0}\n",
        "training.outer_momentum",
        2,
        ["below 1"],
    ),
    ("training-list", "training: [1, 2]\n", "training", 2, ["must be a mapping"]),
    ("scale-below-one", "scale: 0.5\n", "scale", 2, ["at least 1", "0.5"]),
    ("scale-text", "scale: big\n", "scale", 2, ["must be a number"]),
    ("bandwidth-zero", "bandwidth: 0Gbps\n", "bandwidth", 2, ["must be positive"]),
    ("bandwidth-negative", "bandwidth: -10Gbps\n", "bandwidth", 2, ["must be positive"]),
    ("bandwidth-unit", "bandwidth: 10 Gbs\n", "bandwidth", 2, ["unknown rate unit 'Gbs'"]),
    ("wan-bandwidth-zero", "wan_bandwidth: 0Mbps\n", "wan_bandwidth", 2, ["must be positive"]),
    (
        "memory-below-a-slot",
        "memory: [25.6MB, 12.8MB]\n",
        "memory[1]",
        2,
        ["below one aggregation slot", "smallest memory at this scale is 25.6 MB"],
    ),
    (
        "memory-below-a-slot-at-scale",
        "scale: 1000\nmemory: 200kB\n",
        "memory",
        3,
        ["200 B after scale 1000", "smallest memory at this scale is 256 kB"],
    ),
    (
        "memory-beyond-the-p4-pool",
        "memory: 4TB\n",
        "memory",
        2,
        ["65536 slots", "raise scale to at least 119210"],
    ),
    ("memory-no-unit", "memory: 1000\n", "memory", 2, ["size has no unit"]),
    ("memory-empty", "memory: []\n", "memory", 2, ["empty list"]),
    ("memory-twice", "memory: [1GB, 1000MB]\n", "memory[1]", 2, ["listed twice"]),
    (
        "schedule-unknown",
        "schedules: [all-to-all, rings]\n",
        "schedules[1]",
        2,
        ["unknown schedule family 'rings'", "cliques-K", "ring-pairs", "exponential-pairs"],
    ),
    (
        "schedule-clique-too-big",
        "schedules:\n  - cliques-12\n",
        "schedules[0]",
        3,
        ["'cliques-12'", "2 <= K <= 9"],
    ),
    ("schedules-not-a-list", "schedules: all-to-all\n", "schedules", 2, ["non-empty list"]),
    (
        "schedule-twice",
        "schedules: [ring-pairs, ring-pairs]\n",
        "schedules[1]",
        2,
        ["listed twice"],
    ),
    (
        "topology-unknown",
        "topology: mars\n",
        "topology",
        2,
        ["unknown topology 'mars'", "built-in: nine-cities"],
    ),
    (
        "topology-missing-file",
        "topology: wans/none.yaml\n",
        "topology",
        2,
        ["no WAN file", "none.yaml"],
    ),
    ("update-size-malformed", "update_size: 1GBs\n", "update_size", 2, ["unknown size unit 'GBs'"]),
    ("update-size-word", "update_size: big\n", "update_size", 2, ["not a size"]),
    ("deadline-zero", "round_deadline: 0s\n", "round_deadline", 2, ["must be positive"]),
    ("deadline-no-unit", "round_deadline: 60\n", "round_deadline", 2, ["no unit"]),
    ("seed-negative", "seed: -1\n", "seed", 2, ["at least 0"]),
    ("loss-negative", "wan_loss: -0.1\n", "wan_loss", 2, ["at least 0"]),
    ("loss-too-high", "wan_loss: 0.5\n", "wan_loss", 2, ["must be below 0.5"]),
    ("loss-percent-text", "wan_loss: 1%\n", "wan_loss", 2, ["must be a number"]),
    (
        "network-unknown",
        "networks:\n  - inna\n  - ecmp\n",
        "networks[1]",
        4,
        ["unknown network 'ecmp'", "known: plain, multicast, inna, gloo"],
    ),
    ("networks-not-a-list", "networks: plain\n", "networks", 2, ["non-empty list"]),
    ("networks-empty", "networks: []\n", "networks", 2, ["non-empty list"]),
    ("network-twice", "networks: [plain, inna, plain]\n", "networks[2]", 2, ["listed twice"]),
]


@pytest.mark.parametrize(
    ("text", "key", "line", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input_is_refused_naming_file_line_key_and_reason(
    tmp_path: Path, text: str, key: str, line: int, words: list[str]
) -> None:
    path = write(tmp_path, "name: bad\n" + text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}:{line}: {key}: "), str(err.value)
    assert (err.value.key, err.value.line) == (key, line)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("hosts: 2\n", 1, ["name: missing"]),
        ("name: Nine_Cities\n", 1, ["name: 'Nine_Cities' may only use a-z"]),
        ("name: [a]\n", 1, ["name: must be a non-empty string"]),
        ("name: x\nhosts: [1\n", 3, ["malformed YAML"]),
        ("", 1, ["empty file"]),
        ("- name: x\n", 1, ["the scenario must be a mapping"]),
    ],
)
def test_bad_files_are_refused(tmp_path: Path, text: str, line: int, words: list[str]) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}:{line}: ")
    for word in words:
        assert word in str(err.value)


def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read scenario"):
        load_scenario(tmp_path / "absent.yaml")


def test_a_scenario_gives_the_site_plan_pool_for_each_memory(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, "name: m\nmemory: [25.6MB, 100MB, 1.6GB]\n"))
    pools = [scenario.pool(m) for m in scenario.memory_bytes]
    assert pools == [
        SlotPool.for_memory(m, 100_000, scenario.packet_format) for m in scenario.memory_bytes
    ]
    assert [p.slots_per_bank for p in pools] == [1, 2, 32]
    assert [p.memory_bytes for p in pools] == [25_600_000, 51_200_000, 819_200_000]


def test_update_size_is_checked_against_the_model(tmp_path: Path) -> None:
    model = load_scenario(write(tmp_path, "name: m\n"))
    assert model.update_bytes_for(1234) == 1234
    padded = load_scenario(write(tmp_path, "name: p\nupdate_size: 1MB\n"))
    assert padded.update_bytes_for(1000) == 1_000_000
    with pytest.raises(ScenarioError, match=r"update_size: 1 MB is below the model's size"):
        padded.update_bytes_for(2_000_000)


def test_wan_loss_defaults_to_none_and_round_trips(tmp_path: Path) -> None:
    assert parse_scenario("name: a\n").wan_loss == 0.0
    lossy = parse_scenario("name: a\nwan_loss: 0.01\n")
    assert lossy.wan_loss == 0.01
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump(lossy.to_dict()))
    assert load_scenario(again).wan_loss == 0.01


def test_networks_default_to_inna_and_round_trip(tmp_path: Path) -> None:
    assert parse_scenario("name: a\n").networks == ("inna",)
    both = parse_scenario("name: a\nnetworks: [plain, multicast, inna, gloo]\n")
    assert both.networks == ("plain", "multicast", "inna", "gloo")
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump(both.to_dict()))
    assert load_scenario(again).networks == both.networks


def test_gloo_without_torch_distributed_is_refused_at_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("workers.gloo.gloo_available", lambda: "torch is built without it")
    path = write(tmp_path, "name: g\nnetworks:\n  - plain\n  - gloo\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert (
        str(err.value) == f"{path}:4: networks[1]: gloo cannot run here: torch is built without it"
    )


def test_wan_jitter_sets_every_link_and_is_kept_in_the_resolved_scenario() -> None:
    s = parse_scenario("name: j\nwan_jitter: 2ms\n")
    assert s.wan_jitter_s == pytest.approx(0.002) and s.jitter_s == pytest.approx(0.002)
    assert {link.jitter_s for link in s.wan.links} == {0.002}
    again = parse_scenario(yaml.safe_dump(s.to_dict()))
    assert again == s and again.jitter_s == pytest.approx(0.002)
    assert parse_scenario("name: j\n").jitter_s == 0.0
    assert parse_scenario("name: j\nwan_jitter: null\n").wan_jitter_s is None


def test_wan_bandwidth_sets_every_link_the_run_plans_and_shapes() -> None:
    s = parse_scenario("name: b\nwan_bandwidth: 40Gbps\n")
    assert {link.capacity_bps for link in s.wan.links} == {4e10}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("-1ms", "must not be negative"),
        ("2s", "more than 1 s"),
        ("fast", "not a duration"),
        ("[1ms]", "a single value"),
    ],
)
def test_bad_wan_jitter_is_refused_at_its_line(value: str, why: str) -> None:
    with pytest.raises(ScenarioError, match=why) as err:
        parse_scenario(f"name: j\nwan_jitter: {value}\n", "s.yaml")
    assert str(err.value).startswith("s.yaml:2: wan_jitter:")
