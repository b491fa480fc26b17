"""How long a leader waits for a chunk's sum before it resends: the latency it measures.

`Latency` is RFC 6298's estimator (smoothed latency and its deviation) over the time from a
chunk's first copy to its sum, with the back-off that stands in for a measurement while no sum
comes in (RFC 6298, 5.5). `workers.stream` says how its chunks use it ("The timeout follows the
network"): a chunk's first timeout is the largest of the floor, twice the smoothed latency and
that latency plus four deviations, backed off while nothing is measured, and never beyond a
ceiling: a network that once answered in seconds must not postpone recovery past the deadline.

    >>> lat = Latency(floor=0.2, ceiling=5.0, backoff=2.0, now=0.0, measures=True)
    >>> lat.timeout()  # nothing measured: the floor
    0.2
    >>> lat.sample(0.3); lat.timeout()  # 0.3 s, deviation 0.15: 0.3 + 4 x 0.15
    0.8999999999999999
    >>> lat.sample(30.0); lat.timeout()  # sums 30 s late: the ceiling
    5.0
"""

from __future__ import annotations


class Latency:
    """Smoothed latency from a chunk's first copy to its sum, and its deviation (RFC 6298), with
    the back-off that stands in for a measurement while no sum comes in."""

    def __init__(
        self, floor: float, ceiling: float, backoff: float, now: float, measures: bool
    ) -> None:
        self.floor, self.ceiling, self.factor = floor, ceiling, backoff
        self.measures = measures  # False: the floor always (an unpaced stream)
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.backoff = 1.0
        self.last_sum = now

    def summed(self, now: float) -> None:
        """A sum came in (of any chunk): the network answers, the back-off grows no more."""
        self.last_sum = max(self.last_sum, now)

    def sample(self, seconds: float) -> None:
        """A chunk's latency: measured again, so the back-off ends."""
        if not self.measures:
            return
        self.backoff = 1.0
        if self.srtt is None:
            self.srtt, self.rttvar = seconds, seconds / 2
            return
        self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - seconds)
        self.srtt = 0.875 * self.srtt + 0.125 * seconds

    def measured(self) -> float:
        """The floor, or what the measured latency asks for if that is longer, up to the
        ceiling (the floor if that is higher)."""
        if self.srtt is None:
            return self.floor
        asked = max(2 * self.srtt, self.srtt + 4 * self.rttvar)
        return max(self.floor, min(asked, self.ceiling))

    def timeout(self) -> float:
        """A chunk's first timeout: `measured`, backed off while no sum comes in."""
        return max(self.measured(), min(self.measured() * self.backoff, self.ceiling))

    def timed_out(self, now: float) -> None:
        """A first timeout fired: before anything is measured, if no sum came for a whole
        timeout, back off the others'."""
        if self.measures and self.srtt is None and now - self.last_sum >= self.measured():
            self.backoff *= self.factor
