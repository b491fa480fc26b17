import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from innet_cli import main
from tests.unit.folders import unwritable

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
        capsys,
        "plan",
        "--memory",
        "4MB",
        "--update-size",
        "1GB",
        "--bandwidth",
        "10Gbps",
        "--network",
        "inna",
    )
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
    code, out, err = run(
        capsys, "plan", "--memory", "25.6MB", "--network", "plain", "--network", "inna"
    )
    assert code == 0, err
    rows = [line.split()[0] for line in out.splitlines() if line.startswith(("plain ", "inna "))]
    assert set(rows) == {"plain", "inna"} and "multicast" not in out
    # at 25.6 MB inna's fastest is rotating triples (1.80 s): one pipelined ring of nine over a
    # plain WAN (1.52 s) is faster, and the plan says so
    assert "best against best over a plain WAN: inna 0.84x" in out
    assert "chosen: all-to-all, 1 round(s) to the exact average" in out and "network plain" in out


def test_sweep_marks_the_crossover_writes_a_plot_and_json(capsys, tmp_path):
    plot = tmp_path / "sweep.png"
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
    [
        (["plan", "--memory"], "--memory"),
        (["plan", "--network", "ecmp"], "ecmp"),
        (["plan", "--epsilon", "2"], "--epsilon"),
    ],
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


# --- strict inputs: every flag checked in the foreground, before anything starts ------------


@pytest.fixture
def nothing_starts(monkeypatch, tmp_path):
    """`innet net up` must refuse before it spawns anything or writes its run directory: any
    process it starts fails the test, and the run directory must stay absent."""
    started: list[list[str]] = []

    def refuse(argv, *args, **kwargs):
        started.append([str(a) for a in argv])
        raise AssertionError(f"net up started {argv}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)
    run_dir = tmp_path / "run"
    yield run_dir
    assert started == []
    assert not run_dir.exists()


def net_up(capsys, run_dir, *argv):
    """`innet net up` in this process: (exit status, stderr)."""
    try:
        code = main(["net", "up", "--run-dir", str(run_dir), *argv])
    except SystemExit as exit_:  # a usage error: argparse exits
        code = int(exit_.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scale", "0"], "--scale: must be a finite number in [1, 1e+09], got '0'"),
        (["--scale", "inf"], "--scale: must be a finite number"),
        (["--scale", "nan"], "--scale: must be a finite number"),
        (["--scale", "-5"], "--scale"),
        (["--hosts", "0"], "--hosts: must be from 1 to 253, got 0"),
        (["--hosts", "254"], "--hosts: must be from 1 to 253"),
        (["--slots", "3"], "--slots: must be a power of two from 1 to 65536, got 3"),
        (["--slots", "0"], "--slots: must be from 1 to 65536, got 0"),
        (["--slots", "131072"], "--slots"),
        (["--port", "0"], "--port: must be from 1 to 65535"),
        (["--port", "70000"], "--port: must be from 1 to 65535"),
        (["--grpc-base-port", "-1"], "--grpc-base-port"),
        (["--timeout", "nan"], "--timeout: must be a finite number in (0, 86400]"),
        (["--timeout", "0"], "--timeout"),
    ],
)
def test_net_up_refuses_a_bad_number_before_anything_starts(capsys, nothing_starts, argv, message):
    code, err = net_up(capsys, nothing_starts, *argv)
    assert code == 2
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--grpc-base-port", "65530"], "ports up to 65538, above 65535; give at most 65527"),
        (["--port", "9563"], "--port 9563 is one of the switches' P4Runtime ports"),
        (["--bandwidth", "1" + "0" * 400 + "bps"], "--bandwidth"),  # a float overflows to inf
        (["--update-size", "2000TB"], "--update-size: '2000TB' is above the largest"),
        (["--memory", "1e400GB"], "--memory"),
        (["--token-file", "/nonexistent"], "cannot read token file /nonexistent"),
        (["--token-file", "/dev/zero"], "not a regular file"),
    ],
)
def test_net_up_refuses_bad_values_in_one_line(capsys, nothing_starts, argv, message):
    code, err = net_up(capsys, nothing_starts, *argv)
    assert code == 2
    assert err.startswith("innet: error: ") and err.count("\n") == 1 and message in err


def test_net_up_refuses_a_token_no_header_can_carry(capsys, nothing_starts, tmp_path):
    token = tmp_path / "token"
    token.write_text("two words\n")
    code, err = net_up(capsys, nothing_starts, "--token-file", str(token))
    assert code == 2 and "one word of printable ASCII" in err
    token.write_bytes(b"x" * 5000)
    code, err = net_up(capsys, nothing_starts, "--token-file", str(token))
    assert code == 2 and "larger than 4096 bytes" in err


def test_net_up_refuses_a_topology_beyond_32_islands(capsys, nothing_starts, tmp_path):
    code, err = net_up(capsys, nothing_starts, str(wan_file(tmp_path, 33)))
    assert code == 2 and "at most 32 islands" in err


def test_net_up_reports_only_this_attempts_failure(tmp_path):
    """The log is appended to: an earlier attempt's error must not be reported as this one's."""
    from controller.service.cli import _failure
    from controller.service.options import SERVICE_ERROR

    log = tmp_path / "service.log"
    log.write_text(f"{SERVICE_ERROR}an earlier attempt's error\n")
    start = log.stat().st_size
    with log.open("a") as out:
        out.write("Traceback (most recent call last):\nKeyError: 'x'\n")
    assert _failure(log, start) == "Traceback (most recent call last):; KeyError: 'x'"
    assert _failure(log, log.stat().st_size) == "it logged nothing"


@pytest.mark.parametrize("epsilon", ["nan", "inf", "-0.5", "1"])
def test_schedule_plan_refuses_a_bad_epsilon_before_asking_the_service(capsys, tmp_path, epsilon):
    with pytest.raises(SystemExit) as exit_:
        main(["schedule", "plan", "--epsilon", epsilon, "--run-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.count("\n") == 1 and "--epsilon: must be a finite number in [0, 1)" in err


def wan_file(folder: Path, cities: int) -> Path:
    """A WAN file of `cities` cities in a line."""
    lines = ["name: line", "sources: {s: made up}", "cities:"]
    lines += [
        f"  - {{name: C{i}, code: C{i}, continent: X, lat: 0, lon: {i}, source: s}}"
        for i in range(cities)
    ]
    lines += ["links:"]
    lines += [
        f"  - {{a: C{i - 1}, b: C{i}, delay: 1ms, capacity: 10Gbps, source: s}}"
        for i in range(1, cities)
    ]
    path = folder / f"line-{cities}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "sweep", "--points", "100000"], "--points: must be from 2 to 256 (each point"),
        (["plan", "sweep", "--points", "1"], "--points: must be from 2 to 256"),
        (["plan", "simulate", "--rate-factor", "1e9"], "--rate-factor: must be a finite number"),
        (["plan", "simulate", "--rate-factor", "nan"], "in [0.001, 100] (faster only overruns"),
        (["plan", "simulate", "--rate-factor", "inf"], "--rate-factor"),
        (["plan", "simulate", "--rate-factor", "0"], "--rate-factor"),
        (["plan", "simulate", "--chunks", "0"], "--chunks: must be from 1 to 20000"),
        (["plan", "simulate", "--chunks", "10000000"], "--chunks: must be from 1 to 20000"),
        (["plan", "--epsilon", "nan"], "--epsilon: must be a finite number in [0, 1)"),
        (["run", "--grpc-base-port", "0", "--check"], "--grpc-base-port: must be from 1"),
    ],
)
def test_long_or_meaningless_plans_are_refused_as_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "--update-size", "1" + "0" * 30 + "B"], "largest innet plans for (1 PB)"),
        (["plan", "--bandwidth", "1" + "0" * 400 + "bps"], "largest innet plans for (1 Pb/s)"),
        (["plan", "--wan-bandwidth", "1" + "0" * 400 + "bps"], "--wan-bandwidth"),
        (["plan", "sweep", "--memory", "1MB..2000TB"], "--memory: '1MB..2000TB' goes above"),
    ],
)
def test_quantities_beyond_any_wan_are_refused(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_a_plot_in_a_missing_folder_makes_it(capsys, tmp_path):
    plot = tmp_path / "results" / "demo" / "x.png"
    code, _, err = run(
        capsys, "plan", "sweep", "--points", "2", "--family", "all-to-all", "--plot", str(plot)
    )
    assert code == 0, err
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_a_plot_that_cannot_be_written_is_refused_before_planning(capsys, tmp_path):
    (tmp_path / "notes").write_text("x")
    code, out, err = run(capsys, "plan", "sweep", "--plot", str(tmp_path / "notes" / "x.png"))
    assert code == 2 and out == ""
    assert f"{tmp_path / 'notes'} is a file, not a folder" in err and err.count("\n") == 1
    code, _, err = run(capsys, "plan", "sweep", "--plot", str(tmp_path))
    assert code == 2 and "is a directory" in err
    with unwritable(tmp_path / "locked") as locked:
        code, _, err = run(capsys, "plan", "sweep", "--plot", str(locked / "d" / "x.png"))
        assert code == 2 and f"cannot write in {locked}" in err and err.count("\n") == 1
        assert list(locked.iterdir()) == []
    assert (tmp_path / "notes").read_text() == "x"


def test_the_default_plot_path_makes_its_directory(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "plan", "sweep", "--points", "2", "--family", "all-to-all")
    assert code == 0, err
    assert (tmp_path / "results" / "plan-sweep.png").read_bytes()[:4] == b"\x89PNG"


def test_ctrl_c_ends_a_plan_with_one_line(capsys, monkeypatch, tmp_path):
    from controller.planner.optimise import Planner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Planner, "plan", interrupted)
    (tmp_path / "notes").write_text("x")
    code, out, err = run(capsys, "plan", "sweep", "--plot", str(tmp_path / "notes" / "never.png"))
    assert code == 2  # the plot path is checked first: minutes of planning are not wasted
    code, out, err = run(capsys, "plan", "simulate")
    assert code == 130 and out == ""
    assert err == "innet: interrupted (simulate)\n"


def test_topologies_beyond_32_islands_are_refused_by_plan_and_check(capsys, tmp_path):
    topo = wan_file(tmp_path, 33)
    code, out, err = run(capsys, "plan", str(topo), "--family", "all-to-all")
    assert code == 2 and out == ""
    assert f"{topo}:3: 33 cities: innet carries at most 32 islands" in err
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\ntopology: {topo.name}\nhosts: 1\nschedules: [all-to-all]\n")
    code, out, err = run(capsys, "run", str(scenario), "--check")
    assert code == 2 and out == "" and "at most 32 islands" in err
    code, out, err = run(capsys, "plan", str(wan_file(tmp_path, 32)), "--family", "all-to-all")
    assert code == 0, err


def test_a_deeply_nested_scenario_is_refused_at_its_line(capsys, tmp_path):
    scenario = tmp_path / "deep.yaml"
    scenario.write_text("name: deep\ntraining: " + "[" * 20000 + "]" * 20000 + "\n")
    code, out, err = run(capsys, "run", str(scenario), "--check")
    assert code == 2 and out == ""
    assert err.startswith(f"innet: error: {scenario}:2: nested deeper than 16 levels")


def test_run_checks_its_results_folder_first_and_the_check_makes_nothing(capsys, tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nhosts: 1\nschedules: [all-to-all]\n")
    out_dir = tmp_path / "missing" / "results"
    code, _, err = run(capsys, "run", str(scenario), "--out", str(out_dir), "--check")
    assert code == 0, err
    assert not out_dir.parent.exists()  # the run makes it, with its parents; --check writes nothing
    (tmp_path / "notes").write_text("x")
    inside_a_file = tmp_path / "notes" / "run"
    code, out, err = run(capsys, "run", "--out", str(inside_a_file), "--check")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{tmp_path / 'notes'} is a file, not a folder" in err
    with unwritable(tmp_path / "locked") as locked:
        code, out, err = run(capsys, "run", "--out", str(locked / "run"), "--check")
        assert code == 2 and out == "" and f"cannot write in {locked}" in err
        assert list(locked.iterdir()) == []


def test_ctrl_c_while_net_up_waits_stops_the_service_it_started(capsys, monkeypatch, tmp_path):
    """The service is already started: Ctrl-C stops it (SIGTERM: it tears down what it built)
    and ends the wait with one line naming its PID; exit status 130."""
    import httpx

    from topo.mininet_net import NetworkSpec

    class Started:
        pid = 4242
        terminated = False

        def poll(self):
            return None

        def terminate(self):
            Started.terminated = True

        def wait(self, timeout=None):
            return 143

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: Started())
    monkeypatch.setattr(NetworkSpec, "shaping_mode", lambda self: "switch")
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr(httpx, "get", interrupted)
    code, err = net_up(capsys, tmp_path / "run")
    assert code == 130 and err.count("\n") == 1
    assert Started.terminated
    assert "interrupted (SIGINT) while the testbed was built: the service (PID 4242) stopped" in err


def test_plan_with_jitter_names_a_winner_only_when_it_holds_across_the_margin(capsys):
    code, out, err = run(
        capsys, "plan", "--jitter", "2ms", "--memory", "25.6MB", "--network", "inna"
    )
    assert code == 0, err
    assert "jitter 2.00 ms per link" in out.splitlines()[0]
    assert "costed at 0 s, 2.00 ms, 4.00 ms): cliques-3 is fastest at every point" in out
    assert "cliques-3 *" in out and "headroom" in out
    # near the crossover all-to-all wins at no jitter, cliques-3 at 4 ms: no star, no winner
    code, out, err = run(
        capsys, "plan", "--jitter", "2ms", "--memory", "73.6MB", "--network", "inna"
    )
    assert code == 0, err
    assert "*" not in out.split("chosen:")[0]
    assert "no winner: all-to-all and cliques-3 are within the ±2.00 ms jitter margin" in out
    code, out, _ = run(
        capsys, "plan", "--jitter", "2ms", "--memory", "73.6MB", "--network", "inna", "--json"
    )
    doc = json.loads(out)
    assert doc["jitter_s"] == 0.002
    assert doc["robust"]["winner"] is None and doc["robust"]["margin_s"] == 0.002
    assert doc["robust"]["band_s"] == pytest.approx([0.0, 0.002, 0.004])
    (inna,) = doc["networks"]
    triples = next(f for f in inna["families"] if f["family"] == "cliques-3")
    assert all(r["headroom_s"] >= 0 for r in triples["rounds"])
    # a margin of 0 names the fastest at the jitter itself; over every network, the plain ring
    code, out, _ = run(
        capsys,
        "plan",
        "--jitter",
        "2ms",
        "--margin",
        "0s",
        "--memory",
        "73.6MB",
        "--network",
        "inna",
        "--json",
    )
    assert json.loads(out)["robust"]["winner"] == "all-to-all"
    code, out, _ = run(capsys, "plan", "--jitter", "2ms", "--memory", "73.6MB", "--json")
    assert json.loads(out)["robust"]["winner"] == "plain all-to-all"


def test_sweep_with_jitter_marks_the_points_within_the_margin(capsys, tmp_path):
    plot = tmp_path / "sweep.png"
    code, out, err = run(
        capsys,
        "plan",
        "sweep",
        "--memory",
        "60MB..80MB",
        "--points",
        "3",
        "--jitter",
        "2ms",
        "--family",
        "all-to-all",
        "--family",
        "cliques-3",
        "--plot",
        str(plot),
    )
    assert code == 0, err
    assert (
        "robust" in out
        and "69.3 MB      1.83 s     1.81 s  cliques-3   within: cliques-3, all-to-all" in out
    )
    assert "crossover: cliques-3 is fastest below 70.2 MB" in out
    assert "jitter margin ±2.00 ms: no winner at" in out
    code, out, _ = run(
        capsys,
        "plan",
        "sweep",
        "--memory",
        "60MB..80MB",
        "--points",
        "3",
        "--jitter",
        "2ms",
        "--family",
        "all-to-all",
        "--family",
        "cliques-3",
        "--plot",
        str(plot),
        "--json",
    )
    doc = json.loads(out)
    assert doc["jitter_s"] == 0.002
    assert doc["points"][0]["robust"]["winner"] == "cliques-3"
    assert any(p["robust"]["winner"] is None for p in doc["points"])


def test_simulate_plays_the_jitter_it_is_given(capsys):
    argv = [
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
        "--jitter",
        "2ms",
    ]
    code, out, err = run(capsys, *argv, "--seed", "1")
    assert code == 0, err
    assert "jitter" in out.splitlines()[0] and "exhausted" in out
    assert run(capsys, *argv, "--seed", "1")[1] == out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "--jitter=-1ms"], "--jitter: '-1ms': a duration must not be negative"),
        (["plan", "--jitter", "2s"], "--jitter: must be a duration in [0 s, 1 s]"),
        (["plan", "--jitter", "5"], "--jitter: '5': duration has no unit"),
        (["plan", "--jitter", "nan ms"], "--jitter: 'nan ms': not a duration"),
        (["plan", "sweep", "--margin", "3s"], "--margin: must be a duration in [0 s, 1 s]"),
        (["plan", "simulate", "--jitter", "1000000ms"], "--jitter: must be a duration"),
        (["plan", "simulate", "--seed", "-1"], "--seed: must be from 0"),
        (["plan", "simulate", "--margin", "1ms"], "unrecognized arguments: --margin"),
    ],
)
def test_bad_jitter_flags_are_one_line_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and message in err
