"""`innet plan machines`: how many machines a scenario's islands need at each scale, the links
that then cross machines, each machine's share; bad input one line and exit status 2."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cluster import sizing
from controller.cluster.placement import IslandLoad, Node
from controller.exceptions import CommandLineError
from controller.runner.calibration import Machine
from innet_cli import main
from topo.loader import default_wan
from topo.wan import City, Wan, WanLink

REPO = Path(__file__).resolve().parents[3]
MACHINE = ["--cores", "2", "--switch-fps", "260000", "--leader-fps", "12000"]
SCALES = "4000,2000,1000,500,100"


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """nine-cities with one memory point: fewer plays to plan."""
    text = (REPO / "scenarios" / "nine-cities.yaml").read_text()
    assert "memory: [25.6MB, 1.6GB]" in text
    path = tmp_path_factory.mktemp("scenario") / "nine.yaml"
    path.write_text(text.replace("memory: [25.6MB, 1.6GB]", "memory: [1.6GB]"))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`innet plan machines ...` in this process: (exit status, stdout, stderr)."""
    try:
        code = main(["plan", "machines", *argv])
    except SystemExit as exit_:  # a usage error: argparse exits
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def table_rows(out: str) -> dict[float, tuple[int | None, str, str]]:
    """scale -> (machines, busiest share, crossing) from the printed table."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("scale  machines"))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        scale, machines, share, crossing = re.split(r"\s{2,}", line.strip(), maxsplit=3)
        rows[float(scale)] = (None if machines == "none" else int(machines), share, crossing)
    return rows


def scale_lines(out: str) -> dict[float, str]:
    """scale -> its line below the table (its machines and crossing links, or why none)."""
    found = re.findall(r"^scale ([0-9.e+]+): (.*)$", out, flags=re.MULTILINE)
    return {float(scale): rest for scale, rest in found}


def test_a_row_per_scale_fewer_machines_as_the_scale_grows(
    capsys: pytest.CaptureFixture[str], scenario: Path
) -> None:
    code, out, err = run(capsys, str(scenario), "--scales", SCALES, *MACHINE)
    assert code == 0, err
    rows = table_rows(out)
    assert sorted(rows) == [100, 500, 1000, 2000, 4000]
    counts = [rows[scale][0] for scale in sorted(rows, reverse=True)]
    assert counts[0] == 1 and counts[-1] is None  # all on one at 4000; none helps at 100
    numbers = [count for count in counts if count is not None]
    assert numbers == sorted(numbers) and numbers[-1] > 1  # non-increasing as the scale grows
    assert "machine: 2 cores; one core processes 260,000 frames/s" in out and "(as given)" in out
    assert rows[4000][2] == "none"


def test_crossing_links_are_named_with_their_delays(
    capsys: pytest.CaptureFixture[str], scenario: Path
) -> None:
    code, out, _ = run(capsys, str(scenario), "--scales", SCALES, *MACHINE)
    assert code == 0
    nine = {(link.a, link.b): link.delay_s for link in default_wan().links}
    rows, lines = table_rows(out), scale_lines(out)
    for scale, (machines, share, crossing) in rows.items():
        if machines is None:
            assert "no number of machines" in lines[scale] and "alone needs" in lines[scale]
            continue
        links = re.findall(r"([A-Z][A-Za-z ]+?)-([A-Z][A-Za-z ]+?) ([0-9.]+) ms", lines[scale])
        assert len(links) == (0 if crossing == "none" else int(crossing.split(",")[0]))
        for a, b, ms in links:
            assert float(ms) == pytest.approx(nine[(a.strip(), b.strip())] * 1e3, rel=0.01)
        shares = [float(s) for s in re.findall(r"\(([0-9.]+)%\)", lines[scale])]
        assert len(shares) == machines and max(shares) <= 50.0
        assert share == f"{max(shares):.1f}%"
    assert rows[1000][2] != "none"  # three machines at 1000: some links cross


def test_json_agrees_with_the_table(capsys: pytest.CaptureFixture[str], scenario: Path) -> None:
    _, out, _ = run(capsys, str(scenario), "--scales", SCALES, *MACHINE)
    code, doc_text, err = run(capsys, str(scenario), "--scales", SCALES, *MACHINE, "--json")
    assert code == 0, err
    doc = json.loads(doc_text)
    rows = table_rows(out)
    assert [row["scale"] for row in doc["rows"]] == [4000, 2000, 1000, 500, 100]
    assert doc["scenario"] == "nine-cities" and doc["scale"] == 2000 and doc["margin"] == 0.5
    assert doc["machine"] == {
        "cores": 2,
        "switch_fps_per_core": 260_000,
        "leader_fps_per_core": 12_000,
        "measured": False,
        "backend": None,
        "summary": out.splitlines()[1],
    }
    assert len(doc["islands"]) == 9
    for row in doc["rows"]:
        machines, share, crossing = rows[row["scale"]]
        assert row["machines"] == machines
        if machines is None:
            assert row["why"] and row["crossing"] == [] and row["busiest_share"] is None
            continue
        assert share == f"{row['busiest_share']:.1%}"
        assert len(row["nodes"]) == machines
        placed = [island for node in row["nodes"] for island in node["islands"]]
        assert sorted(placed) == sorted(island["name"] for island in doc["islands"])
        assert crossing == "none" or int(crossing.split(",")[0]) == len(row["crossing"])


def test_this_machine_is_measured_and_counted_idle(
    capsys: pytest.CaptureFixture[str], scenario: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = Machine(1e-4, 3e-4, 2e-3, 0.5, 250_000, 4, "native", 15_000, 1.5)
    asked: list[float] = []

    def measure(em: object, backend: object = None, leader_fps: float = 0.0) -> Machine:
        asked.append(leader_fps)
        return busy

    monkeypatch.setattr(sizing, "measure", measure)
    code, out, err = run(capsys, str(scenario), "--scales", "1000")
    assert code == 0, err
    assert asked and asked[0] > 0  # a leader paced at the busiest leader's rate
    line = out.splitlines()[1]
    assert "4 cores" in line and "250,000 frames/s of the switch pipeline (native)" in line
    assert "15,000 of a leader" in line and "measured on this machine" in line
    assert "other work 1.50 cores meanwhile, counted idle" in line
    # counted idle: the four cores, not the one left free, at 50% each
    code, doc_text, _ = run(capsys, str(scenario), "--scales", "1000", "--json")
    doc = json.loads(doc_text)
    assert doc["machine"]["measured"] and doc["machine"]["backend"] == "native"
    assert doc["machine"]["others_cores"] == 1.5
    assert all(node["cores_needed"] <= 2.0 for node in doc["rows"][0]["nodes"])
    assert doc["rows"][0]["machines"] == 1


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--scales", "0"], ["--scales", "at least 1", "'0'"]),
        (["--scales", "-5"], ["--scales", "'-5'"]),
        (["--scales", "1000,many"], ["--scales", "must be a number", "'many'"]),
        (["--scales", "nan"], ["--scales", "'nan'"]),
        (["--cores", "2"], ["give --switch-fps and --leader-fps too"]),
        (["--cores", "2", "--switch-fps", "1e5"], ["give --leader-fps too"]),
        (["--leader-fps", "1e4"], ["give --cores and --switch-fps too"]),
        (["--cores", "2", "--switch-fps", "0", "--leader-fps", "1e4"], ["--switch-fps", "above 0"]),
        (["--cores", "2", "--switch-fps", "1e5", "--leader-fps", "-3"], ["--leader-fps", "'-3'"]),
        (["--cores", "0", "--switch-fps", "1e5", "--leader-fps", "1e4"], ["--cores", "at least 1"]),
        (["--cores", "2.5", "--switch-fps", "1e5", "--leader-fps", "1e4"], ["whole number"]),
    ],
)
def test_bad_flags_are_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], scenario: Path, argv: list[str], words: list[str]
) -> None:
    code, out, err = run(capsys, str(scenario), *argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    for word in words:
        assert word in err


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (None, ["missing.yaml", "cannot read"]),
        ("name: t\nmemroy: 1GB\n", ["memroy", "memory"]),
        ("name: t\nscale: 0\n", ["scale"]),
        ("name: [\n", ["broken.yaml"]),
    ],
)
def test_a_missing_or_broken_scenario_is_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str | None, words: list[str]
) -> None:
    path = tmp_path / ("missing.yaml" if text is None else "broken.yaml")
    if text is not None:
        path.write_text(text)
    code, out, err = run(capsys, str(path), *MACHINE)
    assert code == 2 and out == ""
    assert err.startswith("innet: error: ") and err.count("\n") == 1
    for word in words:
        assert word in err


def test_the_machine_flags_go_together() -> None:
    assert sizing.given_machine(None, None, None) is None
    node = sizing.given_machine(4, 1e5, 2e4)
    assert node == Node(sizing.MACHINE, 4, 1e5, 2e4)
    with pytest.raises(CommandLineError, match="give --cores too"):
        sizing.given_machine(None, 1e5, 2e4)


# --- the counts, for any loads --------------------------------------------------------------------


def ring() -> Wan:
    names = ("Tokyo", "Osaka", "Paris", "Lyon", "Berlin")
    cities = tuple(City(n, n[:3].upper(), "", 0, 0) for n in names)
    pairs = [(0, 1, 5), (1, 2, 110), (2, 3, 4), (3, 4, 9), (4, 0, 120), (1, 3, 100)]
    links = tuple(WanLink(names[a], names[b], ms / 1e3, 1e10, "") for a, b, ms in pairs)
    return Wan("ring", cities, links)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0, 200_000), min_size=5, max_size=5),
    st.lists(st.floats(0, 20_000), min_size=5, max_size=5),
    st.lists(st.floats(1, 10_000), min_size=1, max_size=5, unique=True),
)
def test_more_scale_never_needs_more_machines(
    switch: list[float], leader: list[float], scales: list[float]
) -> None:
    wan = ring()
    loads = [
        IslandLoad(i, name, switch[i], leader[i], scale=100) for i, name in enumerate(wan.names)
    ]
    machine = Node(sizing.MACHINE, 2, 100_000, 10_000)
    found = sizing.size("ring", wan, loads, machine, scales)
    assert [row.scale for row in found.rows] == scales
    rows = sorted(found.rows, key=lambda row: row.scale)
    for low, high in itertools.pairwise(rows):
        if low.machines is not None:
            assert high.machines is not None and high.machines <= low.machines
    for row in found.rows:
        if row.placement is not None:
            assert sorted(i for load in row.placement.loads for i in load.islands) == [
                0,
                1,
                2,
                3,
                4,
            ]
            assert set(row.crossing) <= set(wan.links)
            assert all(load.share <= 0.5 + 1e-6 for load in row.placement.loads)
    doc = sizing.sizing_json(found)
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc
