"""A training script under `innet run` (controller/runner/script.py), without the network: the
scenario's `training: {script: ...}`, the runner's end of the ranks' channel (real Unix sockets,
a stand-in testbed that records what it was asked to install, a simulated clock), and how a
play ends when a rank fails, never asks, or the run is stopped (real processes).

The whole path through switches is tests/netns/test_script.py's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.planner.schedule import Round
from controller.runner.emulation import Emulation, resolve
from controller.runner.exceptions import ScenarioError
from controller.runner.scenario import parse_scenario
from controller.runner.script import (
    CollectiveRecord,
    Coordinator,
    Pricing,
    ScriptRun,
    _Rank,
    format_rows,
    summary_csv,
)
from controller.runner.training_spec import MetricTarget
from innet.vocabulary import Collective
from tests.unit.clock import FakeClock
from tests.wans import TRIANGLE
from workers.control import Denied, Finished, Grant, Hello, Observed, Want, decode, encode

WAN = TRIANGLE


def scenario_text(training: str, networks: str = "[plain, multicast, inna]") -> str:
    return (
        "name: script\ntopology: three.yaml\nhosts: 1\nscale: 1000\nlanes: 256\n"
        f"memory: [1.6GB]\nschedules: [all-to-all]\nnetworks: {networks}\n{training}"
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "three.yaml").write_text(WAN)
    (tmp_path / "train.py").write_text("print('a script')\n")
    return tmp_path


@pytest.fixture
def em(folder: Path) -> Emulation:
    text = scenario_text("training:\n  script: train.py\n  args: [--rounds, 3]\n")
    return resolve(parse_scenario(text, folder / "s.yaml"))


# --- the scenario ---------------------------------------------------------------------------


def test_a_script_is_found_beside_the_scenario_with_its_arguments_as_texts(
    folder: Path, em: Emulation
) -> None:
    script = em.scenario.script
    assert script is not None
    assert script.path == (folder / "train.py").resolve()
    assert script.args == ("--rounds", "3") and script.timeout_s == 1800.0
    assert script.target is None
    again = parse_scenario(json.dumps(em.scenario.to_dict()), folder / "again.yaml")
    assert again.script == script  # the results' scenario.yaml runs the same script


BAD = [
    ("missing", "training:\n  script: nope.py\n", "training.script", ["nope.py: no such file"]),
    (
        "with-model-keys",
        "training:\n  script: train.py\n  rounds: 3\n",
        "training.rounds",
        ["unknown key", "script, args, timeout"],
    ),
    (
        "args-not-a-list",
        "training:\n  script: train.py\n  args: --rounds 3\n",
        "training.args",
        ["must be a list"],
    ),
    (
        "arg-a-mapping",
        "training:\n  script: train.py\n  args: [{a: 1}]\n",
        "training.args[0]",
        ["a text or a number"],
    ),
    (
        "target-both-sides",
        "training:\n  script: train.py\n  target: {metric: loss, below: 1, above: 2}\n",
        "training.target",
        ["one of the two"],
    ),
    (
        "target-no-metric",
        "training:\n  script: train.py\n  target: {below: 1}\n",
        "training.target.metric",
        ["name the metric"],
    ),
    (
        "timeout-zero",
        "training:\n  script: train.py\n  timeout: 0s\n",
        "training.timeout",
        ["positive"],
    ),
]


@pytest.mark.parametrize(("name", "training", "key", "words"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_script_section_is_refused_at_its_line(
    folder: Path, name: str, training: str, key: str, words: list[str]
) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(scenario_text(training), folder / "s.yaml")
    text = str(caught.value)
    assert f"s.yaml:{9 + training.count(chr(10)) - 1}" in text or "s.yaml:" in text
    assert key in text
    for word in words:
        assert word in text


def test_an_emulated_compute_is_refused_beside_a_script(folder: Path) -> None:
    text = scenario_text("training:\n  script: train.py\ncompute:\n  step_time: 1s\n")
    with pytest.raises(ScenarioError, match=r"s.yaml:12: compute: a training script's compute"):
        parse_scenario(text, folder / "s.yaml")


def test_gloo_plays_the_script_over_torchs_own_collectives(folder: Path) -> None:
    text = scenario_text("training:\n  script: train.py\n", networks="[plain, gloo]")
    sc = parse_scenario(text, folder / "s.yaml")
    assert [str(n) for n in sc.networks] == ["plain", "gloo"] and sc.script is not None


# --- the channel ------------------------------------------------------------------------------


class InstallingTestbed:
    """What the coordinator asks of a testbed: rounds of one group installed and retired."""

    def __init__(self) -> None:
        self.installed: dict[int, tuple[int, ...]] = {}
        self.retired: list[int] = []
        self.next = 0

    def install_group(self, members: tuple[int, ...]) -> tuple[int, int]:
        number, self.next = self.next, self.next + 1
        self.installed[number] = members
        alone = [[u] for u in range(3) if u not in members]
        return number, Round.of([members, *alone]).groups.index(tuple(sorted(members)))

    def retire(self, number: int) -> None:
        del self.installed[number]
        self.retired.append(number)


class Rank:
    """One rank's end of the channel, by hand (the backend's client blocks on its grant)."""

    def __init__(self, path: str, rank: int) -> None:
        self.rank = rank
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.file = self.sock.makefile("r")
        self.say(Hello(rank))

    def say(self, message: Want | Finished | Hello | Observed) -> None:
        self.sock.sendall((encode(message) + "\n").encode())

    def want(self, seq: int, members: tuple[int, ...] = (0, 1, 2), values: int = 4096) -> None:
        self.say(Want(self.rank, seq, "all_reduce", members, values))

    def answer(self) -> Grant | Denied:
        self.sock.settimeout(5.0)
        message = decode(self.file.readline())
        assert isinstance(message, Grant | Denied)
        return message

    def nothing_waiting(self) -> bool:
        self.sock.setblocking(False)
        try:
            return not self.sock.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            return True
        finally:
            self.sock.setblocking(True)


class Channel:
    def __init__(self, em: Emulation, play: int, clock: FakeClock, connect: bool = True) -> None:
        self.folder = tempfile.mkdtemp(prefix="innet-test-")
        path = os.path.join(self.folder, "c.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(8)
        point = em.points[0]
        self.testbed = InstallingTestbed()
        self.records: list[CollectiveRecord] = []
        self.pricing = Pricing(em, point, point.plays[play])
        self.coordinator = Coordinator(
            server, self.testbed, self.pricing, self.records.append, clock=clock
        )
        self.ranks = [Rank(path, r) for r in range(3)] if connect else []
        self.serve()

    def serve(self, times: int = 5) -> None:
        for _ in range(times):
            self.coordinator.step(0.02)

    def close(self) -> None:
        for r in self.ranks:
            r.sock.close()
        self.coordinator.close()
        self.coordinator.server.close()
        os.unlink(os.path.join(self.folder, "c.sock"))
        os.rmdir(self.folder)


@pytest.fixture
def plain(em: Emulation) -> Iterator[tuple[Channel, FakeClock]]:
    clock = FakeClock(1000.0)
    channel = Channel(em, 0, clock)
    yield channel, clock
    channel.close()


def test_a_sum_is_granted_once_every_member_asked_and_recorded_beside_its_price(
    plain: tuple[Channel, FakeClock],
) -> None:
    channel, _ = plain
    a, b, c = channel.ranks
    a.want(1)
    b.want(1)
    channel.serve()
    assert channel.testbed.installed == {} and a.nothing_waiting()  # Cc has not asked
    c.want(1)
    channel.serve()
    grants = [r.answer() for r in channel.ranks]
    assert all(isinstance(g, Grant) for g in grants)
    number = {g.number for g in grants if isinstance(g, Grant)}
    assert number == {0} and channel.testbed.installed == {0: (0, 1, 2)}
    grant = grants[0]
    assert isinstance(grant, Grant)
    cost = channel.pricing.cost((0, 1, 2), 4096)
    assert grant.collective == str(cost.collective) in (Collective.RING, Collective.DIRECT)
    assert grant.start_at == pytest.approx(1000.25) and grant.policy.rate_bps
    for r, at in zip(channel.ranks, (1000.30, 1000.40, 1000.35), strict=True):
        r.say(Finished(r.rank, 1, at - grant.start_at, at, 2, 0.0))
    channel.serve()
    (rec,) = channel.records
    assert rec.members == ("Aa", "Bb", "Cc") and rec.values == 4096 and rec.bytes == 16384
    assert rec.time_s == pytest.approx(0.15) and rec.predicted_s == cost.time_s
    assert rec.retransmissions == 6 and rec.status == "ok" and rec.number == 0


def test_the_price_is_the_groups_alone_at_full_scale(em: Emulation) -> None:
    """4096 int32 values at scale 1000 are 16.4 MB at full scale; a pair prices as a pair."""
    point = em.points[0]
    pricing = Pricing(em, point, point.plays[2])  # inna
    pair, three = pricing.cost((0, 1), 4096), pricing.cost((0, 1, 2), 4096)
    assert pair.collective == three.collective == Collective.INNA
    assert tuple(pair.members) == (0, 1) and pair.time_s < three.time_s
    big = pricing.cost((0, 1, 2), 40960)
    assert big.time_s > three.time_s
    policies = pricing.policies(three, 4096)
    assert set(policies) == {0, 1, 2}
    assert all(p.cells == 2 * point.pool.slots_per_bank for p in policies.values())
    assert all(p.local_lag_s is not None for p in policies.values())


def test_members_asking_for_different_sums_are_all_denied_naming_each(
    plain: tuple[Channel, FakeClock],
) -> None:
    channel, _ = plain
    for r, values in zip(channel.ranks, (4096, 4096, 100), strict=True):
        r.want(1, values=values)
    channel.serve()
    for r in channel.ranks:
        answer = r.answer()
        assert isinstance(answer, Denied) and answer.seq == 1
        assert "rank 2: all_reduce of 100" in answer.error
    assert channel.testbed.installed == {}


def test_a_rank_gone_denies_those_waiting_for_it_and_fails_what_it_was_in(
    plain: tuple[Channel, FakeClock],
) -> None:
    channel, _ = plain
    a, b, c = channel.ranks
    for r in channel.ranks:
        r.want(1, members=(0, 1, 2))
    channel.serve()
    grant = a.answer()
    b.answer(), c.answer()
    assert isinstance(grant, Grant)
    a.say(Finished(0, 1, 0.1, grant.start_at + 0.1, 0, 0.0))
    a.want(2, members=(0, 1))
    channel.serve()
    channel.coordinator.rank_gone(1, "rank 1 (Bb) exited with status 1: boom")
    channel.serve()
    denied = a.answer()
    assert isinstance(denied, Denied) and denied.seq == 2 and "boom" in denied.error
    (rec,) = channel.records
    assert rec.status == "failed: rank 1 (Bb) exited with status 1: boom" and rec.time_s is None
    c.want(2, members=(1, 2))  # asking later for a group with the gone rank: denied at once
    channel.serve()
    late = c.answer()
    assert isinstance(late, Denied) and "boom" in late.error


def test_gloo_collectives_are_recorded_as_the_members_saw_them(em: Emulation) -> None:
    """From the last member's call to the last member's result, beside the plain WAN's
    price for the group; nothing is installed or granted."""
    channel = Channel(em, 0, FakeClock(1000.0))
    try:
        for r, (began, ended) in zip(
            channel.ranks, ((10.0, 12.0), (10.5, 12.25), (11.0, 12.5)), strict=True
        ):
            r.say(Observed(r.rank, "all_reduce", (0, 1, 2), 4096, began, ended))
            channel.serve()
        (rec,) = channel.records
        assert rec.collective == "gloo" and rec.op == "all_reduce" and rec.number == -1
        assert rec.started == 11.0 and rec.time_s == pytest.approx(1.5)
        assert rec.predicted_s == channel.pricing.cost((0, 1, 2), 4096).time_s
        assert channel.testbed.installed == {} and all(r.nothing_waiting() for r in channel.ranks)
    finally:
        channel.close()


def test_finished_rounds_are_retired_after_their_linger_and_all_on_close(
    plain: tuple[Channel, FakeClock],
) -> None:
    channel, clock = plain
    for seq in (1, 2, 3):
        for r in channel.ranks:
            r.want(seq)
        channel.serve()
        grants = [r.answer() for r in channel.ranks]
        for r, g in zip(channel.ranks, grants, strict=True):
            assert isinstance(g, Grant)
            r.say(Finished(r.rank, seq, 0.1, g.start_at + 0.1, 0, 0.0))
        channel.serve()
        clock.advance(2.0)
    # round 0 ended 4 s before round 2 was installed, round 1 only 2 s: one retired
    assert channel.testbed.retired == [0] and sorted(channel.testbed.installed) == [1, 2]
    channel.coordinator.close()
    assert channel.testbed.installed == {}


# --- how a play ends ----------------------------------------------------------------------------


def ranks_running(folder: Path, codes: list[str]) -> list[_Rank]:
    ranks = []
    for u, code in enumerate(codes):
        log = folder / f"rank-{u}.log"
        out = log.open("wb")
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT)
        ranks.append(_Rank(u, proc, log, folder / f"rank-{u}.jsonl", out))
    return ranks


class Ticking(FakeClock):
    """A simulated clock that moves a second each time it is read: a play's deadlines pass
    within a few polls of the loop, whatever the machine's speed."""

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def serve(
    em: Emulation, folder: Path, codes: list[str], stop: threading.Event | None = None
) -> tuple[str, Channel]:
    clock = Ticking(1000.0)
    channel = Channel(em, 0, clock, connect=False)
    run = ScriptRun(em, folder / "out", None, stop_event=stop, clock=clock)  # type: ignore[arg-type]
    ranks = ranks_running(folder, codes)
    try:
        return run._serve(channel.coordinator, ranks), channel
    finally:
        for r in ranks:
            r.proc.kill()
            r.proc.wait()
            r.out.close()
        channel.close()


def test_a_rank_that_fails_ends_the_play_naming_it_and_its_error(
    em: Emulation, folder: Path
) -> None:
    fails = "raise SystemExit('NotImplementedError: backend innet has no reduce')"
    busy = "import time; time.sleep(60)"  # never asks again: stopped after the others' grace
    status, channel = serve(em, folder, [busy, fails, busy])
    assert status == (
        "failed: rank 1 (Bb) exited with status 1: NotImplementedError: backend innet has no reduce"
    )
    assert channel.coordinator.gone.keys() == {1}


def test_a_rank_that_never_made_the_process_group_ends_the_play_naming_it(
    em: Emulation, folder: Path
) -> None:
    busy = "import time; time.sleep(60)"  # (stopped once the play has failed)
    status, _ = serve(em, folder, ["pass", busy, busy])
    assert status.startswith("failed: rank 0 (Aa) ended without asking for a collective")
    assert "never made the innet process group" in status


def test_a_stop_signal_ends_the_play_at_once(em: Emulation, folder: Path) -> None:
    stop = threading.Event()
    stop.set()
    sleeping = "import time; time.sleep(60)"
    status, _ = serve(em, folder, [sleeping] * 3, stop)
    assert status == "failed: stopped by a signal"


def test_the_summary_names_every_play_and_its_gain_over_plain(em: Emulation) -> None:
    from controller.runner.script import PlayRow

    rows = [
        PlayRow("plain", 1_600_000_000, "all-to-all", "ok", 9.5, 8, 1.30, 1.29, 0, {"loss": 2.5}),
        PlayRow("inna", 1_600_000_000, "all-to-all", "failed: rank 1 gone", 8.8, 8, 1.0, 1.1, 1),
        PlayRow("gloo", 1_600_000_000, "all-to-all", "ok", 12.5, 8, 0.65, 1.29, 8, {"loss": 2.6}),
    ]
    table = format_rows(rows).splitlines()
    assert table[1].startswith("plain all-to-all @ 1.6 GB") and "loss=2.5" in table[1]
    assert "x " not in table[2] and table[3] == "    failed: rank 1 gone"  # no gain: it failed
    assert table[4].split()[5:12] == ["8", "0.650s", "1.290s", "8", "12.5s", "2.00x", "loss=2.6"]
    lines = summary_csv(rows).splitlines()
    assert lines[0].startswith("network,memory,schedule,status") and len(lines) == 4
    rows[0].target_s, rows[0].target_network_s = 7.25, 1.5
    with_target = format_rows(rows, MetricTarget("loss", below=2.5)).splitlines()
    assert "to loss <= 2.5" in with_target[0]
    assert "7.2s (1.50s net)" in with_target[1] and "never" in with_target[2]
    assert summary_csv(rows).splitlines()[1].split(",")[9:11] == ["7.250", "1.5000"]


def test_the_plots_show_the_collectives_and_the_metric_the_script_logs(tmp_path: Path) -> None:
    from controller.runner.results.script_plots import (
        chosen_metric,
        plot_collectives,
        plot_metrics,
    )

    lines = [
        {
            "rank": 0,
            "time": 10.0 + r,
            "play_s": 2.0 + r,
            "round": r,
            "inner_s": 0.1,
            "val_loss": 3.0 - r,
        }
        for r in range(3)
    ]
    assert chosen_metric(lines) == "val_loss"  # preferred over the first numeric (inner_s)
    assert chosen_metric([{"rank": 0, "time": 1.0, "step": 3, "tokens": 12}]) == "tokens"
    assert chosen_metric([{"rank": 0, "time": 1.0, "note": "text only"}]) is None
    tagged = [{**line, "network": "inna", "schedule": "all-to-all", "memory": 1} for line in lines]
    figure = plot_metrics(tagged)
    (ax,) = figure.axes
    ((xs, ys),) = [line.get_data() for line in ax.get_lines()]
    assert list(xs) == [2.0, 3.0, 4.0] and list(ys) == [3.0, 2.0, 1.0]
    assert ax.get_ylabel() == "val_loss"
    record = {"status": "ok", "time_s": 0.11, "predicted_s": 0.1, "flags": {}, "network": "inna"}
    flagged = {**record, "flags": {"timing": "late"}, "time_s": 0.3}
    (ax,) = plot_collectives([record, flagged]).axes
    assert ax.get_xlabel() == "planner's price (s)"
    assert [c.get_label() for c in ax.collections[:2]] == ["inna", "inna flagged"]


def test_a_collectives_deadline_grows_with_its_price(em: Emulation) -> None:
    """A sum priced beyond the scenario's round_deadline gets three prices to finish."""
    point = em.points[0]
    pricing = Pricing(em, point, point.plays[2])
    small, huge = pricing.cost((0, 1, 2), 256), pricing.cost((0, 1, 2), 50_000_000)
    assert huge.time_s * 3 > em.scenario.round_deadline_s > small.time_s * 3
    assert pricing.policies(small, 256)[0].deadline_s == em.scenario.round_deadline_s
    assert pricing.policies(huge, 50_000_000)[0].deadline_s == pytest.approx(3 * huge.time_s)


def test_an_interrupted_script_run_says_how_far_it_got(em: Emulation, tmp_path: Path) -> None:
    from controller.runner.cli import HowFar

    where = HowFar()
    run = ScriptRun(em, tmp_path / "out", None)  # type: ignore[arg-type]  # never executed
    run.phase = "inna all-to-all @ 1.6 GB"
    run.records.append(CollectiveRecord(**{**RECORD, "index": 0}))
    where.script, where.folder = run, tmp_path / "out"
    assert where.report() == (
        f"during inna all-to-all @ 1.6 GB; 1 collective recorded; results so far in "
        f"{tmp_path / 'out'}"
    )


RECORD = {
    "network": "inna",
    "memory": 1,
    "schedule": "all-to-all",
    "op": "all_reduce",
    "members": ("Aa", "Bb"),
    "values": 4,
    "bytes": 16,
    "collective": "inna",
    "number": 0,
    "started": 0.0,
    "time_s": 0.1,
    "predicted_s": 0.1,
    "retransmissions": 0,
    "lag_ms": 0.0,
    "status": "ok",
}
