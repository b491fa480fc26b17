"""The machine check before a run: the verdict on given figures, what the plan needs, what the
modes do, the measurement on this machine (sane figures, never speeds) and the run's hook."""

from __future__ import annotations

import json
import math
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from controller.bringup import RunningTestbed
from controller.planner.cost import GroupCost, RoundCost
from controller.planner.schedule import Round
from controller.rounds import STATS, STATS_COUNTER
from controller.runner import calibration as cal
from controller.runner import need as planned
from controller.runner import run as run_module
from controller.runner.calibration import (
    DOES_NOT_FIT,
    FITS,
    TIGHT,
    TIGHT_SHARE,
    CalibrationModeError,
    CalibrationRefused,
    Machine,
    enforce,
    judge,
)
from controller.runner.cli import CALIBRATION_MODES
from controller.runner.emulation import Emulation, MemoryPoint, resolve
from controller.runner.need import Need
from controller.runner.records import Baseline
from controller.runner.run import Run
from controller.runner.scenario import parse_scenario
from topo import local_switch
from topo.siteplan import host_ports
from topo.wan import City, Wan, WanLink


def machine(**change: float) -> Machine:
    """One core gives 10,000 frames/s now (share 1), two cores 20,000; timer p99 0.5 ms."""
    figures: dict[str, Any] = {
        "timer_p50_s": 1e-4,
        "timer_p99_s": 5e-4,
        "timer_max_s": 2e-3,
        "cpu_share": 1.0,
        "frames_per_cpu_s": 10_000.0,
        "cores": 2,
    }
    figures.update(change)
    return Machine(**figures)


def need(switch: float = 1_000.0, total: float = 5_000.0, headroom: float = 0.01) -> Need:
    return Need(switch, total, headroom, "inna all-to-all at 1.6 GB, round 0, Tokyo")


# --- the verdict -------------------------------------------------------------------------------


def test_a_plan_well_inside_the_machine_fits() -> None:
    checked = judge(machine(), need())
    assert checked.verdict == FITS and checked.reasons == ()
    assert checked.summary.endswith(": fits")
    assert "timer p99 0.5 ms, CPU share 1.00, switch pipeline (python) 10,000 frames/s/core" in (
        checked.summary
    )
    assert "at most 1,000 frames/s per switch, 5,000 in all on 2 cores" in checked.summary


def test_more_than_the_cores_give_in_all_by_the_margin_does_not_fit() -> None:
    over = cal.OVER_MARGIN * 20_000.0 + 1
    checked = judge(machine(), need(total=over))
    assert checked.verdict == DOES_NOT_FIT
    assert any(f"{over:,.0f} frames/s in all" in r and "2 cores" in r for r in checked.reasons)
    # within the margin the estimate cannot tell: tight, and it runs (warned)
    near = judge(machine(), need(total=20_001.0))
    assert near.verdict == TIGHT and near.reasons == ("the switches need 100% of the machine",)


def test_one_switch_above_one_core_does_not_fit_even_when_the_sum_would() -> None:
    checked = judge(machine(), need(switch=10_001.0, total=10_001.0))
    assert checked.verdict == DOES_NOT_FIT
    assert any("one switch" in r and "Tokyo" in r for r in checked.reasons)


def test_a_busy_machine_gives_less_the_cpu_share_scales_what_a_core_processes() -> None:
    assert judge(machine(), need(total=15_000.0)).verdict == TIGHT
    assert judge(machine(cpu_share=0.5), need(total=15_000.0)).verdict == DOES_NOT_FIT
    assert machine(cpu_share=1.3).core_fps == 10_000.0  # a share above 1 is clock noise


def test_another_job_on_another_core_leaves_fewer_cores() -> None:
    """One busy loop on a 2-core machine leaves the check's own loop a whole core (share 1.0),
    but /proc/stat sees the other core busy: one core is left."""
    busy = machine(others_cores=1.0)
    assert busy.free_cores == 1.0 and machine(others_cores=2.5).free_cores == 0.0
    assert judge(machine(), need(total=13_000.0)).verdict == TIGHT  # 1.3 of 2 cores
    checked = judge(busy, need(total=13_000.0))  # 1.3 cores of the one left
    assert checked.verdict == DOES_NOT_FIT
    assert "more than the 1.00 of 2 cores free now" in checked.reasons[0], checked.reasons
    assert "other work 1.00 cores" in checked.reasons[0] and "other work 1.00" in checked.summary
    busy_leaders = judge(
        machine(others_cores=1.0, leader_frames_per_cpu_s=10_000.0),
        Need(100.0, 1_000.0, 0.01, "Tokyo", leader_fps=1_000.0),
    )
    assert ": 0.16 of 1.00 free of 2 cores: fits" in busy_leaders.summary, busy_leaders.summary
    assert machine(cpu_share=0.6, others_cores=0.2).free_cores == pytest.approx(1.2)


def test_more_than_half_the_machine_is_tight_half_is_not() -> None:
    half = TIGHT_SHARE * 20_000.0
    assert judge(machine(), need(total=half)).verdict == FITS
    assert judge(machine(), need(total=half + 1)).verdict == TIGHT
    assert judge(machine(), need(switch=TIGHT_SHARE * 10_000.0 + 1)).verdict == TIGHT


def test_timer_lateness_above_the_planned_headroom_is_tight() -> None:
    checked = judge(machine(timer_p99_s=0.002), need(headroom=0.001))
    assert checked.verdict == TIGHT
    assert checked.reasons == (
        "timer lateness p99 2 ms is above the planned headroom of 1 ms: slot conflicts likely",
    )
    assert judge(machine(timer_p99_s=0.002), need(headroom=math.inf)).verdict == FITS
    assert judge(machine(timer_p99_s=1e-5), need(headroom=0.0)).verdict == TIGHT  # none planned


def test_the_leaders_cpu_counts_beside_the_switches() -> None:
    """10,000 switch frames (1 core of 2) fit alone; 30,000 leader frames at 10,000 a core
    measured alone (3 cores, of which LEADER_UNDER_LOAD under load) do not; the same figures
    without a leader measurement are the old check."""
    switches_only = judge(machine(), need(total=10_000.0))
    assert switches_only.verdict == FITS
    both = Need(1_000.0, 10_000.0, 0.01, "Tokyo", leader_fps=30_000.0, leader_peak_fps=2_000.0)
    checked = judge(machine(leader_frames_per_cpu_s=10_000.0), both)
    assert checked.verdict == DOES_NOT_FIT
    (reason,) = checked.reasons
    want = 1 + cal.LEADER_UNDER_LOAD * 3
    assert f"10,000 frames/s in all and the leaders 30,000 ({want:.2f} cores)" in reason, reason
    assert f": {want:.2f} of 2 cores: does not fit" in checked.summary, checked.summary
    assert judge(machine(), both).verdict == FITS  # leaders not measured: not counted
    tight = judge(machine(leader_frames_per_cpu_s=40_000.0), both)  # 1.25 cores of 2
    assert tight.verdict == TIGHT
    share = (1 + cal.LEADER_UNDER_LOAD * 30_000 / 40_000) / 2
    assert tight.reasons == (f"the switches and leaders need {share:.0%} of the machine",)


def at_scale(base: Need, scale: float) -> Need:
    """`base` at another scale factor: every rate it asks falls as 1 / scale."""
    k = base.scale / scale
    return Need(
        base.switch_fps * k,
        base.total_fps * k,
        base.headroom_s,
        base.busiest,
        leader_fps=base.leader_fps * k,
        scale=scale,
    )


def test_a_plan_that_does_not_fit_names_the_least_scale_at_which_it_would() -> None:
    # 47,300 frames/s in all need 4.73 cores of 10,000 frames/s; fitting means at most half of
    # the 2 cores free: scale x 4.73, rounded up to two significant digits
    too_fast = Need(12_000.0, 47_300.0, 0.01, "Tokyo", scale=1_000.0)
    checked = judge(machine(), too_fast)
    assert checked.verdict == DOES_NOT_FIT
    assert cal.fitting_scale(machine(), too_fast) == 4_800.0
    assert "the plan would fit from scale 4,800 up (scale 1,000 now)" in checked.reasons
    assert judge(machine(), at_scale(too_fast, 4_800.0)).verdict == FITS
    assert judge(machine(), at_scale(too_fast, 4_700.0)).verdict == TIGHT
    with pytest.raises(CalibrationRefused, match="raise the scenario's scale to at least 4,800 "):
        enforce(checked, "refuse")
    data = checked.to_json("refuse")
    assert data["fits_from_scale"] == 4_800.0


def test_one_switch_above_its_core_alone_sets_the_scale_too() -> None:
    one_hot = Need(23_000.0, 23_000.0, 0.01, "Tokyo", scale=2_000.0)  # 2.3 cores' worth in one
    assert cal.fitting_scale(machine(), one_hot) == 9_200.0  # to half a core: x 4.6
    assert judge(machine(), at_scale(one_hot, 9_200.0)).verdict == FITS


def test_with_no_core_free_no_scale_fits_and_without_a_scale_none_is_named() -> None:
    busy = machine(others_cores=2.0)
    checked = judge(busy, Need(1_000.0, 5_000.0, 0.01, "Tokyo", scale=1_000.0))
    assert checked.verdict == DOES_NOT_FIT
    assert "the plan would fit at no scale (scale 1,000 now)" in checked.reasons
    assert checked.to_json("warn")["fits_from_scale"] is None
    with pytest.raises(CalibrationRefused) as err:
        enforce(checked, "refuse")
    assert "raise the scenario's scale (fewer" in str(err.value)
    unknown = judge(machine(), need(total=50_000.0))  # a Need without its scale
    assert not [r for r in unknown.reasons if "would fit" in r]


# --- the modes ---------------------------------------------------------------------------------


def test_refuse_stops_a_plan_that_does_not_fit_with_one_line_and_status_1() -> None:
    checked = judge(machine(), need(total=50_000.0))
    with pytest.raises(CalibrationRefused) as err:
        enforce(checked, "refuse")
    assert err.value.exit_status == 1 and "\n" not in str(err.value)
    assert "does not fit" in str(err.value) and "--calibration warn" in str(err.value)
    warning = enforce(checked, "warn")
    assert warning is not None and "does not fit" in warning
    assert enforce(checked, "off") is None


def test_a_tight_plan_is_warned_of_and_run_a_fitting_one_is_silent() -> None:
    tight = judge(machine(), need(total=15_000.0))
    for mode in ("refuse", "warn"):
        warning = enforce(tight, mode)
        assert warning is not None and "tight" in warning
    assert enforce(judge(machine(), need()), "refuse") is None
    with pytest.raises(CalibrationModeError):
        enforce(tight, "sometimes")


def test_the_command_line_offers_the_modes_the_check_knows() -> None:
    assert CALIBRATION_MODES == cal.MODES


def test_calibration_json_has_figures_verdict_reasons_and_mode(tmp_path: Path) -> None:
    checked = judge(machine(), need(total=15_000.0, headroom=math.inf))
    data = json.loads(cal.write(checked, "warn", tmp_path).read_text())
    assert data["mode"] == "warn" and data["verdict"] == TIGHT and data["reasons"]
    assert data["machine"]["frames_per_cpu_s"] == 10_000.0 and data["machine"]["cores"] == 2
    assert data["machine"]["machine_fps"] == 20_000.0
    assert data["need"]["total_fps"] == 15_000.0 and data["need"]["headroom_s"] is None


# --- what the plan needs -----------------------------------------------------------------------


def chain() -> Wan:
    """A - B - C, 10 ms a link."""
    cities = tuple(City(n, n, "X", 0.0, float(i)) for i, n in enumerate("ABC"))
    links = (WanLink("A", "B", 0.01, 10e9, "t"), WanLink("B", "C", 0.01, 10e9, "t"))
    return Wan("chain", cities, links)


def group(collective: str, members: tuple[int, ...] = (0, 1, 2), **kw: Any) -> GroupCost:
    zeros = tuple(0.0 for _ in members)
    return GroupCost(members, 1e9, zeros, 0.0, 0.02, 1.0, 0.0, "access", collective, **kw)


def ingress(g: GroupCost) -> dict[int, int]:
    """Streams entering each switch of the chain."""
    sent, links = planned.group_streams(chain(), g)
    counts = dict.fromkeys(range(3), 0)
    for m, n in sent.items():
        counts[m] += n
    for (_, v), n in links.items():
        counts[v] += n
    return counts


def test_an_inna_stream_counts_at_its_edge_twice_and_at_every_switch_of_its_tree() -> None:
    # own WAN|REMOTE and LOCAL copies, plus the other two members' streams
    assert ingress(group("inna")) == {0: 4, 1: 4, 2: 4}
    assert ingress(group("multicast")) == {0: 3, 1: 3, 2: 3}  # one copy each
    # A and C only: A's stream crosses B on the way to C, and C's on the way to A
    assert ingress(group("inna", (0, 2))) == {0: 3, 1: 2, 2: 3}


def test_a_ring_counts_each_hop_and_direct_exchange_k_minus_1_streams() -> None:
    # ring A -> B -> C -> A: C's stream to A goes through B
    assert ingress(group("ring", order=(0, 1, 2))) == {0: 2, 1: 3, 2: 2}
    # every member sends 2 streams; B relays A<->C both ways
    assert ingress(group("direct")) == {0: 4, 1: 6, 2: 4}
    assert ingress(group("local", (1,))) == {0: 0, 1: 0, 2: 0}


def test_round_rates_turn_the_group_rate_into_frames_at_emulation_scale() -> None:
    em = resolve(parse_scenario("name: t\nscale: 100000\nmemory: [1.6GB]\n"))
    g = group("inna", (0, 2))
    lone = GroupCost((1,), math.inf, (0.0,), 0.0, 0.0, 0.0, 0.0, "local")
    rates = planned.round_rates(em, chain(), RoundCost(Round.of([[0, 2], [1]]), (g, lone)))
    fps = em.frame_rate_bps(1e9) / em.packet_format.frame_bits
    assert rates == pytest.approx({0: 3 * fps, 1: 2 * fps, 2: 3 * fps})


def test_the_plan_needs_its_busiest_round_all_to_all_at_ample_memory() -> None:
    em = resolve(
        parse_scenario(
            "name: t\nscale: 100000\nmemory: [1.6GB]\nschedules: [all-to-all, cliques-3]\n"
        )
    )
    got = planned.plan_need(em)
    (all_to_all,) = em.points[0].plays[0].plan.costs
    (g,) = all_to_all.groups
    fps = em.frame_rate_bps(g.rate_bps) / em.packet_format.frame_bits
    n = em.scenario.wan.n
    # every switch: its leader's two copies and the n - 1 other members' streams
    assert got.switch_fps == pytest.approx((n + 1) * fps)
    assert got.total_fps == pytest.approx(n * (n + 1) * fps)
    assert got.busiest.startswith("inna all-to-all at ") and ", round 0, " in got.busiest
    # every leader: its two copies out, the sums in
    assert got.leader_fps == pytest.approx(n * 3 * fps)
    assert got.leader_peak_fps == pytest.approx(3 * fps)
    assert got.scale == 100_000
    costs = [c for p in em.points[0].plays for c in p.plan.costs]
    assert got.headroom_s == min(getattr(c, "headroom_s", math.inf) for c in costs)


def test_a_leader_handles_what_it_sends_and_what_it_is_delivered() -> None:
    """Three members: inna sends two copies and is delivered the sums; multicast sends one
    stream and is delivered the 2 others'; direct exchange sends 2 and is delivered 2; a ring
    sends its stream and is delivered its predecessor's."""
    em = resolve(parse_scenario("name: t\nscale: 100000\nmemory: [1.6GB]\n"))
    fps = em.frame_rate_bps(1e9) / em.packet_format.frame_bits
    for collective, per_leader in (("inna", 3), ("multicast", 3), ("direct", 4), ("ring", 2)):
        g = group(collective, order=(0, 1, 2)) if collective == "ring" else group(collective)
        rates = planned.leader_rates(em, chain(), RoundCost(Round.of([[0, 1, 2]]), (g,)))
        assert rates == pytest.approx(dict.fromkeys((0, 1, 2), per_leader * fps)), collective


def test_the_tightest_round_is_named_where_lateness_exceeds_its_headroom() -> None:
    em = resolve(parse_scenario("name: t\nscale: 100000\nmemory: [25.6MB, 1.6GB]\n"))
    got = planned.plan_need(em)
    # all-to-all on one slot per bank is memory-bound: no headroom by construction, left out;
    # the triples there are bound by their access links and keep about one chunk's time
    assert 0.005 < got.headroom_s < 0.02, got
    assert "cliques-3 at 25.6 MB" in got.tightest
    assert judge(machine(), got).verdict == "fits"
    (reason,) = judge(machine(timer_p99_s=got.headroom_s + 0.001), got).reasons
    assert f"({got.tightest})" in reason


# --- the measurement ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def emulation() -> Emulation:
    return resolve(parse_scenario("name: t\nscale: 100000\nmemory: [25.6MB]\nhosts: 2\n"))


@pytest.mark.parametrize("backend", ["python", "native"])
def test_the_check_frames_aggregate_on_the_run_s_switch_program(
    emulation: Emulation, backend: str
) -> None:
    switch = cal.member_switch(emulation, backend=backend)
    assert switch.backend == backend
    n = emulation.scenario.wan.n
    to_hosts = []
    for chunk in (0, 1, 2):
        for port, frame in cal.chunk_frames(emulation, chunk):
            to_hosts = [p for p, _ in switch.process(port, frame)]
        assert sorted(to_hosts) == list(host_ports(2))  # the last frame completes the sum
    stats = dict(zip(STATS, switch.counter(STATS_COUNTER), strict=False))
    # one slot per bank, three chunks in turn: every contribution merged, none refused
    assert stats["completed"] == 3 and stats["contribution"] == 3 * n
    refused = ("duplicate", "result_resent", "slot_conflict", "malformed", "not_member")
    assert {k: stats[k] for k in refused} == dict.fromkeys(refused, 0)


def test_a_fresh_copy_of_the_check_s_switch_starts_empty_and_is_not_compiled_again(
    emulation: Emulation, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = cal.member_switch(emulation, backend="native")
    frames = [f for chunk in (0, 1) for f in cal.chunk_frames(emulation, chunk)]
    out = [first.process(port, frame) for port, frame in frames]

    def no_compile(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(local_switch, "compile_file", no_compile)
    again = cal.member_switch(emulation, like=first)
    assert again.backend == first.backend
    assert again.counter(STATS_COUNTER) == [0] * len(STATS)  # its own state: nothing counted
    assert [again.process(port, frame) for port, frame in frames] == out
    assert again.counter(STATS_COUNTER) == first.counter(STATS_COUNTER)


def test_the_measurement_gives_sane_figures(emulation: Emulation) -> None:
    m = cal.measure(emulation, leader_fps=2_000.0)
    assert math.isfinite(m.leader_frames_per_cpu_s) and m.leader_frames_per_cpu_s > 0
    assert 0.0 <= m.others_cores <= m.cores + 0.5  # /proc/stat in jiffies: a little slack
    figures = (m.timer_p50_s, m.timer_p99_s, m.timer_max_s, m.cpu_share, m.frames_per_cpu_s)
    assert all(math.isfinite(x) and x >= 0 for x in figures)
    assert m.timer_p50_s <= m.timer_p99_s <= m.timer_max_s
    assert m.cpu_share > 0 and m.frames_per_cpu_s > 0 and m.cores >= 1
    assert m.backend in ("native", "python")  # the switches' own choice, recorded


# --- the run's hook ----------------------------------------------------------------------------


class Stop(Exception):
    """Ends a run in a test once the check is behind it."""


def never_built(point: MemoryPoint) -> AbstractContextManager[RunningTestbed]:
    raise AssertionError("a testbed was built")


def slow_machine(
    em: Emulation, backend: str | None = None, leader_fps: float = 0.0, target: str = "p4switch"
) -> Machine:
    return machine(frames_per_cpu_s=1.0)


def test_the_run_checks_the_target_its_switches_run_on(
    emulation: Emulation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured: list[str] = []

    def on(em: Emulation, backend: str | None, leader_fps: float, target: str) -> Machine:
        measured.append(target)
        return machine(backend=target)

    monkeypatch.setattr(cal, "measure", on)
    for target in ("bmv2", "p4switch"):
        checked = Run(emulation, tmp_path, never_built, calibration="warn", target=target)
        assert checked.calibrate() is not None
    assert measured == ["bmv2", "p4switch"]


def test_a_refused_run_builds_and_writes_nothing(
    emulation: Emulation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cal, "measure", slow_machine)

    folder = tmp_path / "out"
    run = Run(emulation, folder, never_built, calibration="refuse")
    with pytest.raises(CalibrationRefused):
        run.execute()
    assert not folder.exists() and run.calibration is not None
    assert run.calibration.verdict == DOES_NOT_FIT
    with pytest.raises(CalibrationRefused):  # a refusal stands: no second try runs
        run.execute()


def test_a_warned_run_goes_on_and_records_the_check(
    emulation: Emulation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cal, "measure", slow_machine)

    def stop(em: Emulation) -> Baseline:
        raise Stop

    monkeypatch.setattr(run_module, "baseline", stop)  # the first thing after the check
    run = Run(emulation, tmp_path, never_built, calibration="warn")
    with pytest.raises(Stop):
        run.execute()
    assert run.calibration_warning is not None and "does not fit" in run.calibration_warning
    data = json.loads((tmp_path / cal.CALIBRATION_FILE).read_text())
    assert data["mode"] == "warn" and data["verdict"] == DOES_NOT_FIT


def test_off_measures_nothing(
    emulation: Emulation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def measured(em: Emulation) -> Machine:
        raise AssertionError("measured with the check off")

    monkeypatch.setattr(cal, "measure", measured)
    run = Run(emulation, tmp_path, never_built, calibration="off")
    assert run.calibrate() is None
    with pytest.raises(CalibrationModeError):
        Run(emulation, tmp_path, never_built, calibration="maybe")


def test_a_busy_cpu_makes_a_plan_with_little_headroom_tight() -> None:
    """Beside two busy loops the timer check saw 0.1 ms (a woken sleeper runs first) while the
    CPU share fell to 0.49 and the triples' 10.2 ms of headroom met slot conflicts."""
    tight = judge(machine(cpu_share=0.49, timer_p99_s=1e-4), need(headroom=0.0102))
    assert tight.verdict == "tight"
    assert any("another job takes 51% of a core" in reason for reason in tight.reasons)
    assert judge(machine(cpu_share=0.95), need(headroom=0.0102)).verdict == "fits"
    calm = judge(machine(cpu_share=0.49), need(total=1_000.0, headroom=0.2))
    assert calm.verdict == "fits", calm.reasons
