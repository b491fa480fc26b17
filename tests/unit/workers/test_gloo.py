"""workers.gloo: three gloo ranks on loopback (spawned processes: torch keeps one world per
process), grouped all_reduce against the float sum, refusals and failures; and the TCP-fidelity
derivation of docs/gloo.md."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import socket
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from workers.exceptions import AggregationError
from workers.gloo import (
    GlooConfigError,
    GlooError,
    GlooPeerLost,
    GlooRendezvousError,
    GlooUnknownGroup,
    GlooWorld,
    faithful_scale,
    gloo_available,
    interface_of,
    tcp_fidelity,
    tcp_transfer,
)

WORLD = 3
GROUPS = ((0, 1, 2), (2, 0), (1,), (0, 2))  # a repeat, out of order: the world sorts them out
FLOATS = 2500  # 10 kB of float32
LOOPBACK = "127.0.0.1"
NINE_CITIES = [ms / 1000 for ms in range(10, 301)]  # RTTs 10-300 ms
GB, TEN_GBPS = 1e9, 10e9


def values_of(rank: int) -> np.ndarray:
    return np.random.default_rng(100 + rank).standard_normal(FLOATS).astype(np.float32) * 3


def mean_of(members: tuple[int, ...]) -> np.ndarray:
    total = np.sum([values_of(r).astype(np.float64) for r in members], axis=0)
    return total / len(members)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


# --- what each spawned rank does ---------------------------------------------------------------


def grouped_rounds(rank: int, port: int) -> dict[str, Any]:
    """Round 1: everyone; round 2: {0, 2} and {1} alone; then refusals, timings, close."""
    world = GlooWorld(rank, WORLD, (LOOPBACK, port), GROUPS, LOOPBACK, timeout_s=60)
    mine = values_of(rank)
    report: dict[str, Any] = {"groups": world.groups, "interface": world.interface}
    report["whole"] = world.allreduce_mean((0, 1, 2), mine)
    report["pair"] = world.allreduce_mean((2, 0) if rank != 1 else (1,), mine)  # any order
    for name, members in (("unknown", (0, 1)), ("outsider", (1,) if rank != 1 else (0, 2))):
        try:
            world.allreduce_mean(members, mine)
            report[name] = None
        except GlooUnknownGroup as err:
            report[name] = str(err)
    world.close()
    world.close()
    try:
        world.allreduce_mean((0, 1, 2), mine)
    except GlooError as err:
        report["closed"] = str(err)
    return report


def one_rank_leaves(rank: int, port: int) -> dict[str, Any]:
    """Rank 2 exits after the first all_reduce without closing; 0 and 1 then try another."""
    # gloo's timeout far beyond the test's wait (run_ranks): a loss seen at all is seen by the
    # connection closing, not by the timeout, however busy the machine
    world = GlooWorld(rank, WORLD, (LOOPBACK, port), GROUPS, LOOPBACK, timeout_s=600)
    world.allreduce_mean((0, 1, 2), values_of(rank))
    if rank == 2:
        os._exit(0)  # the process is gone: the kernel closes its connections
    report: dict[str, Any] = {}
    try:
        world.allreduce_mean((0, 1, 2), values_of(rank))
        report["lost"] = None
    except GlooPeerLost as err:
        report["lost"] = str(err)
    try:
        world.allreduce_mean((0, 1, 2), values_of(rank))
        report["again"] = None
    except GlooError as err:
        report["again"] = str(err)
    world.close()
    return report


def rank_main(script: str, rank: int, port: int, out: Any) -> None:
    try:
        out.put((rank, {"grouped": grouped_rounds, "leave": one_rank_leaves}[script](rank, port)))
    except BaseException as err:  # the parent reports it
        out.put((rank, f"{type(err).__name__}: {err}"))


def run_ranks(script: str, expect: int, timeout: float = 120.0) -> dict[int, Any]:
    """Start the three ranks (spawn), collect `expect` reports; stop exactly those processes."""
    context = mp.get_context("spawn")
    out = context.Queue()
    port = free_port()
    procs = [
        context.Process(target=rank_main, args=(script, rank, port, out)) for rank in range(WORLD)
    ]
    reports: dict[int, Any] = {}
    try:
        for proc in procs:
            proc.start()
        deadline = time.monotonic() + timeout
        while len(reports) < expect:
            try:
                rank, report = out.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"ranks reported {sorted(reports)} in {timeout} s") from None
            reports[rank] = report
        for proc in procs:
            proc.join(timeout=30)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join()
    failed = {rank: report for rank, report in reports.items() if isinstance(report, str)}
    assert failed == {}
    return reports


@pytest.fixture(scope="module")
def gloo() -> None:
    reason = gloo_available()
    if reason is not None:
        pytest.skip(f"gloo test skipped: {reason}")


@pytest.fixture(scope="module")
def grouped(gloo: None) -> dict[int, Any]:
    return run_ranks("grouped", expect=WORLD)


# --- a world on loopback -------------------------------------------------------------------------


def test_gloo_is_available_here() -> None:
    assert gloo_available() is None


def test_every_rank_gets_the_mean_of_the_whole_world(grouped: dict[int, Any]) -> None:
    expected = mean_of((0, 1, 2))
    for rank in range(WORLD):
        got = grouped[rank]["whole"]
        assert got.dtype == np.float32 and got.shape == (FLOATS,)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # float sums in gloo's order, not required to be exact; every rank holds the same result
    assert all(np.array_equal(grouped[r]["whole"], grouped[0]["whole"]) for r in range(WORLD))


def test_a_subgroup_averages_its_members_and_a_group_of_one_keeps_its_values(
    grouped: dict[int, Any],
) -> None:
    for rank in (0, 2):
        np.testing.assert_allclose(grouped[rank]["pair"], mean_of((0, 2)), rtol=1e-6, atol=1e-6)
    assert np.array_equal(grouped[1]["pair"], values_of(1))
    assert grouped[0]["groups"] == ((0, 1, 2), (0, 2), (1,))
    assert grouped[0]["interface"] == "lo"


def test_a_group_not_set_up_or_without_this_rank_or_after_close_is_refused(
    grouped: dict[int, Any],
) -> None:
    for rank in range(WORLD):
        assert "group (0, 1)" in grouped[rank]["unknown"]
        assert "not set up" in grouped[rank]["unknown"]
        assert "this rank is not in it" in grouped[rank]["outsider"]
        assert "the world is closed" in grouped[rank]["closed"]


def test_a_peer_that_disappears_mid_run_fails_the_collective_and_breaks_the_world(
    gloo: None,
) -> None:
    reports = run_ranks("leave", expect=2)
    for rank in (0, 1):
        lost = reports[rank]["lost"]
        assert lost is not None and "all_reduce over group (0, 1, 2) failed" in lost, lost
        assert "broken" in reports[rank]["again"]
    assert issubclass(GlooPeerLost, AggregationError)


def test_a_rendezvous_nobody_answers_times_out_naming_the_master(gloo: None) -> None:
    port = free_port()
    began = time.monotonic()
    with pytest.raises(GlooRendezvousError, match=f"tcp://127.0.0.1:{port}"):
        GlooWorld(1, 2, (LOOPBACK, port), [(0, 1)], LOOPBACK, timeout_s=1.0)
    assert time.monotonic() - began < 30


@pytest.mark.parametrize(
    ("rank", "world", "groups", "match"),
    [
        (3, 3, [(0, 1, 2)], "rank 3 is outside a world of 3"),
        (-1, 3, [(0, 1, 2)], "outside"),
        (0, 3, [(0, 3)], r"ranks are 0\.\.2"),
        (0, 3, [(0, 0, 1)], "distinct ranks"),
        (0, 3, [()], "distinct ranks"),
    ],
)
def test_ranks_and_groups_outside_the_world_are_refused_before_any_connection(
    rank: int, world: int, groups: list[tuple[int, ...]], match: str
) -> None:
    with pytest.raises(GlooConfigError, match=match):
        GlooWorld(rank, world, (LOOPBACK, 1), groups, LOOPBACK, timeout_s=1.0)


def test_the_interface_is_found_by_its_address() -> None:
    assert interface_of(LOOPBACK) == "lo"
    with pytest.raises(GlooConfigError, match=r"no interface .* has the address 10\.255\.255\.254"):
        interface_of("10.255.255.254")
    with pytest.raises(GlooConfigError, match="not an IPv4 address"):
        interface_of("10.0.0")


# --- TCP at emulation scale ------------------------------------------------------------------


def test_full_scale_slow_start_for_1_GB_over_10_Gbps() -> None:
    """At 300 ms the window needs 15 doublings from 14 480 B to fill the 375 MB path."""
    full = tcp_transfer(GB, TEN_GBPS, 0.3)
    assert full.slow_start_rtts == 15
    sent = 14480 * (2**15 - 1)
    assert full.seconds == pytest.approx(15 * 0.3 + (GB - sent) / 1.25e9 + 0.15)
    assert tcp_transfer(GB, TEN_GBPS, 0.01).slow_start_rtts == 10


@pytest.mark.parametrize("scale", [4, 64, 1000])
def test_a_scaled_wan_is_the_full_one_with_an_initial_window_scale_times_larger(
    scale: int,
) -> None:
    for rtt in (0.01, 0.1, 0.3):
        scaled = tcp_transfer(GB / scale, TEN_GBPS / scale, rtt)
        wider = tcp_transfer(GB, TEN_GBPS, rtt, initial_cwnd=10 * scale)
        assert scaled.seconds == pytest.approx(wider.seconds)
        assert scaled.slow_start_rtts == wider.slow_start_rtts


def test_scale_100000_warns_for_every_nine_city_rtt_and_names_the_scale() -> None:
    for rtt in NINE_CITIES:
        warnings = tcp_fidelity(100_000, TEN_GBPS, rtt, GB)
        assert warnings and all(w.startswith("scale 100000: ") for w in warnings), rtt
    below, fits, slower = tcp_fidelity(100_000, TEN_GBPS, 0.2, GB)
    assert "2.5 kB" in below and "14.5 kB" in below and "15 round trips" in below
    assert "10 kB" in fits and "one flight" in fits
    assert "-74%" in slower


def test_the_faithful_scale_for_the_nine_cities_is_about_three() -> None:
    """docs/gloo.md: within 10% of the full-scale transfer time, for every RTT of 10-300 ms."""
    faithful = faithful_scale(TEN_GBPS, NINE_CITIES, GB)
    assert 3.0 < faithful < 3.1
    assert all(tcp_fidelity(faithful, TEN_GBPS, rtt, GB) == [] for rtt in NINE_CITIES)
    assert any(tcp_fidelity(faithful * 1.01, TEN_GBPS, rtt, GB) for rtt in NINE_CITIES)
    assert all(tcp_fidelity(1, TEN_GBPS, rtt, GB) == [] for rtt in NINE_CITIES)
    # the regime conditions alone (BDP and update against one initial window) allow far more
    assert faithful_scale(TEN_GBPS, NINE_CITIES, GB, tolerance=10.0) == pytest.approx(
        TEN_GBPS * 0.01 / 8 / 14480, rel=1e-3
    )


def test_a_socket_window_that_caps_the_full_scale_rate_is_not_reproduced_at_scale() -> None:
    full = tcp_transfer(GB, TEN_GBPS, 0.2, max_window_bytes=6 * 2**20)
    assert full.window_limited and full.rate_bps == pytest.approx(6 * 2**20 * 8 / 0.2)
    (warning,) = [
        w
        for w in tcp_fidelity(1000, TEN_GBPS, 0.2, GB, max_window_bytes=6 * 2**20)
        if "window (6.29 MB)" in w
    ]
    assert "capping it at 252 Mb/s" in warning


@pytest.mark.parametrize(
    "call",
    [
        lambda: tcp_fidelity(0.5, TEN_GBPS, 0.1, GB),
        lambda: tcp_fidelity(10, TEN_GBPS, 0.1, GB, tolerance=0),
        lambda: tcp_transfer(GB, TEN_GBPS, 0.0),
    ],
)
def test_a_scale_below_one_or_a_non_positive_figure_is_refused(call: Callable[[], Any]) -> None:
    with pytest.raises(GlooConfigError):
        call()
