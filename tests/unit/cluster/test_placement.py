"""Which node each island runs on: a placement given, a placement chosen, machines per scale."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cluster.placement import (
    IslandLoad,
    Node,
    Placement,
    PlacementDoesNotFit,
    PlacementError,
    choose_placement,
    island_loads,
    machines_needed,
    placement_from,
)
from controller.runner.calibration import (
    DOES_NOT_FIT,
    FITS,
    OVER_MARGIN,
    TIGHT,
    TIGHT_SHARE,
    Machine,
)
from controller.runner.emulation import Emulation, resolve
from controller.runner.need import plan_need
from controller.runner.scenario import parse_scenario
from tests.unit.fuzz_profile import fuzz_settings
from topo.loader import default_wan
from topo.wan import City, Wan, WanLink

REPO = Path(__file__).resolve().parents[3]


def wan(links: Sequence[tuple[str, str, float]], name: str = "test") -> Wan:
    """A WAN of the cities the links name (code: the name in capitals), delays in ms."""
    names = dict.fromkeys(city for a, b, _ in links for city in (a, b))
    cities = tuple(City(n, n.upper(), "X", 0.0, 0.0) for n in names)
    return Wan(name, cities, tuple(WanLink(a, b, ms / 1e3, 10e9, "test") for a, b, ms in links))


def even(model: Wan, switch_fps: float = 1_000.0, leader_fps: float = 0.0) -> list[IslandLoad]:
    return [IslandLoad(i, n, switch_fps, leader_fps) for i, n in enumerate(model.names)]


def nodes(*cores: int, fps: float = 2_000.0) -> list[Node]:
    """Nodes n1, n2, ... with these cores, one core taking two 1,000 frames/s islands."""
    return [Node(f"n{i + 1}", c, fps) for i, c in enumerate(cores)]


# Two triangles, a (fast inside) and b, joined by one slow link a1-b1.
TRIANGLES = [
    ("a1", "a2", 5),
    ("a2", "a3", 6),
    ("a1", "a3", 7),
    ("b1", "b2", 5),
    ("b2", "b3", 6),
    ("b1", "b3", 7),
    ("a1", "b1", 150),
]
# Four cities in a ring: any two-and-two split cuts two links; the slow pair is the one to cut.
RING = [
    ("tokyo", "osaka", 5),
    ("paris", "lyon", 4),
    ("tokyo", "paris", 110),
    ("osaka", "lyon", 120),
]


def links_of(placement: Placement) -> set[tuple[str, str]]:
    return {(link.a, link.b) for link in placement.crossing}


# --- a placement given ----------------------------------------------------------------------------


def test_a_placement_given_takes_names_and_codes_and_finds_the_crossing_links() -> None:
    model = wan(RING)
    placement = placement_from(
        {"tokyo": "n1", "OSAKA": "n1", "paris": "n2", "LYON": "n2"}, model, nodes(1, 1)
    )
    assert placement.nodes == ("n1", "n1", "n2", "n2")
    assert links_of(placement) == {("tokyo", "paris"), ("osaka", "lyon")}
    assert placement.islands_on("n2") == (2, 3)
    assert placement.as_mapping() == {"tokyo": "n1", "osaka": "n1", "paris": "n2", "lyon": "n2"}


@pytest.mark.parametrize(
    ("mapping", "words"),
    [
        (
            {"tokyo": "n1", "osaka": "n1", "paris": "n2", "lyon": "n2", "kyoto": "n1"},
            ["no city 'kyoto'", "known: tokyo (TOKYO)"],
        ),
        (
            {"tokyo": "n1", "TOKYO": "n2", "osaka": "n1", "paris": "n2", "lyon": "n2"},
            ["tokyo is placed twice", "'tokyo' and 'TOKYO'", "give each island once"],
        ),
        ({"tokyo": "n1", "osaka": "n1", "paris": "n2"}, ["lyon is not placed", "every island"]),
        (
            {"tokyo": "n1", "osaka": "n1", "paris": "n2", "lyon": "n3"},
            ["lyon is placed on node 'n3'", "fewer nodes than the placement names", "n1, n2"],
        ),
    ],
    ids=["unknown city", "placed twice", "not placed", "unknown node"],
)
def test_a_bad_placement_is_refused_naming_what_is_wrong(
    mapping: dict[str, str], words: list[str]
) -> None:
    with pytest.raises(PlacementError) as caught:
        placement_from(mapping, wan(RING), nodes(1, 1))
    assert all(w in str(caught.value) for w in words), str(caught.value)
    assert caught.value.exit_status == 2  # bad input


def test_several_islands_not_placed_are_all_named() -> None:
    with pytest.raises(PlacementError, match="osaka, lyon are not placed"):
        placement_from({"tokyo": "n1", "paris": "n2"}, wan(RING), nodes(1, 1))


def test_a_cluster_needs_nodes_each_named_once() -> None:
    with pytest.raises(PlacementError, match="no nodes"):
        placement_from({}, wan(RING), [])
    with pytest.raises(PlacementError, match="two nodes are called 'n1'"):
        choose_placement(wan(RING), even(wan(RING)), [Node("n1", 1, 1e3), Node("n1", 2, 1e3)])


def test_a_node_needs_a_core_and_a_rate() -> None:
    with pytest.raises(PlacementError, match="node 'n1': needs at least one core"):
        Node("n1", 0, 1e4)
    with pytest.raises(PlacementError, match="positive frame rates"):
        Node("n1", 2, 0.0)


def test_a_placement_given_is_judged_for_its_load_not_refused() -> None:
    model = wan(RING)
    everything = dict.fromkeys(model.names, "n1")
    crowded = placement_from(everything, model, nodes(1, 1), even(model))
    assert crowded.loads[0].cores_needed == pytest.approx(2.0)  # four islands of half a core
    assert crowded.verdict == DOES_NOT_FIT and crowded.crossing == ()
    assert crowded.loads[1].islands == () and crowded.loads[1].verdict == FITS
    spread = placement_from(
        dict(zip(model.names, ("n1", "n2", "n1", "n2"), strict=True)), model, nodes(1, 1)
    )
    assert spread.verdict == FITS  # without loads, none


# --- a placement chosen ---------------------------------------------------------------------------


def test_two_triangles_on_two_nodes_are_cut_at_the_link_between_them() -> None:
    model = wan(TRIANGLES)
    placement = choose_placement(model, even(model), nodes(1, 1, fps=3_000))  # 3 a node
    assert links_of(placement) == {("a1", "b1")}
    assert {placement.islands_on("n1"), placement.islands_on("n2")} == {(0, 1, 2), (3, 4, 5)}
    assert placement.optimal


def test_fewer_links_cross_before_slower_ones() -> None:
    """The triangles joined by a fast link, their own links slow: the fast one is cut alone."""
    fast_join = [(a, b, 1 if a == "a1" and b == "b1" else 50) for a, b, _ in TRIANGLES]
    model = wan(fast_join)
    placement = choose_placement(model, even(model), nodes(1, 1, fps=3_000))
    assert links_of(placement) == {("a1", "b1")}


@pytest.mark.parametrize("turned", [False, True], ids=["as given", "delays turned"])
def test_among_as_many_crossing_links_the_slowest_are_cut(turned: bool) -> None:
    """The ring split either way cuts two links: those of 110 and 120 ms, wherever they are."""
    delays = [110, 120, 5, 4] if turned else [5, 4, 110, 120]
    model = wan([(a, b, ms) for (a, b, _), ms in zip(RING, delays, strict=True)])
    placement = choose_placement(model, even(model), nodes(1, 1))  # two a node
    assert sorted(link.delay_s for link in placement.crossing) == [0.110, 0.120]


def test_islands_that_fit_on_one_node_cross_nothing() -> None:
    model = wan(TRIANGLES)
    placement = choose_placement(model, even(model), nodes(1, 4))
    assert placement.crossing == () and placement.islands_on("n2") == tuple(range(6))


def test_each_node_gets_no_more_than_its_cores_allow() -> None:
    """One node of one core takes two islands, one of two cores four: six islands, no more."""
    model = wan(TRIANGLES)
    placement = choose_placement(model, even(model), nodes(1, 2), margin=1.0)
    assert len(placement.islands_on("n1")) == 2 and len(placement.islands_on("n2")) == 4
    assert placement.within(1.0)
    assert len(placement.crossing) == 2  # a triangle's corner on n1 is its cheapest split


def test_a_switch_is_one_process_and_never_gets_more_than_a_core() -> None:
    model = wan(RING)
    loads = even(model, switch_fps=2_500)  # more than one 2,000 frames/s core
    with pytest.raises(PlacementDoesNotFit, match=r"tokyo alone needs 1\.25 cores"):
        choose_placement(model, loads, nodes(8, 8))


def test_islands_that_do_not_fit_are_refused_with_need_and_room() -> None:
    model = default_wan()
    with pytest.raises(PlacementDoesNotFit) as caught:
        choose_placement(model, even(model), nodes(1, 1), margin=1.0)  # 4 of 9 islands fit
    message = str(caught.value)
    assert "they need 4.50 cores in all, the 2 nodes give 2.00" in message, message
    assert "add nodes or raise the scenario's scale" in message
    assert caught.value.exit_status == 1


def test_the_node_with_room_for_all_takes_all_and_idle_nodes_are_listed() -> None:
    model = wan(TRIANGLES)
    placement = choose_placement(model, even(model), nodes(2, 4, 2))
    assert placement.islands_on("n2") == tuple(range(6))
    assert {load.node.name for load in placement.loads} == {"n1", "n2", "n3"}  # idle too


def test_the_choice_is_the_same_for_the_same_input() -> None:
    model = default_wan()
    choices = {choose_placement(model, even(model), nodes(2, 2, 2, 2)) for _ in range(3)}
    assert len(choices) == 1


def test_nine_cities_on_four_nodes_are_placed_exactly() -> None:
    model = default_wan()
    placement = choose_placement(model, even(model), nodes(1, 1, 2, 2))
    assert placement.optimal and placement.within(OVER_MARGIN)
    assert sorted(i for n in ("n1", "n2", "n3", "n4") for i in placement.islands_on(n)) == list(
        range(9)
    )


def test_beyond_the_search_a_placement_found_still_fits() -> None:
    model = default_wan()
    placement = choose_placement(model, even(model), nodes(1, 1, 2, 2), search_steps=0)
    assert not placement.optimal and placement.within(OVER_MARGIN)
    assert len(placement.crossing) >= len(
        choose_placement(model, even(model), nodes(1, 1, 2, 2)).crossing
    )


# --- the property: every island once, every node within room, the fewest crossings ----------------


@st.composite
def problems(draw: st.DrawFn) -> tuple[Wan, list[IslandLoad], list[Node], float]:
    """A connected WAN of 2 to 6 cities (a tree plus some links, delays from a few values, so
    that ties happen), loads of a tenth to half a core and 1 to 3 nodes of 1 or 2 cores: mostly
    more than one node holds, often less than all of them."""
    n = draw(st.integers(2, 6))
    names = [f"c{i}" for i in range(n)]
    pairs = {(draw(st.integers(0, v - 1)), v) for v in range(1, n)}
    pairs |= set(draw(st.lists(st.sampled_from(list(itertools.combinations(range(n), 2))))))
    links = [(names[u], names[v], draw(st.sampled_from([20.0, 5.0, 80.0, 1.0]))) for u, v in pairs]
    model = wan(sorted(links))
    loads = [
        IslandLoad(
            i,
            name,
            draw(st.sampled_from([600.0, 300.0, 900.0, 1_500.0])),
            draw(st.sampled_from([0.0, 1_000.0, 3_000.0])),
        )
        for i, name in enumerate(model.names)
    ]
    cluster = [
        Node(
            f"n{j}",
            draw(st.integers(1, 2)),
            draw(st.sampled_from([2_000.0, 3_000.0])),
            draw(st.sampled_from([6_000.0, 3_000.0])),
            draw(st.sampled_from([1.0, 0.9])),
        )
        for j in range(draw(st.sampled_from([2, 3, 1])))
    ]
    return model, loads, cluster, draw(st.sampled_from([1.0, TIGHT_SHARE, OVER_MARGIN]))


def fits(
    assign: Sequence[int], loads: Sequence[IslandLoad], cluster: Sequence[Node], m: float
) -> bool:
    """The room rule, written out: each node's cores within m of its free cores, each switch
    within m of a core (and one core)."""
    for j, node in enumerate(cluster):
        mine = [load for load, k in zip(loads, assign, strict=True) if k == j]
        if sum(node.cores_for(load) for load in mine) > m * node.free_cores * (1 + 1e-9):
            return False
        if any(load.switch_fps > min(1.0, m) * node.core_fps * (1 + 1e-9) for load in mine):
            return False
    return True


def crossing_key(model: Wan, placed: Sequence[object]) -> tuple[int, tuple[float, ...]]:
    """How many links cross, and their delays shortest first (to be as long as can be)."""
    delays = sorted(
        link.delay_s
        for link in model.links
        if placed[model.index(link.a)] != placed[model.index(link.b)]
    )
    return len(delays), tuple(-d for d in delays)


@fuzz_settings(150, slow=False)
@given(problems())
def test_a_chosen_placement_places_each_island_once_within_room_and_crosses_least(
    problem: tuple[Wan, list[IslandLoad], list[Node], float],
) -> None:
    model, loads, cluster, margin = problem
    every = list(itertools.product(range(len(cluster)), repeat=model.n))
    fitting = [a for a in every if fits(a, loads, cluster, margin)]
    try:
        placement = choose_placement(model, loads, cluster, margin)
    except PlacementDoesNotFit:
        assert fitting == []
        return
    assert fitting, "placed where nothing fits"
    names = [node.name for node in cluster]
    assert len(placement.nodes) == model.n and set(placement.nodes) <= set(names)
    on = sorted(i for node in names for i in placement.islands_on(node))
    assert on == list(range(model.n))  # every island exactly once
    assert fits([names.index(n) for n in placement.nodes], loads, cluster, margin)
    assert placement.within(margin)
    assert placement.optimal
    best = min(crossing_key(model, a) for a in fitting)
    assert crossing_key(model, placement.nodes) == best


# --- machines per scale ---------------------------------------------------------------------------


def test_machines_needed_falls_as_the_scale_rises() -> None:
    model = default_wan()
    loads = [load.at_scale(1) for load in even(model, 6_000, 1_800)]  # at scale 1: x 1
    node = Node("m", 2, 14_000, 15_000)
    scales = [0.5, 1, 1.5, 2, 3, 5, 10]
    rows = machines_needed(model, loads, node, scales)
    counts = [row.machines if row.machines is not None else 10**9 for row in rows]
    assert counts == sorted(counts, reverse=True)
    assert rows[0].machines is None and rows[0].placement is None
    assert "Tokyo alone needs" in rows[0].why and "no number of machines" in rows[0].summary
    assert rows[-1].machines == 1 and rows[-1].crossing == ()
    assert 1 < rows[2].machines < 9  # type: ignore[operator]


def test_machines_needed_is_the_fewest_that_fit() -> None:
    model = default_wan()
    node = Node("m", 2, 10_000)
    for row in machines_needed(model, even(model, 3_000), node, [1, 2, 4]):
        assert row.machines is not None and row.placement is not None
        assert row.placement.within(TIGHT_SHARE)
        assert len(row.placement.loads) == row.machines
        if row.machines > 1:
            fewer = [Node(f"m-{i}", 2, 10_000) for i in range(row.machines - 1)]
            scaled = [load.at_scale(row.scale) for load in even(model, 3_000)]
            with pytest.raises(PlacementDoesNotFit):
                choose_placement(model, scaled, fewer, TIGHT_SHARE)


# --- the loads ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nine_cities() -> Emulation:
    text = (REPO / "scenarios" / "nine-cities.yaml").read_text()
    return resolve(parse_scenario(text.replace("memory: [25.6MB, 1.6GB]", "memory: [1.6GB]")))


def test_island_loads_agree_with_the_machine_check(nine_cities: Emulation) -> None:
    loads = island_loads(nine_cities)
    need = plan_need(nine_cities)
    assert [load.name for load in loads] == list(nine_cities.scenario.wan.names)
    assert max(load.switch_fps for load in loads) == pytest.approx(need.switch_fps)
    assert max(load.leader_fps for load in loads) == pytest.approx(need.leader_peak_fps)
    assert all(load.scale == nine_cities.scenario.scale for load in loads)
    full = loads[0].at_scale(1)
    assert full.switch_fps == pytest.approx(loads[0].switch_fps * nine_cities.scenario.scale)


def test_a_node_as_the_machine_check_measured_it() -> None:
    machine = Machine(1e-4, 3e-4, 2e-3, 0.9, 14_200, 4, leader_frames_per_cpu_s=15_000)
    node = Node.measured("gpu1", machine)
    assert node.free_cores == pytest.approx(machine.free_cores)
    assert node.core_fps == pytest.approx(machine.core_fps)
    load = IslandLoad(0, "Tokyo", 7_100, 15_000)
    assert node.cores_for(load) == pytest.approx(0.5 + 0.6)  # LEADER_UNDER_LOAD of a core


def test_a_node_load_is_judged_as_the_machine_check_judges() -> None:
    model = wan(RING)
    loads = even(model, 400)  # 0.2 of a 2,000 frames/s core each
    one = nodes(1)
    assert choose_placement(model, loads, one).verdict == TIGHT  # 0.8 of the core
    assert choose_placement(model, even(model, 200), one).verdict == FITS
