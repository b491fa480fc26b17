import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import main

NINE = [
    "Tokyo",
    "Singapore",
    "Hong Kong",
    "London",
    "Frankfurt",
    "Amsterdam",
    "New York",
    "Chicago",
    "Los Angeles",
]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_prints_rounds_by_groups_with_city_names(capsys):
    code, out, err = run(
        capsys, "plan", "--memory", "4MB", "--update-size", "1GB", "--bandwidth", "10Gbps",
        "--network", "inna",
    )  # fmt: skip
    assert code == 0, err
    assert "chosen: cliques-3, 2 round(s) to the exact average" in out
    table = out[out.index("chosen:") :]
    row1 = next(line for line in table.splitlines() if line.startswith("1 "))
    assert "Tokyo, Singapore, Hong Kong" in row1
    assert "London, Frankfurt, Amsterdam" in row1
    assert "New York, Chicago, Los Angeles" in row1
    assert "cliques-3 *" in out and "all-to-all" in out and "memory needed" in out


def test_plan_json(capsys):
    code, out, _ = run(capsys, "plan", "--memory", "8GB", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["best"] == {"network": "inna", "family": "all-to-all"}
    networks = {n["network"]: n for n in doc["networks"]}
    assert list(networks) == ["plain", "multicast", "inna"]
    best = next(f for f in networks["inna"]["families"] if f["family"] == "all-to-all")
    assert sorted(best["rounds"][0]["groups"][0]["cities"]) == sorted(NINE)
    assert best["rounds"][0]["groups"][0]["collective"] == "inna"
    # merged in line, D / B + span, against the pipelined ring's 2 (k - 1) / k x D / B: 1.6x
    assert 1.5 < best["gain_over_plain"] < 2
    plain = next(f for f in networks["plain"]["families"] if f["family"] == "all-to-all")
    assert plain["gain_over_plain"] == 1.0 and plain["memory_bytes"] == 0.0
    assert plain["rounds"][0]["groups"][0]["collective"] == "ring"


def test_plan_compares_the_networks_asked_for(capsys):
    code, out, err = run(capsys, "plan", "--memory", "25.6MB", "--network", "plain",
                         "--network", "inna")  # fmt: skip
    assert code == 0, err
    rows = [line.split()[0] for line in out.splitlines() if line.startswith(("plain ", "inna "))]
    assert set(rows) == {"plain", "inna"} and "multicast" not in out
    # at 25.6 MB inna's fastest is rotating triples (1.80 s): one pipelined ring of nine over a
    # plain WAN (1.52 s) is faster, and the plan says so
    assert "best against best over a plain WAN: inna 0.84x" in out
    assert "chosen: all-to-all, 1 round(s) to the exact average" in out and "network plain" in out


def test_sweep_marks_the_crossover_writes_a_plot_and_json(capsys, tmp_path):
    plot = tmp_path / "out" / "sweep.png"
    code, out, err = run(capsys, "plan", "sweep", "--memory", "1MB..8GB", "--plot", str(plot))
    assert code == 0, err
    assert "-- crossover at" in out
    assert "crossover: cliques-3 is fastest below" in out and "all-to-all above" in out
    assert "  plain: all-to-all 1.52 s, cliques-3 2.29 s" in out
    assert "inna beats a plain WAN (all-to-all 1.52 s) from 79.7 MB of aggregator memory" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        len(
            [
                ln
                for ln in out.splitlines()
                if ln.strip().endswith(("cliques-3", "all-to-all")) and ln.strip()[0].isdigit()
            ]
        )
        == 24
    )
    code, out, _ = run(
        capsys,
        "plan",
        "sweep",
        "--memory",
        "1MB..8GB",
        "--points",
        "6",
        "--plot",
        str(plot),
        "--json",
    )
    doc = json.loads(out)
    assert doc["points"][0]["best"] == "cliques-3"
    assert doc["points"][-1]["best"] == "all-to-all"
    assert doc["points"][0]["groups"][0][0] == ["Tokyo", "Singapore", "Hong Kong"]
    assert set(doc["points"][0]["times_s"]) >= {"all-to-all", "cliques-3", "ring-pairs"}
    (c,) = doc["crossovers"]
    assert 1e6 < c["memory_bytes"] < 8e9


def test_user_schedule_file(capsys, tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(
        "name: mine\nrounds:\n"
        "  - [[TYO, SIN, HKG], [LON, FRA, AMS], [NYC, CHI, LAX]]\n"
        "  - [[TYO, LON, NYC], [SIN, FRA, CHI], [HKG, AMS, LAX]]\n"
    )
    code, out, err = run(capsys, "plan", "--schedule", str(f))
    assert code == 0, err
    assert "chosen: file:mine, 2 round(s) to the exact average" in out


def test_simulate_prints_model_and_simulation_side_by_side(capsys):
    code, out, err = run(
        capsys,
        "plan",
        "simulate",
        "--memory",
        "64MB",
        "--update-size",
        "100MB",
        "--family",
        "cliques-3",
        "--chunks",
        "200",
    )
    assert code == 0, err
    assert "cost model against chunk-level simulation" in out
    assert "largest round-time difference" in out


def test_topo_reports_the_rtt_fit(capsys):
    code, out, _ = run(capsys, "topo")
    assert code == 0
    assert "largest relative RTT error" in out and "Tokyo" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "--bandwidth", "10 Gbs"], "Gbs"),
        (["plan", "--memory=-5MB"], "positive"),
        (["plan", "--update-size", "0GB"], "positive"),
        (["plan", "--memory", "100B"], "below one slot"),
        (["plan", "--family", "hypercube"], "unknown schedule family"),
        (["plan", "sweep", "--memory", "8GB..1MB"], ".."),
        (["plan", "--epsilon", "2"], "epsilon"),
    ],
)
def test_bad_input_gets_one_line_and_status_2(capsys, tmp_path, argv, message):
    plot = tmp_path / "never.png"
    extra = ["--plot", str(plot)] if argv[:2] == ["plan", "sweep"] else []
    code, out, err = run(capsys, *argv, *extra)
    assert code == 2
    assert out == ""
    assert err.startswith("innet: error: ") and err.count("\n") == 1 and message in err
    assert not plot.exists()


def test_bad_files_name_file_and_line(capsys, tmp_path):
    topo = tmp_path / "t.yaml"
    topo.write_text("name: x\ncities: [\n")
    code, _, err = run(capsys, "plan", str(topo))
    assert code == 2 and f"{topo}:" in err
    sched = tmp_path / "s.yaml"
    sched.write_text("rounds:\n  - [[TYO, SIN, HKG], [LON, FRA, AMS], [NYC, CHI, Tokio]]\n")
    code, _, err = run(capsys, "plan", "--schedule", str(sched))
    assert code == 2 and f"{sched}:2: " in err and "Tokio" in err
    sched.write_text("rounds:\n  - [[TYO, SIN, HKG], [LON, FRA, AMS], [NYC, CHI]]\n")
    code, _, err = run(capsys, "plan", "--schedule", str(sched))
    assert code == 2 and "leaves out Los Angeles" in err
    missing = tmp_path / "nope.yaml"
    code, _, err = run(capsys, "plan", "--schedule", str(missing))
    assert code == 2 and "cannot read" in err
    for args in (["plan", str(missing)], ["topo", str(tmp_path)]):
        code, _, err = run(capsys, *args)
        assert code == 2 and err.startswith("innet: error: ") and "cannot read" in err
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00junk")
    code, _, err = run(capsys, "plan", str(binary))
    assert code == 2 and "UTF-8" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["plan", "--memory"], "--memory"), (["plan", "--network", "ecmp"], "ecmp")],
)
def test_usage_errors_are_one_line_too(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and message in err


def test_console_script_is_installed():
    exe = shutil.which("innet", path=str(Path(sys.executable).parent))
    assert exe is not None
    done = subprocess.run(
        [exe, "plan", "--memory", "nonsense"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "nonsense" in done.stderr
