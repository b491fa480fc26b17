"""What the cluster's clocks and the wire between its machines are, measured before a run, and
what the run does with them (pure).

Clocks. A `ClockSample` is one exchange between the head and a node: the head sends at t0 (its
clock), the node receives at t1 and replies at t2 (its clock), the head receives at t3. With the
node's clock `offset` ahead of the head's and the two legs taking d1, d2 >= 0,
t1 - t0 = offset + d1 and t2 - t3 = offset - d2: the exchange's estimate
((t1 - t0) + (t2 - t3)) / 2 is off by (d1 - d2) / 2, never more than half its round trip
d1 + d2 = (t3 - t0) - (t2 - t1), however unequal the legs. Queueing only lengthens a round trip,
so `estimate_offset` keeps the exchange with the shortest (NTP's minimum-delay filter) and
states the offset within ± half that round trip (the bound assumes the clocks do not step and
tick at one rate for the length of one exchange):

    >>> clock = estimate_offset(
    ...     [
    ...         ClockSample(t0=100.0, t1=100.252, t2=100.253, t3=100.005),  # 2 ms each way
    ...         ClockSample(t0=101.0, t1=101.262, t2=101.263, t3=101.015),  # queued on the way
    ...     ],
    ...     node="gpu-7",
    ... )
    >>> print(clock.summary)  # doctest: +NORMALIZE_WHITESPACE
    node clock ahead of the head by 250 ms ± 2.00 ms (2 exchanges, round trip min 4.00 ms,
    median 9.00 ms)
    >>> round(clock.to_head(100.252), 6)  # when the node received the first request, head time
    100.002

`judge_clocks` holds every node's uncertainty against the plan's smallest timing headroom
(`Need.headroom_s`): beyond it the run refuses to start (`ClockRefused`) or, in the `flag`
mode, runs with every round flagged; no planned headroom (inf) is never exceeded.

Wires. Round trips between two nodes give the physical one-way delay between them
(`path_delay`: half the shortest round trip, the same filter). A WAN link whose cities are on
different nodes is carried over that wire, so its emulator adds only the rest of the link's
delay (`crossing_delays`); a link shorter than the wire is refused (`WanDelayRefused`), naming
it; a link inside one node is emulated there as on one machine and is not listed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from controller.runner.exceptions import ExperimentError
from innet.exceptions import InputError
from innet.jsontypes import JSONObject
from innet.units import format_duration
from innet.vocabulary import Term
from topo.wan import WanLink


class MeasurementError(InputError, ValueError):
    """A measurement between the cluster's machines that cannot be right (none at all, a clock
    running backwards, a figure not finite), or one missing for a link that needs it."""


class ClockRefused(ExperimentError):
    """A node's clock is known too loosely for the plan's headroom; nothing was started."""


class WanDelayRefused(ExperimentError):
    """A WAN link crossing between nodes is shorter than the wire between them; nothing was
    started."""


class ClockMode(Term, what="clock mode"):
    """What a run does when a node's clock offset is known more loosely than the plan's
    headroom (as `innet run --calibration` does for the machine check's verdict)."""

    REFUSE = "refuse"  # the run does not start
    FLAG = "flag"  # the run goes on, and its rounds are flagged: their timing may be the clocks'


# --- clocks ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClockSample:
    """One exchange: the head sends at t0 and receives the reply at t3 (head clock); the node
    receives at t1 and replies at t2 (node clock). Seconds."""

    t0: float
    t1: float
    t2: float
    t3: float

    @property
    def round_trip_s(self) -> float:
        """The time on the wire both ways: the head's wait less the node's."""
        return (self.t3 - self.t0) - (self.t2 - self.t1)

    @property
    def offset_s(self) -> float:
        """This exchange's estimate of the node's clock minus the head's."""
        return ((self.t1 - self.t0) + (self.t2 - self.t3)) / 2


@dataclass(frozen=True, slots=True)
class ClockOffset:
    """A node's clock against the head's, from the exchange with the shortest round trip."""

    offset_s: float  # node clock minus head clock
    uncertainty_s: float  # the true offset is within offset_s ± this: half the kept round trip
    samples: int  # exchanges measured
    min_round_trip_s: float  # the kept exchange's
    median_round_trip_s: float  # how queued the path was

    def to_head(self, t_node: float) -> float:
        """A time on the node's clock, on the head's."""
        return t_node - self.offset_s

    def to_node(self, t_head: float) -> float:
        """A time on the head's clock, on the node's."""
        return t_head + self.offset_s

    @property
    def summary(self) -> str:
        """One line: the offset, its uncertainty and the round trips it was measured over."""
        side = "ahead of" if self.offset_s >= 0 else "behind"
        exchanges = f"{self.samples} exchange{'' if self.samples == 1 else 's'}"
        return (
            f"node clock {side} the head by {format_duration(abs(self.offset_s))} "
            f"± {format_duration(self.uncertainty_s)} ({exchanges}, round trip min "
            f"{format_duration(self.min_round_trip_s)}, median "
            f"{format_duration(self.median_round_trip_s)})"
        )

    def to_json(self) -> JSONObject:
        """The figures, plain numbers in seconds."""
        return {
            "offset_s": self.offset_s,
            "uncertainty_s": self.uncertainty_s,
            "samples": self.samples,
            "min_round_trip_s": self.min_round_trip_s,
            "median_round_trip_s": self.median_round_trip_s,
        }


def estimate_offset(samples: Sequence[ClockSample], *, node: str = "") -> ClockOffset:
    """The node's clock offset from the exchange with the shortest round trip, within ± half
    that round trip; MeasurementError naming `node` and the exchange for one that cannot be."""
    who = f"node {node!r}" if node else "the node"
    if not samples:
        raise MeasurementError(
            f"no clock exchange with {who}: measure at least one (several let the shortest "
            "round trip find a quiet moment)"
        )
    for i, sample in enumerate(samples):
        _check_sample(sample, f"clock exchange {i} with {who}")
    trips = [s.round_trip_s for s in samples]
    kept = min(range(len(samples)), key=trips.__getitem__)
    return ClockOffset(
        offset_s=samples[kept].offset_s,
        uncertainty_s=trips[kept] / 2,
        samples=len(samples),
        min_round_trip_s=trips[kept],
        median_round_trip_s=statistics.median(trips),
    )


def _check_sample(sample: ClockSample, where: str) -> None:
    for name in ("t0", "t1", "t2", "t3"):
        value = getattr(sample, name)
        if not math.isfinite(value):
            raise MeasurementError(
                f"{where}: {name} is {value!r}, not a finite time: measure again"
            )
    again = "measure again, with clocks that do not step during the run"
    if sample.t3 < sample.t0:
        raise MeasurementError(
            f"{where}: the head received the reply (t3 = {sample.t3!r}) before it sent the "
            f"request (t0 = {sample.t0!r}): its clock stepped back; {again}"
        )
    if sample.t2 < sample.t1:
        raise MeasurementError(
            f"{where}: the node replied (t2 = {sample.t2!r}) before it received the request "
            f"(t1 = {sample.t1!r}): its clock stepped back; {again}"
        )
    if sample.round_trip_s < 0:
        raise MeasurementError(
            f"{where}: the node held the request for {format_duration(sample.t2 - sample.t1)}, "
            f"longer than the head waited for the reply "
            f"({format_duration(sample.t3 - sample.t0)}): a clock stepped; {again}"
        )


@dataclass(frozen=True, slots=True)
class ClockVerdict:
    """The nodes' clock uncertainties against the plan's smallest headroom."""

    mode: ClockMode
    headroom_s: float  # the plan's smallest timing headroom (inf: none planned)
    loose: tuple[str, ...]  # nodes known more loosely than the headroom, loosest first
    reason: str  # why the rounds are flagged; "" when no node is loose

    @property
    def flag_rounds(self) -> bool:
        """True when every round of the run must be flagged for its clocks."""
        return bool(self.loose)

    def to_json(self) -> JSONObject:
        """The mode, the headroom (None: none planned), the loose nodes and the reason."""
        return {
            "mode": self.mode.value,
            "headroom_s": self.headroom_s if math.isfinite(self.headroom_s) else None,
            "loose_nodes": list(self.loose),
            "flag_rounds": self.flag_rounds,
            "reason": self.reason,
        }


def judge_clocks(
    offsets: Mapping[str, ClockOffset], headroom_s: float, mode: ClockMode | str
) -> ClockVerdict:
    """Each node's clock uncertainty against the plan's smallest timing headroom: ClockRefused
    in the `refuse` mode when one exceeds it; in the `flag` mode a verdict saying the rounds
    are flagged, and why. A headroom of inf (none planned) is never exceeded."""
    mode = ClockMode.parse(mode)
    if math.isnan(headroom_s) or headroom_s < 0:
        raise MeasurementError(f"a timing headroom of {headroom_s!r} s: give one >= 0 (inf: none)")
    loose = sorted(
        (node for node, clock in offsets.items() if clock.uncertainty_s > headroom_s),
        key=lambda node: -offsets[node].uncertainty_s,
    )
    if not loose:
        return ClockVerdict(mode, headroom_s, (), "")
    nodes = ", ".join(
        f"{node!r} (± {format_duration(offsets[node].uncertainty_s)})" for node in loose
    )
    what = (
        "the clock offset from the head is known more loosely than the plan's smallest timing "
        f"headroom of {format_duration(headroom_s)} on node{'s' if len(loose) > 1 else ''} "
        f"{nodes}"
    )
    if mode is ClockMode.REFUSE:
        raise ClockRefused(
            f"{what}; nothing was started: measure the offset over a quieter network or with "
            "more exchanges (half the shortest round trip bounds it)"
        )
    return ClockVerdict(
        mode, headroom_s, tuple(loose), f"{what}: the rounds' timing may be the clocks'"
    )


# --- the wire between machines -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PathDelay:
    """The physical delay between two nodes, from round trips measured between them."""

    nodes: tuple[str, str]
    one_way_s: float  # half the shortest round trip
    samples: int
    min_round_trip_s: float
    median_round_trip_s: float

    def to_json(self) -> JSONObject:
        """The figures, plain numbers in seconds."""
        return {
            "nodes": list(self.nodes),
            "one_way_s": self.one_way_s,
            "samples": self.samples,
            "min_round_trip_s": self.min_round_trip_s,
            "median_round_trip_s": self.median_round_trip_s,
        }


def path_delay(a: str, b: str, round_trips_s: Sequence[float]) -> PathDelay:
    """The one-way delay between nodes `a` and `b`: half the shortest round trip (queueing only
    lengthens one; the two ways are taken as equal). MeasurementError naming the nodes for no
    round trip, or one not a finite number of seconds >= 0."""
    where = f"round trips between nodes {a!r} and {b!r}"
    if not round_trips_s:
        raise MeasurementError(f"no {where}: measure at least one")
    for i, rtt in enumerate(round_trips_s):
        if not (math.isfinite(rtt) and rtt >= 0):
            raise MeasurementError(
                f"{where}: round trip {i} is {rtt!r}: give finite seconds >= 0, measure again"
            )
    shortest = min(round_trips_s)
    median = statistics.median(round_trips_s)
    return PathDelay((a, b), shortest / 2, len(round_trips_s), shortest, median)


@dataclass(frozen=True, slots=True)
class CrossingLink:
    """A WAN link whose cities are on different nodes: its delay, the wire's, and what its
    emulator adds."""

    a: str  # the link's cities
    b: str
    node_a: str  # the nodes they are on
    node_b: str
    target_s: float  # the link's one-way delay (WanLink.delay_s)
    physical_s: float  # the wire's between the two nodes
    emulated_s: float  # target - physical: what the link's emulator adds
    jitter_s: float  # the link's, emulated as on one machine

    def to_json(self) -> JSONObject:
        """The figures, plain numbers in seconds."""
        return {
            "a": self.a,
            "b": self.b,
            "node_a": self.node_a,
            "node_b": self.node_b,
            "target_s": self.target_s,
            "physical_s": self.physical_s,
            "emulated_s": self.emulated_s,
            "jitter_s": self.jitter_s,
        }


@dataclass(frozen=True, slots=True)
class CrossingDelays:
    """Every WAN link crossing between nodes, in the WAN's order."""

    links: tuple[CrossingLink, ...]

    def find(self, a: str, b: str) -> CrossingLink | None:
        """The crossing link between cities `a` and `b` (either order); None: not crossing."""
        return next((x for x in self.links if {x.a, x.b} == {a, b}), None)

    def to_json(self) -> JSONObject:
        """{"crossing_links": [...]}: each link's cities, nodes and delays."""
        return {"crossing_links": [link.to_json() for link in self.links]}


def crossing_delays(
    links: Iterable[WanLink], node_of: Mapping[str, str], physical: Mapping[tuple[str, str], float]
) -> CrossingDelays:
    """The delay each WAN link between cities on different nodes (`node_of`: city -> node)
    leaves its emulator once the wire between the nodes (`physical`: one-way seconds per pair
    of nodes, either order) has taken its share. WanDelayRefused naming every link shorter
    than its wire; MeasurementError for a city on no node or a pair never measured."""
    crossing: list[CrossingLink] = []
    short: list[str] = []
    for link in links:
        node_a, node_b = (_node(node_of, city, link) for city in (link.a, link.b))
        if node_a == node_b:
            continue
        wire = physical.get((node_a, node_b), physical.get((node_b, node_a)))
        if wire is None:
            raise MeasurementError(
                f"link {link.a}-{link.b} crosses from node {node_a!r} to {node_b!r}, whose "
                "delay was never measured: measure the round trips between them"
            )
        if not (math.isfinite(wire) and wire >= 0):
            raise MeasurementError(
                f"the delay between nodes {node_a!r} and {node_b!r} is {wire!r}: give finite "
                "seconds >= 0"
            )
        if link.delay_s < wire:
            short.append(
                f"link {link.a}-{link.b}: its delay {format_duration(link.delay_s)} is below "
                f"the {format_duration(wire)} the wire between nodes {node_a!r} and "
                f"{node_b!r} already takes"
            )
            continue
        crossing.append(
            CrossingLink(
                link.a,
                link.b,
                node_a,
                node_b,
                link.delay_s,
                wire,
                link.delay_s - wire,
                link.jitter_s,
            )
        )
    if short:
        raise WanDelayRefused(
            f"{'; '.join(short)}; nothing was started: place each such link's two cities on "
            "one node, or run on machines nearer each other"
        )
    return CrossingDelays(tuple(crossing))


def _node(node_of: Mapping[str, str], city: str, link: WanLink) -> str:
    node = node_of.get(city)
    if node is None:
        raise MeasurementError(
            f"link {link.a}-{link.b}: city {city!r} is on no node: place every city's island"
        )
    return node
