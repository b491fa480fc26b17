"""The case-file loader: the committed cases load, and each kind of mistake is refused with one
line naming the file, the line, the step and what is wrong."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from p4switch import EXAMPLES

from controller.p4rt.schema import Schema
from controller.rounds import Change, TableWrite
from innet.exceptions import InputError
from innet.packetformat import PacketFormat
from p4diff.case import ReadCounters, Send, Write, load_case
from p4diff.exceptions import CaseError
from p4diff.runner import check_against
from p4diff.targets import P4switchKind
from workers.packets import Flag, InnetPacket, PacketType

REPO = Path(__file__).resolve().parents[3]
CASES = REPO / "tests" / "p4diff"
L2 = EXAMPLES / "l2.p4"

FRAME = '{ethernet: {dst: "02:00:00:00:00:02", src: "02:00:00:00:00:01", type: 0x88b5}}'
GOOD = f"""\
program: {L2}
ports: 3
writes:
  - - {{table: L2Ingress.dmac, match: {{hdr.ethernet.dstAddr: "02:00:00:00:00:02"}},
       action: L2Ingress.forward, params: {{port: 2}}}}
frames:
  base:
    layers: [{FRAME}, {{hex: "00 01"}}]
steps:
  - send: {{port: 1, frame: base}}
"""


def write_case(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "case.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def refused(tmp_path: Path, text: str) -> CaseError:
    with pytest.raises(CaseError) as info:
        load_case(write_case(tmp_path, text))
    err = info.value
    assert isinstance(err, InputError) and err.exit_status == 2
    assert "\n" not in str(err)
    assert str(err).startswith(f"{tmp_path / 'case.yaml'}:")
    return err


# --- good files ---------------------------------------------------------------------------------


def test_the_innet_case_loads_with_the_controllers_entries() -> None:
    case = load_case(CASES / "innet.yaml")
    assert case.ports == (1, 2, 3, 4, 5)  # Tokyo: two hosts, three links
    assert case.defines == {"SLOTS": "4"}
    assert case.program == REPO / "p4src" / "innet.p4"
    setup = [s for s in case.steps if s.label.startswith("setup")]
    assert [s.what for s in setup] == ["Tokyo's base entries (controller code)", "round 7 at Tokyo"]
    assert all(
        isinstance(s, Write) and all(isinstance(u, Change) for u in s.batch.updates) for s in setup
    )
    sends = [s for s in case.steps if isinstance(s, Send)]
    reads = [s for s in case.steps if isinstance(s, ReadCounters)]
    assert len(sends) >= 63 and len(reads) == 5
    refused_batches = [s for s in case.steps if isinstance(s, Write) and s.batch.expect_refused]
    assert [s.batch.atomic for s in refused_batches] == [True, False]


def test_the_innet_round_carries_the_port_sources_and_the_stale_bound() -> None:
    case = load_case(CASES / "innet.yaml")
    (round7,) = [s for s in case.steps if isinstance(s, Write) and s.what == "round 7 at Tokyo"]
    tables = [u.item for u in round7.batch.updates if isinstance(u, Change)]
    sources = {
        dict(t.match)["standard_metadata.ingress_port"]: dict(t.params)
        for t in tables
        if isinstance(t, TableWrite) and t.table == "InnetIngress.port_sources"
    }
    # Tokyo's hosts speak for Tokyo (and replay its group's others), port 3 brings Singapore's
    # stream, port 4 Hong Kong's; nothing may enter on port 5 (Los Angeles) in round 7
    assert sources == {
        1: {"streams": 0b001, "replays": 0b110},
        2: {"streams": 0b001, "replays": 0b110},
        3: {"streams": 0b010, "replays": 0},
        4: {"streams": 0b100, "replays": 0},
    }
    (member,) = [t for t in tables if isinstance(t, TableWrite) and t.action.endswith(".member")]
    assert dict(member.params)["stale_us"] == 2_000_000  # the controller's floor, 2 s


def test_frames_built_from_layers_are_the_workers_encoding() -> None:
    case = load_case(CASES / "innet.yaml")
    first = next(s for s in case.steps if isinstance(s, Send) and "claims slot 0" in s.what)
    assert first.port == 1 and len(first.frame) == 186
    packet = InnetPacket.decode(first.frame[42:], case.packet_format)
    assert (packet.type, packet.flags, packet.round, packet.src) == (
        PacketType.CONTRIBUTION,
        Flag.WAN | Flag.LOCAL,
        7,
        0,
    )
    assert first.frame[42:] == packet.encode()
    assert first.frame[36:38] == (20041).to_bytes(2, "big")


def test_a_case_file_over_innet_s_yaml_limits_is_refused_at_its_line(tmp_path: Path) -> None:
    """As topologies and scenarios are (topo/yamlfile.py): a file nested too deep or too large
    is one error, not a RecursionError or minutes of parsing."""
    deep = GOOD.replace("ports: 3", "ports: 3\ndescription: " + "[" * 40 + "]" * 40, 1)
    err = refused(tmp_path, deep)
    assert ":3: nested deeper than 16 levels" in str(err)
    path = tmp_path / "big.yaml"
    path.write_text("description: " + "x" * 1_000_001 + "\n")
    with pytest.raises(CaseError, match="larger than 1,000,000 bytes"):
        load_case(path)


def test_innet_frames_follow_the_case_s_lanes(tmp_path: Path) -> None:
    """A case built with -D LANES=64 sends 64-lane innet frames; one without, innet.p4's 32."""
    text = (CASES / "innet.yaml").read_text()
    text = text.replace("../../p4src/innet.p4", str(REPO / "p4src" / "innet.p4"))
    assert "defines: {SLOTS: 4}" in text
    text = text.replace("defines: {SLOTS: 4}", "defines: {SLOTS: 4, LANES: 64}")
    wide = load_case(write_case(tmp_path, text))
    assert wide.packet_format == PacketFormat(64)
    claims = [s for s in wide.steps if isinstance(s, Send) and "claims slot" in s.what]
    assert claims and {len(s.frame) for s in claims} == {PacketFormat(64).frame_bytes}
    assert load_case(CASES / "innet.yaml").packet_format == PacketFormat()


def test_with_changes_a_named_frame_and_repeat_and_truncate_are_kept(tmp_path: Path) -> None:
    case = load_case(
        write_case(
            tmp_path,
            GOOD
            + """\
  - send: {port: 2, frame: base, with: {ethernet: {dst: "12:34:56:78:9a:bc"}}, repeat: 3}
  - send: {port: 3, frame: base, truncate: 15}
  - send: {port: 1, hex: "ffffffffffff 020000000001 88b5 c0ffee"}
  - read_counters: Some.counter
""",
        )
    )
    sends = [s for s in case.steps if isinstance(s, Send)]
    assert sends[1].frame[:6] == bytes.fromhex("123456789abc")  # a MAC, not a base-60 number
    assert sends[1].repeat == 3 and sends[1].frame[6:] == sends[0].frame[6:]
    assert sends[2].frame == sends[0].frame[:15]
    assert sends[3].frame == bytes.fromhex("ffffffffffff02000000000188b5c0ffee")
    assert sends[1].title.startswith("step 2 (line 11): send x3 on port 2: base with ethernet.dst")


def test_names_are_checked_against_the_programs_p4info(tmp_path: Path) -> None:
    case = load_case(write_case(tmp_path, GOOD + "  - read_counters: L2Ingress.nothing\n"))
    pipeline = P4switchKind().pipeline(case, tmp_path)
    with pytest.raises(CaseError, match=r"case.yaml:11: step 2 \(p4switch's P4Info\): .*counter"):
        check_against(case, Schema(pipeline.p4info), "p4switch")
    case = load_case(write_case(tmp_path, GOOD.replace("params: {port: 2}", "params: {port: 999}")))
    with pytest.raises(CaseError, match=r"case.yaml:4: setup 1 .*does not fit in 9 bits"):
        check_against(case, Schema(pipeline.p4info), "p4switch")


# --- bad files ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("ports: 3", "ports: 3\nprots: 4"), r":1: the case: .*unknown key 'prots'"),
        (
            ("  - send: {port: 1, frame: base}", "  - sned: {port: 1}"),
            r":10: step 1: a step takes exactly one of send, write",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - send: {port: 1, frame: base, colour: red}"),
            r":10: step 1: send: send has an unknown key 'colour'",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - send: {port: 9, frame: base}"),
            r":10: step 1: send: port 9 is not a port of this case \(ports 1..3\)",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - send: {port: 1, hex: '00 11 2g'}"),
            r":10: step 1: send: frame: '00 11 2g' is not hex \(the character 'g'\)",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - send: {port: 1, hex: '0011223'}"),
            r"step 1: send: frame: 7 hex digits",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - send: {port: 1, hex: '0011'}"),
            r"step 1: send: frame: 2 bytes: a frame the harness sends has 14",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - send: {port: 1, frame: other}"),
            r"step 1: send: frame 'other' is not defined under frames: \(defined: base\)",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - send: {port: 1, hex: '00', with: {}}"),
            r"step 1: send: with: changes a named frame",
        ),
        (
            (
                "  - send: {port: 1, frame: base}",
                "  - send: {port: 1, frame: base, with: {ipv4: {ttl: 1}}}",
            ),
            r"step 1: send: with: the frame has no ipv4 layer",
        ),
        (
            ('{hex: "00 01"}', "{ipv4: {src: 10.0.0.1, dst: 10.0.0.300, proto: 17}}"),
            r"step 1: send: frame: layer ipv4: dst: '10.0.0.300' is not an IPv4 address",
        ),
        (
            ('{hex: "00 01"}', "{udp: {sport: 1, dport: 2, colour: 3}}"),
            r"frame: layer udp: unknown field 'colour'",
        ),
        (('{hex: "00 01"}', "{tcp: {}}"), r"frame: unknown layer 'tcp'"),
        (
            ('{hex: "00 01"}', "{ipv4: {src: 10.0.0.1, dst: 10.0.0.3}}"),
            r"layer ipv4: give proto: it cannot be inferred from what follows \(nothing\)",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - send: {port: 1, frame: base, truncate: 99}"),
            r"step 1: send: truncate 99 is out of range \(1..15\)",
        ),
        ((f"program: {L2}", "program: nowhere.p4"), r"the case: program nowhere.p4 does not exist"),
        (("ports: 3", "ports: 3\ncpu_port: 2"), r"cpu_port 2 is also one of the ports"),
        (
            ("  - - {table", "  - - {tabel"),
            r":4: writes: batch 1: update 1: an update takes "
            r"exactly one of table",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - write: {updates: [], expect: maybe}"),
            r"step 1: write: expect: 'maybe'",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - retire_round: 7"),
            r"step 1: retire_round: retire_round needs innet_round",
        ),
        (
            (
                "  - send: {port: 1, frame: base}",
                "  - write: [{multicast_group: 1, replicas: [[7, 1]]}]",
            ),
            r"step 1: write: a replica's port 7 is not a port of this case",
        ),
        (
            ("  - send: {port: 1, frame: base}", "  - read_counters: {name: x}"),
            r"step 1: read_counters: read_counters .* must be a non-empty string",
        ),
        (
            ("steps:\n  - send: {port: 1, frame: base}", "steps:\n  - read_counters: x"),
            r"there is no send step",
        ),
        (("ports: 3", "ports: 3\n  bad: indent"), r"case.yaml:\d+: not valid YAML"),
        (
            ("ports: 3", "ports: 3\ndefines: {LANES: 48}"),
            r":1: the case: defines: LANES: 48 lanes per packet: innet.p4 takes 32, 64, 128 or 256",
        ),
    ],
)
def test_each_mistake_is_one_line_naming_the_file_line_step_and_what(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    old, new = change
    assert old in GOOD
    err = refused(tmp_path, GOOD.replace(old, new, 1))
    assert re.search(message, str(err)), str(err)


def test_innet_rounds_are_checked_by_the_controllers_code(tmp_path: Path) -> None:
    base = """\
        program: ../../p4src/innet.p4
        innet_round: {island: 0, hosts: 2, number: 7, groups: [[0, 1, 2], [3, 4, 5], [6, 7, 8]]}
        steps:
          - send: {port: 5, hex: "ffffffffffff 020000000001 88b5"}
        """
    (tmp_path / "innet.p4").write_text("")  # the program must exist; it is not compiled here
    text = textwrap.dedent(base).replace("../../p4src/innet.p4", "innet.p4")
    assert load_case(write_case(tmp_path, text)).ports == (1, 2, 3, 4, 5)
    err = refused(tmp_path, text.replace("[6, 7, 8]]", "[6, 7]]"))
    assert "islands [8] are in no group" in str(err)
    err = refused(tmp_path, text + "  - retire_round: 9\n")
    assert "step 2: retire_round: round 9 is not installed (installed: [7])" in str(err)
    err = refused(tmp_path, text + "  - install_round: {number: 7, groups: [[0]]}\n")
    assert "round 7 is installed already" in str(err)
    err = refused(tmp_path, text.replace("steps:", "ports: 3\nsteps:"))
    assert "the innet edge uses ports [1, 2, 3, 4, 5]; [4, 5] are missing" in str(err)
    err = refused(tmp_path, text.replace("island: 0", "island: 12"))
    assert "island 12: the WAN has islands 0..8" in str(err)


def test_the_worked_example_in_the_docs_is_a_case_that_loads(tmp_path: Path) -> None:
    doc = (REPO / "docs" / "p4diff.md").read_text()
    example = re.search(r"```yaml\n(.*?)```", doc, re.S)
    assert example is not None and "innet_round" in example[1]
    program = REPO / "p4src" / "innet.p4"
    case = load_case(write_case(tmp_path, example[1].replace("../../p4src/innet.p4", str(program))))
    sends = [s for s in case.steps if isinstance(s, Send)]
    assert [s.port for s in sends] == [1, 3, 4] and len(case.steps) == 6
    assert [InnetPacket.decode(s.frame[42:], case.packet_format).src for s in sends] == [0, 1, 2]
    pipeline = P4switchKind().pipeline(case, tmp_path)
    check_against(case, Schema(pipeline.p4info), "p4switch")
