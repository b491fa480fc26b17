"""controller/cluster/islands.py with stand-in agents: commands reach each leader through its
machine's agent, times cross machines on the driver's clock, and a machine lost stops the
runner's wait naming the machine and the islands it held."""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from controller.cluster.clocks import ClockOffset
from controller.cluster.islands import RemoteIslands
from controller.runner.exceptions import ExperimentError
from tests.unit.cluster.fakes import StandIn, StandInCluster
from topo.loader import default_wan
from workers.protocol import Command, Done, Event, Go, Ready, Reset

A, B, C = "10.250.0.1", "10.250.0.2", "10.250.0.3"
NODE_OF = (A, A, A, B, B, B, C, C, C)
AHEAD = {A: 0.0, B: 2.5, C: -1.25}  # each machine's clock against the driver's


@dataclass
class Leaders(StandIn):
    """A machine's agent running its islands: what it was sent, and events to hand out."""

    sent: list[tuple[int, Command]] = field(default_factory=list)
    said: queue.Queue[tuple[int, Event]] = field(default_factory=queue.Queue)

    def on_islands_send(self, city: int, command: Command) -> None:
        self.sent.append((city, command))

    def on_islands_logs(self) -> dict[str, str]:
        return {f"h{u}": f"log of {u} on {self.address}\n" for u in range(3)}

    def on_islands_events(self, wait_s: float) -> list[tuple[int, Event]]:
        try:
            return [self.said.get(timeout=min(wait_s, 0.05))]
        except queue.Empty:
            return []


def offsets() -> dict[str, ClockOffset]:
    return {m: ClockOffset(AHEAD[m], 1e-4, 10, 2e-4, 3e-4) for m in (A, B, C)}


@pytest.fixture
def islands(tmp_path: Path) -> RemoteIslands:
    config = tmp_path / "island-config.json"
    config.write_text("{}")
    cluster = StandInCluster({m: Leaders(m) for m in (A, B, C)})
    made = RemoteIslands(cluster, NODE_OF, default_wan().names, offsets(), config)
    made.start()
    yield made
    made.stop(grace_s=0.0)


def agent(islands: RemoteIslands, machine: str) -> Leaders:
    found: Leaders = islands.cluster.agent(machine)
    return found


def test_each_machine_starts_its_islands_with_the_configuration(islands: RemoteIslands) -> None:
    for machine in (A, B, C):
        assert ("islands_start", ("{}",)) in agent(islands, machine).calls


def test_a_command_reaches_its_leader_s_machine_and_a_start_time_its_clock(
    islands: RemoteIslands,
) -> None:
    islands.broadcast(Reset())
    assert [u for u, _ in agent(islands, B).sent] == [3, 4, 5]
    islands.leaders[4].send(Go(0, 1, 0, (3, 4), start_at=1000.0))
    city, go = agent(islands, B).sent[-1]
    assert city == 4 and isinstance(go, Go) and go.start_at == 1000.0 + AHEAD[B]


def test_events_come_back_each_to_its_leader_a_finish_on_the_driver_s_clock(
    islands: RemoteIslands,
) -> None:
    for u, machine in enumerate(NODE_OF):
        agent(islands, machine).said.put((u, Ready(u, 10)))
    ready = islands.expect(Ready, time.time() + 30.0, "start-up")
    assert sorted(ready) == list(range(9))
    for u, machine in enumerate(NODE_OF):
        done_at = 2000.0 + AHEAD[machine]  # the same moment, on each machine's clock
        agent(islands, machine).said.put((u, Done(u, 0, 0.5, done_at, 0.1, 0.9)))
    done = islands.expect(Done, time.time() + 30.0, "round 0")
    assert {e.done_at for e in done.values() if isinstance(e, Done)} == {2000.0}


def test_a_machine_lost_stops_the_wait_naming_it_and_its_islands(islands: RemoteIslands) -> None:
    agent(islands, C).lost = True
    with pytest.raises(
        ExperimentError,
        match=rf"machine {C} lost during round 3, with island\(s\) New York, Chicago, Los "
        "Angeles: asking for its leaders' events: node 10.250.0.3: its agent is gone",
    ):
        islands.expect(Done, time.time() + 30.0, "round 3")


def test_a_machine_lost_before_its_islands_start_is_named_with_them(tmp_path: Path) -> None:
    config = tmp_path / "island-config.json"
    config.write_text("{}")
    cluster = StandInCluster({m: Leaders(m, lost=m == B) for m in (A, B, C)})
    islands = RemoteIslands(cluster, NODE_OF, default_wan().names, offsets(), config)
    with pytest.raises(ExperimentError, match=rf"machine {B} lost during the island processes' "):
        islands.start()


def test_stopped_islands_bring_their_logs_back_but_a_lost_machine_s(tmp_path: Path) -> None:
    config, logs = tmp_path / "island-config.json", tmp_path / "logs"
    config.write_text("{}")
    cluster = StandInCluster({m: Leaders(m) for m in (A, B, C)})
    islands = RemoteIslands(cluster, NODE_OF, default_wan().names, offsets(), config, logs)
    islands.start()
    agent(islands, C).lost = True
    with pytest.raises(ExperimentError, match=rf"machine {C} lost"):
        islands.expect(Done, time.time() + 30.0, "round 0")
    islands.stop(grace_s=0.0)
    # each machine's three hosts (named alike here): appended, machine after machine
    assert (logs / "h0.log").read_text() == f"log of 0 on {A}\nlog of 0 on {B}\n"
