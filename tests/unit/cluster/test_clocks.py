"""controller.cluster.clocks: clock offsets within their stated bound, the verdict against the
plan's headroom, and the delay a crossing WAN link leaves its emulator."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cluster.clocks import (
    ClockMode,
    ClockOffset,
    ClockRefused,
    ClockSample,
    MeasurementError,
    WanDelayRefused,
    crossing_delays,
    estimate_offset,
    judge_clocks,
    path_delay,
)
from innet.exceptions import InputError
from innet.vocabulary import VocabularyError
from tests.unit.fuzz_profile import fuzz_settings
from topo.wan import WanLink

EXAMPLES = fuzz_settings(200, slow=False)
EPOCH = 1.7e9  # wall-clock seconds, as time.time() gives them
ROUNDING_S = 2e-6  # a few float steps at EPOCH (2.4e-7 s each)


def exchange(
    t0: float, offset: float, there: float, back: float, hold: float = 1e-4
) -> ClockSample:
    """The exchange a node `offset` ahead of the head gives when the request takes `there`, the
    node holds it `hold` and the reply takes `back` (seconds)."""
    t1 = t0 + offset + there
    t2 = t1 + hold
    return ClockSample(t0, t1, t2, t2 - offset + back)


def clock(uncertainty_s: float) -> ClockOffset:
    return ClockOffset(0.01, uncertainty_s, 8, 2 * uncertainty_s, 3 * uncertainty_s)


# --- offsets ---------------------------------------------------------------------------------


def test_symmetric_exchanges_give_the_offset_exactly() -> None:
    samples = [
        exchange(100.0 + i, offset=-3.25, there=d, back=d) for i, d in enumerate([4e-3, 2e-3, 9e-3])
    ]
    est = estimate_offset(samples)
    assert est.offset_s == pytest.approx(-3.25, abs=1e-12)
    assert est.uncertainty_s == pytest.approx(2e-3)  # half the shortest round trip, 4 ms
    assert est.min_round_trip_s == pytest.approx(4e-3)
    assert est.median_round_trip_s == pytest.approx(8e-3)
    assert est.samples == 3
    assert est.to_head(est.to_node(EPOCH)) == EPOCH
    assert est.to_head(103.5) == pytest.approx(106.75)
    assert "behind the head by 3.25 s ± 2.00 ms (3 exchanges" in est.summary
    assert json.loads(json.dumps(est.to_json(), allow_nan=False))["offset_s"] == est.offset_s


delays = st.floats(1e-5, 0.2)


@given(
    offset=st.floats(-1e4, 1e4),
    there=delays,
    back=delays,
    queues=st.lists(
        st.tuples(st.floats(1e-4, 0.5), st.floats(0, 1), st.floats(0, 1e-3)), max_size=12
    ),
    clean_at=st.integers(0, 12),
    start=st.floats(EPOCH, EPOCH + 1e6),
)
@EXAMPLES
def test_the_shortest_exchange_is_kept_and_bounds_the_true_offset(
    offset: float,
    there: float,
    back: float,
    queues: list[tuple[float, float, float]],
    clean_at: int,
    start: float,
) -> None:
    """Queueing (split between the ways by `share`) on all exchanges but one, whatever the
    asymmetry of the unqueued path: the unqueued exchange is the one kept, and the true offset
    is within the stated uncertainty."""
    samples = [
        exchange(start + i, offset, there + q * share, back + q * (1 - share), hold)
        for i, (q, share, hold) in enumerate(queues)
    ]
    samples.insert(min(clean_at, len(samples)), exchange(start + 20, offset, there, back))
    est = estimate_offset(samples)
    assert est.samples == len(samples)
    assert est.min_round_trip_s == pytest.approx(there + back, abs=ROUNDING_S)
    assert est.offset_s == pytest.approx(offset + (there - back) / 2, abs=ROUNDING_S)
    assert abs(est.offset_s - offset) <= est.uncertainty_s + ROUNDING_S
    assert est.min_round_trip_s <= est.median_round_trip_s


@given(
    offset=st.floats(-1e4, 1e4),
    legs=st.lists(st.tuples(delays, delays), min_size=1, max_size=8),
)
@EXAMPLES
def test_the_bound_holds_with_every_exchange_queued(
    offset: float, legs: list[tuple[float, float]]
) -> None:
    est = estimate_offset([exchange(EPOCH + i, offset, a, b) for i, (a, b) in enumerate(legs)])
    assert abs(est.offset_s - offset) <= est.uncertainty_s + ROUNDING_S
    assert est.uncertainty_s == pytest.approx(min(a + b for a, b in legs) / 2, abs=ROUNDING_S)


@pytest.mark.parametrize(
    ("sample", "match"),
    [
        (ClockSample(10.0, 5.0, 5.1, 9.9), r"exchange 1 with node 'gpu-3': the head received"),
        (ClockSample(10.0, 5.1, 5.0, 10.3), r"exchange 1 with node 'gpu-3': the node replied"),
        (
            ClockSample(10.0, 5.0, 5.5, 10.2),
            r"held the request for 500 ms, longer than the head waited .*\(200 ms\)",
        ),
        (ClockSample(10.0, math.nan, 5.0, 10.2), r"exchange 1 with node 'gpu-3': t1 is nan"),
        (ClockSample(math.inf, 5.0, 5.0, 10.2), r"t0 is inf, not a finite time"),
        (ClockSample(10.0, 5.0, 5.0, -math.inf), r"t3 is -inf"),
    ],
    ids=["head-backwards", "node-backwards", "negative-round-trip", "nan", "inf", "-inf"],
)
def test_an_impossible_exchange_is_refused_naming_the_node(sample: ClockSample, match: str) -> None:
    good = ClockSample(9.0, 4.0, 4.0, 9.01)
    with pytest.raises(MeasurementError, match=match) as err:
        estimate_offset([good, sample], node="gpu-3")
    assert isinstance(err.value, InputError) and err.value.exit_status == 2


def test_no_exchange_is_refused() -> None:
    with pytest.raises(MeasurementError, match="no clock exchange with node 'gpu-3': measure"):
        estimate_offset([], node="gpu-3")
    with pytest.raises(MeasurementError, match="no clock exchange with the node"):
        estimate_offset([])


# --- the verdict -----------------------------------------------------------------------------


def test_a_clock_looser_than_the_headroom_refuses_the_run() -> None:
    offsets = {"gpu-1": clock(1e-4), "gpu-2": clock(3e-3), "gpu-3": clock(2.5e-3)}
    with pytest.raises(ClockRefused) as err:
        judge_clocks(offsets, headroom_s=2e-3, mode=ClockMode.REFUSE)
    message = str(err.value)
    assert "on nodes 'gpu-2' (± 3.00 ms), 'gpu-3' (± 2.50 ms);" in message  # loosest first
    assert "timing headroom of 2.00 ms" in message and "gpu-1" not in message
    assert "quieter network" in message and "more exchanges" in message
    assert err.value.exit_status == 1  # the plan is fine; these machines cannot run it now


def test_in_the_flag_mode_a_loose_clock_flags_the_rounds() -> None:
    offsets = {"gpu-1": clock(1e-4), "gpu-2": clock(3e-3)}
    verdict = judge_clocks(offsets, 2e-3, "flag")
    assert verdict.flag_rounds and verdict.loose == ("gpu-2",)
    assert "on node 'gpu-2' (± 3.00 ms)" in verdict.reason and "2.00 ms" in verdict.reason
    assert verdict.to_json() == {
        "mode": "flag",
        "headroom_s": 2e-3,
        "loose_nodes": ["gpu-2"],
        "flag_rounds": True,
        "reason": verdict.reason,
    }


@pytest.mark.parametrize("mode", list(ClockMode))
def test_clocks_within_the_headroom_pass_in_either_mode(mode: ClockMode) -> None:
    offsets = {"gpu-1": clock(1e-4), "gpu-2": clock(2e-3)}  # at the headroom is within it
    verdict = judge_clocks(offsets, 2e-3, mode)
    assert not verdict.flag_rounds and verdict.loose == () and verdict.reason == ""
    assert verdict.mode is mode


def test_no_planned_headroom_is_never_exceeded() -> None:
    verdict = judge_clocks({"gpu-1": clock(5.0)}, math.inf, ClockMode.REFUSE)
    assert not verdict.flag_rounds
    assert json.dumps(verdict.to_json(), allow_nan=False)  # no Infinity in the results
    assert verdict.to_json()["headroom_s"] is None


def test_an_unknown_mode_or_headroom_is_refused() -> None:
    with pytest.raises(VocabularyError, match="unknown clock mode 'warn'; known: refuse, flag"):
        judge_clocks({}, 1e-3, "warn")
    for headroom in (math.nan, -1e-3):
        with pytest.raises(MeasurementError, match="timing headroom"):
            judge_clocks({}, headroom, ClockMode.FLAG)


# --- the wire between machines ---------------------------------------------------------------


def test_the_wire_s_delay_is_half_the_shortest_round_trip() -> None:
    path = path_delay("gpu-1", "gpu-2", [9e-3, 4e-3, 6e-3, 30e-3])
    assert path.one_way_s == pytest.approx(2e-3)
    assert (path.samples, path.min_round_trip_s, path.median_round_trip_s) == (4, 4e-3, 7.5e-3)
    assert path.to_json()["nodes"] == ["gpu-1", "gpu-2"]


@given(
    clean=st.floats(1e-6, 0.3),
    queued=st.lists(st.floats(1e-6, 1.0), max_size=12),
    at=st.integers(0, 12),
)
@EXAMPLES
def test_queueing_on_all_round_trips_but_one_leaves_the_wire_s_delay(
    clean: float, queued: list[float], at: int
) -> None:
    rtts = [clean + q for q in queued]
    rtts.insert(min(at, len(rtts)), clean)
    assert path_delay("a", "b", rtts).one_way_s == clean / 2


@pytest.mark.parametrize(
    ("rtts", "match"),
    [
        ([], "no round trips between nodes 'gpu-1' and 'gpu-2'"),
        ([1e-3, -1e-3], "nodes 'gpu-1' and 'gpu-2': round trip 1 is -0.001"),
        ([math.nan], "round trip 0 is nan"),
        ([math.inf], "round trip 0 is inf"),
    ],
)
def test_impossible_round_trips_are_refused(rtts: list[float], match: str) -> None:
    with pytest.raises(MeasurementError, match=match):
        path_delay("gpu-1", "gpu-2", rtts)


def link(a: str, b: str, delay_s: float, jitter_s: float = 0.0) -> WanLink:
    return WanLink(a, b, delay_s, 1e10, "test", jitter_s=jitter_s)


NODE_OF = {"Tokyo": "gpu-1", "Osaka": "gpu-1", "Sydney": "gpu-2", "Paris": "gpu-3"}


def test_a_crossing_link_leaves_its_emulator_the_rest_of_its_delay() -> None:
    links = [
        link("Tokyo", "Osaka", 4e-3),  # inside gpu-1: untouched
        link("Tokyo", "Sydney", 52e-3, jitter_s=1e-3),
        link("Paris", "Osaka", 110e-3),
    ]
    physical = {("gpu-1", "gpu-2"): 3e-3, ("gpu-3", "gpu-1"): 0.5e-3}  # either order
    delays = crossing_delays(links, NODE_OF, physical)
    assert [(x.a, x.b) for x in delays.links] == [("Tokyo", "Sydney"), ("Paris", "Osaka")]
    sydney = delays.find("Sydney", "Tokyo")
    assert sydney is not None
    assert (sydney.node_a, sydney.node_b, sydney.target_s, sydney.physical_s) == (
        "gpu-1",
        "gpu-2",
        52e-3,
        3e-3,
    )
    assert sydney.emulated_s == pytest.approx(49e-3) and sydney.jitter_s == 1e-3
    paris = delays.find("Paris", "Osaka")
    assert paris is not None and paris.emulated_s == pytest.approx(109.5e-3)
    assert delays.find("Tokyo", "Osaka") is None
    written = json.loads(json.dumps(delays.to_json(), allow_nan=False))
    assert written["crossing_links"][0] == {
        "a": "Tokyo",
        "b": "Sydney",
        "node_a": "gpu-1",
        "node_b": "gpu-2",
        "target_s": 52e-3,
        "physical_s": 3e-3,
        "emulated_s": sydney.emulated_s,
        "jitter_s": 1e-3,
    }


def test_a_link_as_long_as_the_wire_is_emulated_with_no_delay() -> None:
    delays = crossing_delays([link("Tokyo", "Sydney", 3e-3)], NODE_OF, {("gpu-1", "gpu-2"): 3e-3})
    assert delays.links[0].emulated_s == 0.0


def test_a_link_shorter_than_the_wire_is_refused_naming_it() -> None:
    links = [
        link("Tokyo", "Sydney", 2e-3),
        link("Tokyo", "Osaka", 1e-3),  # inside a node: no wire to beat
        link("Paris", "Sydney", 80e-3),
        link("Paris", "Osaka", 1e-3),
    ]
    physical = {("gpu-1", "gpu-2"): 3e-3, ("gpu-2", "gpu-3"): 40e-3, ("gpu-1", "gpu-3"): 45e-3}
    with pytest.raises(WanDelayRefused) as err:
        crossing_delays(links, NODE_OF, physical)
    message = str(err.value)
    assert "link Tokyo-Sydney: its delay 2.00 ms is below the 3.00 ms" in message
    assert "between nodes 'gpu-1' and 'gpu-2'" in message
    assert "link Paris-Osaka: its delay 1.00 ms is below the 45.0 ms" in message
    assert "Tokyo-Osaka" not in message and "Paris-Sydney" not in message
    assert "place each such link's two cities on one node" in message


def test_a_crossing_without_a_measured_wire_or_a_city_without_a_node_is_refused() -> None:
    with pytest.raises(MeasurementError, match=r"Tokyo-Sydney crosses .* never measured"):
        crossing_delays([link("Tokyo", "Sydney", 50e-3)], NODE_OF, {("gpu-1", "gpu-3"): 1e-3})
    with pytest.raises(MeasurementError, match="link Tokyo-Lima: city 'Lima' is on no node"):
        crossing_delays([link("Tokyo", "Lima", 50e-3)], NODE_OF, {})
    with pytest.raises(MeasurementError, match="between nodes 'gpu-1' and 'gpu-2' is nan"):
        crossing_delays([link("Tokyo", "Sydney", 50e-3)], NODE_OF, {("gpu-1", "gpu-2"): math.nan})
