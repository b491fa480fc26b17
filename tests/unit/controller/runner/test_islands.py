"""`Islands.expect` on a simulated clock: who did not answer is named at the deadline, never
before it, and an answer that comes before it is taken. No real time passes: the islands'
sleep between polls advances the clock (tests/unit/clock.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest

from controller.runner.exceptions import ExperimentError
from controller.runner.islands import POLL_S, IslandProcess, Islands
from tests.unit.clock import FakeClock
from workers.protocol import Ready

START = 1_800_000_000.0  # Unix seconds
DEADLINE = START + 120.0
NAMES = ("Tokyo", "Singapore", "Sydney")


def islands_on(clock: FakeClock, sleep: Callable[[float], None]) -> Islands:
    """Three leaders that answer only what a test puts in their queues."""
    islands = Islands([], NAMES, Path("unused.json"), Path("unused-logs"), clock=clock, sleep=sleep)
    never_started = cast(subprocess.Popen[str], None)  # only read when a leader exits
    islands.leaders = [IslandProcess(u, NAMES[u], 1, never_started) for u in range(len(NAMES))]
    return islands


def test_an_island_that_never_answers_is_named_at_the_deadline() -> None:
    clock = FakeClock(START)
    polled_at: list[float] = []

    def sleep(seconds: float) -> None:
        assert clock.now < DEADLINE + 1.0, "still waiting a second after the deadline"
        polled_at.append(clock.now)
        clock.advance(seconds)

    islands = islands_on(clock, sleep)
    islands.leaders[0].events.put(Ready(0, 10))
    islands.leaders[2].events.put(Ready(2, 10))
    with pytest.raises(ExperimentError) as err:
        islands.expect(Ready, DEADLINE, "start-up")
    assert str(err.value) == "start-up: no answer from island(s) Singapore by the deadline"
    assert max(polled_at) <= DEADLINE  # it waited while the deadline had not passed ...
    assert DEADLINE < clock.now <= DEADLINE + POLL_S  # ... and named it at the first poll after


def test_an_answer_just_before_the_deadline_is_taken() -> None:
    clock = FakeClock(START)
    islands = islands_on(clock, clock.advance)

    def sleep(seconds: float) -> None:
        assert clock.now < DEADLINE + 1.0, "still waiting a second after the deadline"
        clock.advance(seconds)
        if DEADLINE - POLL_S < clock.now <= DEADLINE:  # Singapore answers at the last poll
            islands.leaders[1].events.put(Ready(1, 10))

    islands.sleep = sleep
    for u in (0, 2):
        islands.leaders[u].events.put(Ready(u, 10))
    got = islands.expect(Ready, DEADLINE, "start-up")
    assert sorted(got) == [0, 1, 2]
    assert clock.now <= DEADLINE
