"""`innet plan --compute STEP_TIME --inner-steps H` and `innet plan bandwidth`: compute
utilisation per network against the same islands in one building."""

import contextlib
import io
import json

import pytest

from controller.planner.compute import steady_utilisation
from innet_cli import main

SETTING = ["--memory", "1.6GB", "--update-size", "1GB"]
COMPUTE = ["--compute", "450ms", "--inner-steps", "20"]  # C = 9 s
C = 9.0
EXACT = ["--family", "all-to-all", "--family", "cliques-3"]  # every island averaged in a cycle


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def quiet(*argv: str) -> dict:
    """The JSON document `innet ARGV --json` prints (outside a test's capsys)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())


def families(doc):
    """(network, family entry) for every WAN row of a plan's JSON."""
    return [(n["network"], f) for n in doc["networks"] for f in n["families"]]


def test_utilisation_columns_are_the_steady_state_of_the_plans_rounds(capsys) -> None:
    doc = quiet("plan", *SETTING, *COMPUTE)
    assert doc["compute"] == {
        "step_time_s": 0.45,
        "inner_steps": 20,
        "round_s": C,
        "source": "given",
    }
    for _, fam in [*families(doc), ("plain", doc["one_dc"])]:
        times = [r["time_s"] for r in fam["rounds"]]
        assert fam["utilisation"] == pytest.approx(steady_utilisation(C, times, False))
        assert fam["utilisation_overlap"] == pytest.approx(steady_utilisation(C, times, True))
    code, out, err = run(capsys, "plan", *SETTING, *COMPUTE)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()]
    inna = next(r for r in rows if r[:3] == ["inna", "all-to-all", "*"])
    fam = next(f for n, f in families(doc) if (n, f["family"]) == ("inna", "all-to-all"))
    assert inna[-2:] == [f"{fam['utilisation']:.1%}", "100%"]


def test_the_one_building_row_comes_first_and_outruns_the_plain_wan(capsys) -> None:
    code, out, err = run(capsys, "plan", *SETTING, *COMPUTE)
    assert code == 0, err
    table = [line for line in out.splitlines() if line.startswith(("one-dc ", "plain "))]
    assert table[0].split()[:2] == ["one-dc", "all-to-all"]
    assert "one-dc: the same islands in one building" in out and "fabric of 90 Gb/s" in out
    assert "utilisation of the fastest per network, without / with overlap: plain all-to-all" in out
    assert "one-dc all-to-all 86.4% / 100%" in out
    doc = quiet("plan", *SETTING, *COMPUTE)
    one_dc = doc["one_dc"]
    assert (one_dc["network"], one_dc["family"], one_dc["fabric_bps"]) == (
        "plain",
        "all-to-all",
        90e9,
    )
    same = [f for n, f in families(doc) if f["family"] == "all-to-all"]
    plain = [f for n, f in families(doc) if n == "plain" and f["family"] == "all-to-all"]
    for fam in plain:  # the same ring, slowed by the WAN's delays
        assert one_dc["utilisation"] >= fam["utilisation"]
    # in-line aggregation over the WAN sends the update once, against the building's ring's
    # 2 (k - 1) / k = 1.78 times: at 10 Gb/s it beats the building without overlap
    assert max(f["utilisation"] for f in same) > one_dc["utilisation"]


def test_without_compute_nothing_changes(capsys) -> None:
    doc = quiet("plan", *SETTING)
    assert "compute" not in doc and "one_dc" not in doc
    assert all("utilisation" not in f for _, f in families(doc))
    code, out, _ = run(capsys, "plan", *SETTING)
    assert code == 0 and "one-dc" not in out and "utilisation" not in out


@pytest.fixture(scope="module")
def search() -> dict:
    """The nine cities' search, the exact families only (with the pairs, ring-pairs wins
    every cell: its rounds exchange with one neighbour)."""
    return quiet("plan", "bandwidth", *SETTING, *COMPUTE, *EXACT)


def lines(doc):
    """(network, overlap, target entry) of every cell, the one-building reference first."""
    for network in [doc["one_dc"], *doc["networks"]]:
        name = "one-dc" if network is doc["one_dc"] else network["network"]
        for key, overlap in (("without_overlap", False), ("with_overlap", True)):
            for target in network[key]["targets"]:
                yield name, overlap, target


def best_at(bps: float, network: str, overlap: bool) -> float:
    """Re-planned: the best utilisation of `network` when each island has `bps` (the WAN links
    10x that, as the nine cities have at 10 Gb/s)."""
    rates = ["--bandwidth", f"{bps:.6f}bps", "--wan-bandwidth", f"{10 * bps:.6f}bps"]
    doc = quiet("plan", *SETTING, *COMPUTE, *EXACT, *rates)
    key = "utilisation_overlap" if overlap else "utilisation"
    if network == "one-dc":
        return doc["one_dc"][key]
    return max(f[key] for n, f in families(doc) if n == network)


def test_the_bandwidth_found_for_90_percent_is_the_least_that_reaches_it(search) -> None:
    assert search["targets"] == [0.5, 0.9, 0.99]
    assert search["families"] == ["all-to-all", "cliques-3"]
    cells = [(n, o, t) for n, o, t in lines(search) if t["target"] == 0.9]
    assert len(cells) == 8
    for network, overlap, target in cells:
        bps = target["bandwidth_bps"]
        assert target["reachable"] and bps is not None
        assert best_at(bps, network, overlap) >= 0.9 > best_at(0.98 * bps, network, overlap)


def test_the_delays_forbid_99_percent_without_overlap(search, capsys) -> None:
    cells = {(n, o): t for n, o, t in lines(search) if t["target"] == 0.99}
    for network in ("plain", "multicast", "inna"):
        out_of_reach = cells[(network, False)]
        assert out_of_reach["bandwidth_bps"] is None and out_of_reach["utilisation"] < 0.99
        assert cells[(network, True)]["reachable"]
    assert cells[("one-dc", False)]["reachable"]  # 10 us between islands
    code, out, err = run(
        capsys, "plan", "bandwidth", *SETTING, *COMPUTE, "--family", "all-to-all", "--targets", "99"
    )
    assert code == 0, err
    assert "unreachable (" in out and "every WAN link's capacity scaled with it" in out
    assert "100 Gb/s links at 10 Gb/s access, 10x the access rate" in out


def test_overlap_never_needs_more_bandwidth(search) -> None:
    cells = {(n, o, t["target"]): t["bandwidth_bps"] for n, o, t in lines(search)}
    for (network, overlap, target), bps in cells.items():
        if not overlap:
            with_overlap = cells[(network, True, target)]
            assert with_overlap is not None
            assert bps is None or with_overlap <= bps


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["plan", "--compute", "450ms"], "--inner-steps"),
        (["plan", "--inner-steps", "20"], "--compute"),
        (["plan", "--compute", "0s", "--inner-steps", "20"], "--compute"),
        (["plan", "--compute=-1s", "--inner-steps", "20"], "--compute"),
        (["plan", "--compute", "450ms", "--inner-steps", "0"], "--inner-steps"),
        (["plan", "bandwidth", "--inner-steps", "20"], "--compute"),
        (["plan", "bandwidth", "--compute", "450ms"], "--inner-steps"),
        (["plan", "bandwidth", *COMPUTE, "--targets", "0"], "--targets"),
        (["plan", "bandwidth", *COMPUTE, "--targets", "50,100"], "--targets"),
        (["plan", "bandwidth", *COMPUTE, "--targets", "50,ninety"], "--targets"),
        (["plan", "bandwidth", *COMPUTE, "--family", "hypercube"], "hypercube"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(capsys, argv, flag) -> None:
    try:
        code = main(argv)
    except SystemExit as exit_:  # the parser's own errors
        code = exit_.code
    _, err = capsys.readouterr()
    assert code == 2 and flag in err and len(err.strip().splitlines()) == 1
