"""`FakeClock`: the simulated clock of every test that drives time-driven code by hand.

Code that shapes, paces or times out takes its clock as a parameter (a function returning
seconds); a test passes a `FakeClock` and moves it with `advance` or by setting `now`, so that
it asserts exact due times, drops and orderings, never a duration measured on the real clock.
"""

from __future__ import annotations


class FakeClock:
    """Seconds that pass only when told to (reading and moving it from two threads is safe)."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
