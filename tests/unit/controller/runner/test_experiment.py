"""The experiment runner's pure parts: what leaders are told, the scenario at emulation scale
(sizes, pools, predictions), refusals."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from controller.p4rt import P4RuntimeError
from controller.runner.emulation import resolve
from controller.runner.exceptions import ExperimentError, ScenarioError
from controller.runner.leaders import local_lag, send_policy
from controller.runner.play import install_round
from controller.runner.scenario import parse_scenario
from controller.testbed import InstalledRound
from innet_cli import main
from workers.config import TrainConfig

REPO = Path(__file__).resolve().parents[4]
DEFAULT = REPO / "scenarios" / "nine-cities.yaml"
CLI = "import sys; from innet_cli import main; sys.exit(main())"


def scenario(extra: str = ""):
    return parse_scenario(f"name: t\nscale: 100000\nmemory: [25.6MB, 1.6GB]\n{extra}")


def test_local_lag_is_the_first_remote_arrival_after_the_own_send() -> None:
    delay = np.array([[0.0, 0.010, 0.050], [0.010, 0.0, 0.030], [0.050, 0.030, 0.0]])
    members, offsets = (0, 1, 2), (0.0, 0.005, 0.020)
    # at island 0: 1 arrives at 0.015, 2 at 0.070; own send at 0.0
    assert local_lag(delay, members, offsets, 0) == pytest.approx(0.015)
    # at island 2: 0 at 0.050, 1 at 0.035; own send at 0.020
    assert local_lag(delay, members, offsets, 2) == pytest.approx(0.015)
    # a remote copy due before the own WAN copy leaves: the lag is negative
    assert local_lag(delay, members, (0.0, 0.0, 0.060), 2) == pytest.approx(-0.030)


def test_a_leader_policy_is_rate_paced_with_the_whole_update_in_flight() -> None:
    policy = send_policy(20_000.0, 186 * 8, 0.012, -0.004, 0.14, 76, 60.0)
    assert policy.window == 76 and policy.rate_bps == 20_000.0
    assert policy.start_s == pytest.approx(0.012) and policy.local_lag_s == pytest.approx(-0.004)
    # a timeout shorter than the send-to-result time would resend every chunk
    assert policy.timeout_s >= 2 * 0.14 and policy.deadline_s == 60.0
    assert policy.max_timeout_s >= policy.timeout_s
    assert policy.cells is None  # no slot pool named: bounces are replayed on timers alone


def test_a_leader_in_line_knows_its_edges_cells() -> None:
    """A RESULT frees its chunk's cell (chunk mod 2 x SLOTS) at the own edge: the leader
    replays what it holds for that cell then (docs/protocol.md, "Bounces")."""
    policy = send_policy(20_000.0, 186 * 8, 0.012, -0.004, 0.14, 76, 60.0, slots=4)
    assert policy.cells == 8


def test_sizes_at_scale() -> None:
    em = resolve(scenario())
    assert em.model_params == 2410  # the 64-32-10 MLP
    assert em.update_floats == 2432 and em.chunks == 76  # in whole 32-value chunks
    point = em.points[0]
    assert point.pool.slots_per_bank == 1  # 25.6 MB at scale 100000: one slot per bank
    assert point.params.update_bytes == em.update_bytes == 2432 * 4 * 100_000
    assert point.params.memory_bytes == 2 * 1 * 128 * 100_000
    assert point.params.slot_bytes == 128 * 100_000  # one emulated slot at full scale
    assert em.points[1].pool.slots_per_bank == 32  # 1.6 GB: 819.2 MB of slots
    padded = resolve(scenario("update_size: 1GB\n"))
    assert padded.update_floats == math.ceil(1e9 / 100_000 / 4 / 32) * 32


def test_an_update_below_the_model_is_refused_at_its_line() -> None:
    with pytest.raises(ScenarioError, match=r"<string>:4: update_size: 100 MB is below"):
        resolve(scenario("update_size: 100MB\n"))


def test_the_training_section_becomes_the_trainers_config() -> None:
    em = resolve(scenario("seed: 7\ntraining: {rounds: 3, inner_steps: 5}\n"))
    cfg = em.island.training
    assert isinstance(cfg, TrainConfig)
    assert cfg.inner_steps == 5 and cfg.seed == 7
    assert em.island.update_floats == em.update_floats and em.island.islands == 9


def default_check() -> dict[tuple[str, str, str], float]:
    """`innet run --check` of the default scenario (256 lanes): the predicted consensus per
    (network, memory, family)."""
    proc = subprocess.run(
        [sys.executable, "-c", CLI, "run", str(DEFAULT), "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("scenario nine-cities: 9 islands x 2 hosts, scale 2000"), lines
    assert "inna, memory 25.6 MB -> pool 16.4 MB (4 slots/bank)" in proc.stdout  # 1 KB slots
    found = re.findall(
        r"^  (\w+), (any memory|memory [\d.]+ [MG]B)[^:]*: ([\w-]+): "
        r"consensus in \d+ round\(s\), ([\d.]+) s predicted",
        proc.stdout,
        re.MULTILINE,
    )
    assert len(found) == len(lines) - 1 == 6, proc.stdout
    return {(net, mem, family): float(t) for net, mem, family, t in found}


def test_the_default_scenario_predicts_the_crossover() -> None:
    """What the emulation must reproduce: triples first at 25.6 MB, all-to-all at 1.6 GB."""
    times = default_check()
    small, large = "memory 25.6 MB", "memory 1.6 GB"
    assert times["inna", small, "cliques-3"] < times["inna", small, "all-to-all"]
    assert times["inna", large, "all-to-all"] < times["inna", large, "cliques-3"]
    # beside a plain WAN, played once (its edges hold nothing): one ring of nine is faster
    # than inna's starved aggregators, slower than its generous ones
    plain = times["plain", "any memory", "all-to-all"]
    assert plain < times["inna", small, "cliques-3"]
    assert times["inna", large, "all-to-all"] < plain
    # the same scenario at scale 100000 with 32 lanes, in process
    em = resolve(scenario("networks: [plain, inna]\nschedules: [all-to-all, cliques-3]\n"))
    assert em.rounds == 3 * 2 * em.scenario.training.rounds


def test_every_network_is_planned_with_its_own_collectives() -> None:
    em = resolve(scenario("networks: [plain, multicast, inna, gloo]\nschedules: [all-to-all]\n"))
    first, second = em.points
    assert [p.network for p in first.plays] == ["plain", "multicast", "inna", "gloo"]
    assert [p.network for p in second.plays] == ["inna"]  # the rest do not depend on memory
    (ring,) = first.plays[0].plan.costs[0].groups
    assert ring.collective == "ring" and sorted(ring.order) == list(range(9))
    assert first.plays[1].plan.costs[0].groups[0].collective == "multicast"
    assert first.plays[3].edges == "plain"  # gloo runs over the plain network's edges
    assert first.plays[3].plan.costs == first.plays[0].plan.costs  # predicted as innet's ring
    warning = em.tcp_warning()
    assert warning is not None and warning.startswith("gloo: TCP at scale 100000 does not")
    assert warning in em.predictions()
    assert resolve(scenario()).tcp_warning() is None


def test_a_leader_paces_frames_at_the_planned_update_rate() -> None:
    em = resolve(scenario())
    # the planner counts update bytes; a frame carries 128 of them behind 58 header bytes
    assert em.frame_rate_bps(10e9) == pytest.approx(10e9 / 100_000 * 186 / 128)
    assert em.slots_needed(128 * 100_000 * 3.5) == 4


def test_run_check_prints_the_plan_without_building(capsys, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: c\nschedules: [all-to-all, cliques-3]\n")
    assert main(["run", str(path), "--check"]) == 0
    out = capsys.readouterr().out
    assert "all-to-all" in out and "cliques-3" in out and "predicted" in out


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name: t\nmemroy: 1GB\n", ["memroy", "memory"]),
        ("name: t\nmemory: 1KB\n", ["memory", "below one aggregation slot"]),
        ("name: t\nschedules: [cliques-10]\n", ["schedules", "cliques-10"]),
        ("name: t\nschedules: [stars]\n", ["schedules", "stars"]),
        ("name: t\ntraining: {rounds: 0}\n", ["training.rounds"]),
    ],
)
def test_run_refuses_a_bad_scenario_before_anything_starts(
    tmp_path, capsys, text: str, words: list[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("innet: error: ") and err.count("\n") == 1
    for word in words:
        assert word in err
    assert not out.exists()


def test_frames_carry_the_update_at_the_planned_rate() -> None:
    """The pacing rate is the planned update rate, scaled down, times frame / slot: headers
    ride above it (186/128 with 32 lanes, 1082/1024 with 256)."""
    for lanes, frame_bytes in ((32, 186), (256, 1082)):
        em = resolve(parse_scenario(f"name: t\nscale: 100000\nmemory: 1.6GB\nlanes: {lanes}\n"))
        assert em.frame_rate_bps(8e9) == pytest.approx(8e9 / 100_000 * frame_bytes / (4 * lanes))
        assert em.wire_bytes(4 * lanes * 100_000) == pytest.approx(frame_bytes)  # one frame


class FlakyTestbed:
    """advance() refused `refusals` times, as when a switch dies between heal and install."""

    def __init__(self, refusals: int) -> None:
        self.refusals, self.heals, self.advances = refusals, 0, 0

    def heal(self) -> list[str]:
        self.heals += 1
        return ["Frankfurt"] if self.heals > 1 else []

    def advance(self) -> InstalledRound:
        self.advances += 1
        if self.advances <= self.refusals:
            raise P4RuntimeError("switch s4: a write of 5 updates failed: UNAVAILABLE")
        return InstalledRound(7, (), (7,))


def test_a_refused_install_is_healed_and_tried_again() -> None:
    testbed = FlakyTestbed(refusals=1)
    assert install_round(testbed, 3).number == 7
    assert testbed.heals == 2 and testbed.advances == 2


def test_an_install_refused_every_time_fails_the_round_by_name() -> None:
    testbed = FlakyTestbed(refusals=10)
    with pytest.raises(ExperimentError, match=r"round 3: not installed after 3 attempts.*s4"):
        install_round(testbed, 3)
    assert testbed.advances == 3
