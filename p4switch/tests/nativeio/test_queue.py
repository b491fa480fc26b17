"""The C egress queue against `p4switch.shaping.EgressQueue`, on the same frames and times."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator

import pytest

from p4switch.nativeio.errors import NativeIOError
from p4switch.nativeio.queue import NativeEgressQueue
from p4switch.shaping import EgressQueue, ShapeSpec, Verdict

MS = 1e-3
FRAME_60 = bytes(60)


@pytest.fixture
def native() -> Iterator[list[NativeEgressQueue]]:
    made: list[NativeEgressQueue] = []
    yield made
    for q in made:
        q.close()


def pair(made: list[NativeEgressQueue], spec: ShapeSpec) -> tuple[EgressQueue, NativeEgressQueue]:
    made.append(NativeEgressQueue(spec, seed=1, port=2))
    return EgressQueue(spec, random.Random(0)), made[-1]


def frames(count: int, seed: int = 7) -> list[bytes]:
    """Distinct frames of varied lengths (60 to 1514 bytes), numbered in their first bytes."""
    rng = random.Random(seed)
    return [i.to_bytes(4, "big") + bytes(rng.randrange(56, 1511)) for i in range(count)]


def drive(queue: EgressQueue | NativeEgressQueue, offers: list[tuple[float, bytes]], step: float):
    """Offer each frame at its time, popping due frames every `step` s; what happened, in order."""
    log: list[object] = []
    now = 0.0
    for at, frame in offers:
        while now + step <= at:
            now += step
            log.append(("pop", round(now, 9), queue.pop_due(now), queue.next_due()))
        verdict = queue.offer(frame, at)
        log.append(("offer", verdict, len(queue), queue.backlog(at)))
    while len(queue):
        now += step
        log.append(("pop", round(now, 9), queue.pop_due(now), queue.next_due()))
    return log


def poisson(count: int, rate: float, seed: int = 3) -> list[tuple[float, bytes]]:
    rng = random.Random(seed)
    at = 0.0
    offers = []
    for frame in frames(count, seed):
        at += rng.expovariate(rate)
        offers.append((at, frame))
    return offers


@pytest.mark.parametrize(
    "spec",
    [
        ShapeSpec(delay_s=20 * MS),
        ShapeSpec(rate_bps=10e6),
        ShapeSpec(delay_s=5 * MS, rate_bps=10e6, queue_limit=20),
        ShapeSpec(delay_s=5 * MS, rate_bps=2e6, queue_limit=5),
        ShapeSpec(reorder=True, delay_s=3 * MS),
        ShapeSpec(),
    ],
    ids=["delay", "rate", "rate-delay-limit", "drop-tail", "reorder-no-jitter", "passthrough"],
)
def test_the_c_queue_does_what_the_python_queue_does(native, spec):
    python, c = pair(native, spec)
    offers = poisson(600, rate=2000.0)
    assert drive(c, offers, 0.4 * MS) == drive(python, offers, 0.4 * MS)


def test_drop_tail_happens_when_the_serialisation_queue_is_full(native):
    python, c = pair(native, ShapeSpec(rate_bps=1e6, queue_limit=3))
    burst = frames(10)
    verdicts = [c.offer(frame, 1.0) for frame in burst]
    assert verdicts == [python.offer(frame, 1.0) for frame in burst]
    assert verdicts.count(Verdict.QUEUED) == 3
    assert verdicts[3:] == [Verdict.QUEUE_FULL] * 7
    assert c.backlog(1.0) == 3


def test_a_delayed_frame_is_due_its_delay_after_it_was_offered(native):
    python, c = pair(native, ShapeSpec(delay_s=50 * MS))
    for queue in (python, c):
        assert queue.offer(FRAME_60, 1.0) is Verdict.QUEUED
        assert queue.next_due() == 1.0 + 50 * MS
        assert queue.pop_due(math.nextafter(1.0 + 50 * MS, 0.0)) == []
        assert queue.pop_due(1.0 + 50 * MS) == [FRAME_60]
        assert queue.lateness_max_s == 0.0  # popped at its due time
        queue.set_spec(ShapeSpec())
        assert queue.offer(FRAME_60, 2.0) is Verdict.SEND_NOW  # no delay, nothing held


def test_a_rate_serialises_at_exact_times_and_drops_the_tail(native):
    frame_s = 10 * MS  # 100 frames a second
    spec = ShapeSpec(rate_bps=len(FRAME_60) * 8 / frame_s, queue_limit=10)
    burst = [FRAME_60[:-1] + bytes([i]) for i in range(30)]
    dues = []
    for queue in pair(native, spec):
        verdicts = [queue.offer(frame, 0.0) for frame in burst]
        assert verdicts == [Verdict.QUEUED] * 10 + [Verdict.QUEUE_FULL] * 20
        left = []
        while (due := queue.next_due()) is not None:
            assert queue.pop_due(math.nextafter(due, 0.0)) == []  # none before its due time
            left.append((due, queue.pop_due(due)))
        assert [frames for _, frames in left] == [[frame] for frame in burst[:10]]
        assert [due for due, _ in left] == pytest.approx([k * frame_s for k in range(1, 11)])
        dues.append([due for due, _ in left])
    assert dues[1] == dues[0]  # C and Python: the same sums, to the last bit


def test_changing_spec_while_frames_are_held_matches_python(native):
    python, c = pair(native, ShapeSpec(delay_s=10 * MS))
    specs = [
        ShapeSpec(delay_s=2 * MS),
        ShapeSpec(delay_s=8 * MS, reorder=True),
        ShapeSpec(rate_bps=5e6, reorder=True),
        ShapeSpec(delay_s=1 * MS),
        ShapeSpec(),
    ]
    offers = poisson(500, rate=3000.0, seed=11)
    logs = []
    for queue in (python, c):
        queue.set_spec(ShapeSpec(delay_s=10 * MS))
        log = []
        for i, chunk in enumerate(range(0, 500, 100)):
            log += drive_part(queue, offers[chunk : chunk + 100])
            queue.set_spec(specs[i])
        log.append(queue.pop_due(10.0))
        logs.append(log)
    assert logs[1] == logs[0]


def drive_part(queue: EgressQueue | NativeEgressQueue, offers: list[tuple[float, bytes]]):
    log: list[object] = []
    for at, frame in offers:
        log.append((queue.pop_due(at), queue.offer(frame, at), queue.next_due()))
    return log


def test_loss_zero_loses_nothing_and_loss_near_one_loses_everything(native):
    _, keep = pair(native, ShapeSpec(delay_s=1 * MS, loss=0.0))
    _, lose = pair(native, ShapeSpec(delay_s=1 * MS, loss=1 - 1e-12))
    sent = frames(2000)
    assert {keep.offer(f, 0.0) for f in sent} == {Verdict.QUEUED}
    assert {lose.offer(f, 0.0) for f in sent} == {Verdict.LOSS}
    assert keep.pop_due(1.0) == sent
    assert lose.pop_due(1.0) == [] and len(lose) == 0


def test_loss_draws_are_seeded_and_at_the_given_rate(native):
    spec = ShapeSpec(loss=0.3, delay_s=1 * MS)
    runs = []
    for seed in (5, 5, 6):
        native.append(NativeEgressQueue(spec, seed=seed, port=1))
        runs.append([native[-1].offer(b"x" * 60, 0.0) for _ in range(20_000)])
    assert runs[0] == runs[1] != runs[2]
    assert runs[0].count(Verdict.LOSS) / 20_000 == pytest.approx(0.3, abs=0.015)


def departures(queue: NativeEgressQueue) -> Iterator[tuple[float, bytes]]:
    """(due time, frame) of every held frame, in the order they leave: popped at each due time."""
    while (due := queue.next_due()) is not None:
        for frame in queue.pop_due(due):
            yield due, frame


@pytest.mark.parametrize("delay", [10 * MS, 2 * MS])
def test_jitter_stays_in_bounds_and_keeps_order(native, delay):
    jitter = 5 * MS
    _, c = pair(native, ShapeSpec(delay_s=delay, jitter_s=jitter))
    offers = poisson(3000, rate=5000.0)
    offered_at = {}
    for at, frame in offers:
        assert c.offer(frame, at) is Verdict.QUEUED
        offered_at[frame] = at
    left = list(departures(c))
    assert [frame for _, frame in left] == [frame for _, frame in offers]  # order kept
    previous = 0.0
    for due, frame in left:
        at = offered_at[frame]
        assert max(at + delay - jitter, at) - 1e-9 <= due
        assert due <= max(at + delay + jitter, previous) + 1e-9
        previous = due
    shifts = [due - offered_at[frame] - delay for due, frame in left]
    if delay > jitter:  # nothing clipped: the draws spread over the whole range
        assert min(shifts) < -0.9 * jitter
        assert max(shifts) > 0.9 * jitter
    else:  # clipped at 0: a frame that drew a negative delay leaves when it arrived
        assert any(due == offered_at[frame] for due, frame in left)


def test_reorder_lets_frames_overtake_by_their_own_due_time(native):
    delay, jitter = 10 * MS, 5 * MS
    _, c = pair(native, ShapeSpec(delay_s=delay, jitter_s=jitter, reorder=True))
    offers = poisson(3000, rate=5000.0)
    offered_at = {frame: at for at, frame in offers}
    for at, frame in offers:
        c.offer(frame, at)
    left = list(departures(c))
    dues = [due for due, _ in left]
    assert dues == sorted(dues)
    assert [f for _, f in left] != [f for _, f in offers]  # some overtook
    for due, frame in left:
        assert offered_at[frame] + delay - jitter - 1e-9 <= due
        assert due <= offered_at[frame] + delay + jitter + 1e-9


def test_no_frame_is_lost_or_duplicated_across_spec_changes(native):
    rng = random.Random(9)
    specs = [
        ShapeSpec(delay_s=3 * MS, jitter_s=2 * MS),
        ShapeSpec(delay_s=1 * MS, jitter_s=4 * MS, reorder=True),
        ShapeSpec(rate_bps=20e6, queue_limit=50, jitter_s=1 * MS),
        ShapeSpec(loss=0.2, delay_s=2 * MS, reorder=True),
        ShapeSpec(),
    ]
    _, c = pair(native, specs[0])
    offered, kept, out = Counter[bytes](), Counter[bytes](), Counter[bytes]()
    for at, frame in poisson(5000, rate=8000.0, seed=4):
        if rng.random() < 0.01:
            c.set_spec(rng.choice(specs))
        offered[frame] += 1
        verdict = c.offer(frame, at)
        if verdict in (Verdict.QUEUED, Verdict.SEND_NOW):
            kept[frame] += 1
        if verdict is Verdict.SEND_NOW:
            out[frame] += 1
        out.update(c.pop_due(at))
    out.update(c.pop_due(100.0))
    assert len(c) == 0 and c.next_due() is None
    assert out == kept and max(out.values()) == 1
    assert 0 < sum(kept.values()) < sum(offered.values())


def test_lateness_is_measured_from_the_due_time(native):
    python, c = pair(native, ShapeSpec(delay_s=10 * MS))
    for queue in (python, c):
        queue.offer(b"a" * 60, 0.0)
        queue.offer(b"b" * 60, 1 * MS)
        assert queue.pop_due(13 * MS) == [b"a" * 60, b"b" * 60]
    assert c.lateness_max_s == pytest.approx(python.lateness_max_s) == pytest.approx(3 * MS)


def test_a_closed_queue_refuses_use(native):
    _, c = pair(native, ShapeSpec(delay_s=1 * MS))
    c.close()
    with pytest.raises(NativeIOError, match="closed"):
        c.offer(b"x", 0.0)
