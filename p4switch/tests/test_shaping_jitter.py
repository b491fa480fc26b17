"""Jitter and reordering in a port's egress shaping: specs, due times, order, the seeded draws.

Every test drives `EgressQueue` with a fake clock and a seeded `random.Random`; where it needs
the queue's draws it replays them from a twin generator with the same seed.
"""

from __future__ import annotations

import itertools
import json
import random
import statistics

import pytest

from p4switch.control import ControlServer, handle_request, main
from p4switch.exceptions import ShapeError
from p4switch.shaping import EgressQueue, ShapeSpec, Verdict, parse_shape, parse_spec

MS = 1e-3


def leave_times(q: EgressQueue) -> dict[bytes, float]:
    """Drain `q` one due time at a time: each frame and the time it left."""
    left: dict[bytes, float] = {}
    while len(q):
        now = q.next_due()
        assert now is not None
        frames = q.pop_due(now)
        assert frames, "next_due named a time at which nothing was due"
        for frame in frames:
            left[frame] = now
    return left


def name(i: int) -> bytes:
    return i.to_bytes(4, "big")


# -- specs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("delay=70ms,jitter=2ms", ShapeSpec(delay_s=0.07, jitter_s=0.002)),
        ("jitter=500us", ShapeSpec(jitter_s=5e-4)),
        ("jitter=0ms", ShapeSpec()),
        ("delay=10ms,jitter=1ms,reorder=on", ShapeSpec(delay_s=0.01, jitter_s=1e-3, reorder=True)),
        ("delay=10ms, reorder = OFF", ShapeSpec(delay_s=0.01)),
    ],
)
def test_parse_spec_reads_jitter_and_reorder(text, expected):
    assert parse_spec(text) == expected


def test_parse_shape_reads_every_key_with_jitter():
    port, spec = parse_shape("3:delay=70ms,rate=10Mbit,loss=0.01,limit=500,jitter=2ms,reorder=on")
    assert port == 3
    assert spec == ShapeSpec(0.07, 10e6, 0.01, 500, jitter_s=0.002, reorder=True)


@pytest.mark.parametrize(
    "spec",
    [
        ShapeSpec(delay_s=0.07, jitter_s=0.002),
        ShapeSpec(delay_s=0.07, rate_bps=10e6, loss=0.01, queue_limit=5, jitter_s=7e-7),
        ShapeSpec(delay_s=0.01, jitter_s=0.003, reorder=True),
        ShapeSpec(reorder=True),
    ],
)
def test_jitter_specs_round_trip_through_text_and_json(spec):
    assert parse_spec(spec.to_text()) == spec
    assert ShapeSpec(**json.loads(json.dumps(spec.as_dict()))) == spec


def test_text_and_description_name_jitter_and_reorder_only_when_set():
    plain = ShapeSpec(delay_s=0.07)
    assert "jitter" not in plain.to_text() and "reorder" not in plain.to_text()
    assert "jitter" not in plain.describe() and "reorder" not in plain.describe()
    spec = ShapeSpec(delay_s=0.07, jitter_s=0.002, reorder=True)
    assert spec.to_text() == "delay=0.07s,jitter=0.002s,reorder=on"
    assert spec.describe().endswith(", jitter ±2.00 ms, reordering")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("jitter=-1ms", ["jitter=", "negative"]),
        ("jitter=2", ["jitter=", "no unit"]),
        ("jitter=lots", ["jitter=", "not a duration"]),
        (f"jitter={'9' * 400}s", ["jitter=", "finite"]),
        ("jitter=1ms,jitter=2ms", ["'jitter'", "twice"]),
        ("reorder=maybe", ["reorder=", "on", "off"]),
        ("reorder=1", ["reorder=", "on", "off"]),
        ("reorder=", ["KEY=VALUE"]),
    ],
)
def test_bad_jitter_and_reorder_values_are_named(text, words):
    with pytest.raises(ShapeError) as caught:
        parse_spec(text)
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"jitter_s": -1e-3},
        {"jitter_s": float("inf")},
        {"jitter_s": float("nan")},
        {"reorder": 1},
        {"reorder": "on"},
    ],
)
def test_spec_validates_jitter_and_reorder(kwargs):
    with pytest.raises(ShapeError):
        ShapeSpec(**kwargs)


def test_jitter_alone_is_not_passthrough_but_reorder_alone_is():
    assert not ShapeSpec(jitter_s=MS).is_passthrough
    assert ShapeSpec(reorder=True).is_passthrough  # nothing delayed, nothing to reorder


# -- delays -----------------------------------------------------------------------------------


@pytest.mark.parametrize("reorder", [False, True])
def test_jitter_spreads_delays_uniformly_around_the_delay(reorder):
    delay, jitter, n = 10 * MS, 4 * MS, 4000
    q = EgressQueue(ShapeSpec(delay_s=delay, jitter_s=jitter, reorder=reorder), random.Random(3))
    for i in range(n):  # a second apart: no frame can hold back another
        assert q.offer(name(i), now=float(i)) is Verdict.QUEUED
    left = leave_times(q)
    delays = [left[name(i)] - i for i in range(n)]
    assert min(delays) >= delay - jitter - 1e-9
    assert max(delays) <= delay + jitter + 1e-9
    below = sum(d < delay - jitter / 2 for d in delays) / n
    above = sum(d > delay + jitter / 2 for d in delays) / n
    assert below == pytest.approx(0.25, abs=0.03)  # uniform: a quarter in each outer half
    assert above == pytest.approx(0.25, abs=0.03)
    assert statistics.fmean(delays) == pytest.approx(delay, abs=0.15 * MS)


def test_jitter_never_makes_a_delay_negative():
    q = EgressQueue(ShapeSpec(delay_s=1 * MS, jitter_s=5 * MS, reorder=True), random.Random(1))
    for i in range(1000):
        q.offer(name(i), now=float(i))
    left = leave_times(q)
    delays = [left[name(i)] - i for i in range(1000)]
    assert min(delays) == 0.0
    assert sum(d == 0.0 for d in delays) > 100  # draws below -1 ms are clipped to no delay
    assert max(delays) <= 6 * MS + 1e-9


def test_loss_is_drawn_first_then_jitter_one_draw_each():
    spec = ShapeSpec(delay_s=20 * MS, loss=0.3, jitter_s=5 * MS, reorder=True)
    rng = random.Random(11)
    q = EgressQueue(spec, rng)
    twin = random.Random(11)
    expected: dict[bytes, float] = {}
    for i in range(500):
        now = i * 0.1
        verdict = q.offer(name(i), now=now)
        if twin.random() < spec.loss:
            assert verdict is Verdict.LOSS
            continue
        assert verdict is Verdict.QUEUED
        expected[name(i)] = now + spec.delay_s + spec.jitter_s * (2 * twin.random() - 1)
    assert rng.getstate() == twin.getstate()  # no draw more, none fewer
    left = leave_times(q)
    assert left.keys() == expected.keys()
    for frame, due in expected.items():
        assert left[frame] == pytest.approx(due, abs=1e-12)


@pytest.mark.parametrize(
    "spec",
    [
        ShapeSpec(delay_s=20 * MS, loss=0.2),
        ShapeSpec(delay_s=20 * MS, rate_bps=10e6, loss=0.2, queue_limit=40),
        ShapeSpec(loss=0.2),
    ],
)
def test_a_spec_without_jitter_draws_only_the_loss(spec):
    """The steady path: one draw per frame, the loss; due times from arrival (or serialisation)
    plus the delay, exactly."""
    rng, twin = random.Random(5), random.Random(5)
    q = EgressQueue(spec, rng)
    last_end, expected = -float("inf"), {}
    for i in range(300):
        now, frame = i * 0.2 * MS, name(i) * 300  # 1200 bytes: ~1 ms at 10 Mb/s
        verdict = q.offer(frame, now=now)
        if twin.random() < spec.loss:
            assert verdict is Verdict.LOSS
            continue
        if spec.rate_bps is None:
            assert verdict is (Verdict.QUEUED if spec.delay_s else Verdict.SEND_NOW)
            expected[frame] = now + spec.delay_s
            continue
        if verdict is Verdict.QUEUE_FULL:
            continue
        last_end = max(now, last_end) + len(frame) * 8 / spec.rate_bps
        expected[frame] = last_end + spec.delay_s
    assert rng.getstate() == twin.getstate()
    if spec.delay_s or spec.rate_bps:
        assert leave_times(q) == pytest.approx(expected, abs=1e-12)


# -- order ------------------------------------------------------------------------------------


def drawn_and_kept(seed: int) -> tuple[list[float], list[float], list[bytes]]:
    """The same burst through a reordering queue (each frame's own due time) and an ordered one
    (the same draws): own due times, ordered due times, and the order frames left reordering."""
    n, offered = 400, [i * 0.5 * MS for i in range(400)]  # 0.5 ms apart, jitter 5 ms
    own = EgressQueue(
        ShapeSpec(delay_s=20 * MS, jitter_s=5 * MS, reorder=True), random.Random(seed)
    )
    kept = EgressQueue(ShapeSpec(delay_s=20 * MS, jitter_s=5 * MS), random.Random(seed))
    for i, now in enumerate(offered):
        own.offer(name(i), now=now)
        kept.offer(name(i), now=now)
    own_left, kept_left = leave_times(own), leave_times(kept)
    order = sorted(own_left, key=lambda frame: (own_left[frame], frame))
    return [own_left[name(i)] for i in range(n)], [kept_left[name(i)] for i in range(n)], order


def test_frames_keep_their_order_by_default():
    own, kept, _ = drawn_and_kept(seed=2)
    assert own != sorted(own)  # the draws alone would reorder this burst...
    assert kept == sorted(kept)  # ...but in order, due times never decrease
    assert kept == list(itertools.accumulate(own, max))  # each waits for the one ahead only


def test_reorder_lets_frames_overtake_and_pops_them_by_due_time():
    own, _, order = drawn_and_kept(seed=2)
    offer_order = [name(i) for i in range(len(own))]
    assert order != offer_order
    q = EgressQueue(ShapeSpec(delay_s=20 * MS, jitter_s=5 * MS, reorder=True), random.Random(2))
    for i in range(len(own)):
        q.offer(name(i), now=i * 0.5 * MS)
    assert len(q) == len(own)
    assert q.next_due() == min(own)
    middle = sorted(own)[len(own) // 2]
    first = q.pop_due(middle)  # one call, many frames: handed back by due time
    assert first == order[: len(first)] and len(first) > len(own) // 3
    assert q.pop_due(max(own)) == order[len(first) :]
    assert len(q) == 0 and q.next_due() is None


def test_reorder_breaks_ties_in_offer_order():
    q = EgressQueue(ShapeSpec(delay_s=10 * MS, reorder=True), random.Random(0))
    for frame in (b"a", b"b", b"c"):
        q.offer(frame, now=1.0)
    assert q.pop_due(1.0 + 10 * MS) == [b"a", b"b", b"c"]


def test_reorder_lets_a_shorter_delay_overtake_frames_already_held():
    q = EgressQueue(ShapeSpec(delay_s=100 * MS, reorder=True), random.Random(0))
    q.offer(b"old", now=0.0)
    q.set_spec(ShapeSpec(delay_s=10 * MS, reorder=True))
    q.offer(b"new", now=1 * MS)
    assert q.pop_due(50 * MS) == [b"new"]
    assert q.pop_due(100 * MS) == [b"old"]


def test_turning_reorder_on_keeps_held_frames_leaving_as_they_would_have():
    q = EgressQueue(ShapeSpec(delay_s=100 * MS), random.Random(0))
    q.offer(b"old", now=0.0)
    q.set_spec(ShapeSpec(delay_s=10 * MS))
    q.offer(b"behind", now=1 * MS)  # due at 11 ms, but waits behind "old" (100 ms)
    q.set_spec(ShapeSpec(delay_s=10 * MS, reorder=True))
    q.offer(b"free", now=2 * MS)  # offered with reorder on: leaves at its own time
    assert q.pop_due(50 * MS) == [b"free"]
    assert q.pop_due(100 * MS) == [b"old", b"behind"]


def reordering(n: int, seed: int) -> EgressQueue:
    """n frames 1 ms apart through a reordering queue (delay 10 ms, jitter 5 ms)."""
    q = EgressQueue(ShapeSpec(delay_s=10 * MS, jitter_s=5 * MS, reorder=True), random.Random(seed))
    for i in range(n):
        q.offer(name(i), now=i * 1 * MS)
    return q


def test_turning_reorder_off_queues_new_frames_behind_every_held_one():
    q, twin = reordering(50, seed=4), leave_times(reordering(50, seed=4))
    assert max(twin.values()) > 51 * MS  # a held frame is due after the new frame's own time
    q.set_spec(ShapeSpec(delay_s=1 * MS))
    q.offer(b"late", now=50 * MS)  # due at 51 ms on its own, but in order again
    left = leave_times(q)
    assert left.pop(b"late") == max(twin.values())
    assert left == twin  # the held frames keep their due times


def test_rate_then_jittered_delay_serialises_in_order_and_limits_the_queue():
    spec = ShapeSpec(delay_s=20 * MS, rate_bps=10e6, queue_limit=3, jitter_s=5 * MS, reorder=True)
    rng, twin = random.Random(9), random.Random(9)
    q = EgressQueue(spec, rng)
    frame = b"x" * 1250  # 1 ms at 10 Mb/s
    verdicts = [q.offer(frame + bytes([i]), now=0.0) for i in range(5)]
    assert verdicts == [Verdict.QUEUED] * 3 + [Verdict.QUEUE_FULL] * 2
    assert q.backlog(0.0) == 3 and len(q) == 3
    ends = [(len(frame) + 1) * 8 / 10e6 * k for k in (1, 2, 3)]
    expected = [end + 20 * MS + 5 * MS * (2 * twin.random() - 1) for end in ends]
    assert rng.getstate() == twin.getstate()  # the full queue's refusals drew nothing
    left = leave_times(q)
    assert sorted(left.values()) == pytest.approx(sorted(expected), abs=1e-12)


def test_lateness_is_measured_from_the_due_time_when_reordering():
    q = EgressQueue(ShapeSpec(delay_s=10 * MS, jitter_s=2 * MS, reorder=True), random.Random(0))
    q.offer(b"a", now=0.0)
    due = q.next_due()
    assert due is not None
    assert q.pop_due(due + 3 * MS) == [b"a"]
    assert q.lateness_max_s == pytest.approx(3 * MS)


# -- the control channel ----------------------------------------------------------------------


class FakeSwitch:
    """Records the shaping the control channel hands it."""

    def __init__(self) -> None:
        self.shaped: list[tuple[int, ShapeSpec]] = []

    def shape(self, port: int, spec: ShapeSpec) -> None:
        self.shaped.append((port, spec))

    def stats(self, reset_peaks: bool = False) -> dict[str, object]:
        return {"ports": {}, "cpu": None}


def test_shape_over_the_control_channel_takes_jitter_and_reorder():
    switch = FakeSwitch()
    request = {"cmd": "shape", "port": 2, "spec": "delay=70ms,jitter=2ms,reorder=on"}
    reply = handle_request(switch, json.dumps(request))
    assert reply["ok"] is True
    assert reply["shape"]["jitter_s"] == pytest.approx(0.002)
    assert reply["shape"]["reorder"] is True
    assert parse_spec(reply["text"]) == ShapeSpec(delay_s=0.07, jitter_s=0.002, reorder=True)
    assert switch.shaped == [(2, ShapeSpec(delay_s=0.07, jitter_s=0.002, reorder=True))]


@pytest.mark.parametrize(
    ("spec", "word"), [("jitter=-2ms", "jitter="), ("delay=1ms,reorder=maybe", "reorder=")]
)
def test_bad_jitter_over_the_control_channel_gets_an_error_reply(spec, word):
    switch = FakeSwitch()
    reply = handle_request(switch, json.dumps({"cmd": "shape", "port": 2, "spec": spec}))
    assert reply["ok"] is False and word in reply["error"]
    assert switch.shaped == []


def test_control_command_line_prints_the_jitter_it_set(tmp_path, capsys):
    switch = FakeSwitch()
    with ControlServer(tmp_path / "ctl.sock", switch) as server:
        status = main([str(server.path), "shape", "2", "delay=70ms,jitter=2ms,reorder=on"])
    assert status == 0
    out = capsys.readouterr().out
    assert "jitter ±2.00 ms" in out and "reordering" in out
    assert switch.shaped == [(2, ShapeSpec(delay_s=0.07, jitter_s=0.002, reorder=True))]
