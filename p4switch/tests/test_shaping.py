"""Shaping specs and the egress queue's timing, driven by a fake clock (no sockets)."""

from __future__ import annotations

import random

import pytest

from p4switch.exceptions import ShapeError
from p4switch.shaping import EgressQueue, ShapeSpec, Verdict, parse_shape, parse_spec

MS = 1e-3


def queue(spec: ShapeSpec, seed: int = 0) -> EgressQueue:
    return EgressQueue(spec, random.Random(seed))


# -- specs ------------------------------------------------------------------------------------


def test_parse_shape_reads_every_key():
    port, spec = parse_shape("3:delay=70ms,rate=10Mbit,loss=0.01,limit=500")
    assert port == 3
    assert spec == ShapeSpec(delay_s=0.07, rate_bps=10e6, loss=0.01, queue_limit=500)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("delay=0ms", ShapeSpec()),
        ("delay=2.5 s", ShapeSpec(delay_s=2.5)),
        ("rate=1Gbps", ShapeSpec(rate_bps=1e9)),
        ("rate=100kbit", ShapeSpec(rate_bps=1e5)),
        ("loss=1%", ShapeSpec(loss=0.01)),
        (" loss = 0.25 , limit = 7 ", ShapeSpec(loss=0.25, queue_limit=7)),
        ("", ShapeSpec()),
        ("none", ShapeSpec()),
    ],
)
def test_parse_spec_accepts(text, expected):
    assert parse_spec(text) == expected


@pytest.mark.parametrize(
    "spec",
    [
        ShapeSpec(),
        ShapeSpec(delay_s=0.07, rate_bps=10e6, loss=0.01, queue_limit=500),
        ShapeSpec(delay_s=5e-7, rate_bps=1500.0, loss=1e-5),
    ],
)
def test_spec_text_round_trips(spec):
    assert parse_spec(spec.to_text()) == spec


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("wobble=5ms", ["'wobble'", "delay=", "rate=", "loss=", "limit=", "jitter=", "reorder="]),
        ("delay=70", ["delay=", "no unit"]),
        ("delay=-1ms", ["delay=", "negative"]),
        ("rate=0Mbit", ["rate=", "positive"]),
        ("rate=10mbps", ["rate=", "unknown rate unit"]),
        ("loss=1", ["loss=", "below 1"]),
        ("loss=-0.1", ["loss=", "at least 0"]),
        ("loss=lots", ["loss=", "not a number"]),
        ("limit=0", ["limit=", "at least 1"]),
        ("limit=2.5", ["limit=", "whole number"]),
        ("delay=1ms,delay=2ms", ["'delay'", "twice"]),
        ("delay", ["KEY=VALUE"]),
        ("delay=", ["KEY=VALUE"]),
    ],
)
def test_parse_spec_rejects_naming_the_key(text, words):
    with pytest.raises(ShapeError) as caught:
        parse_spec(text)
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("delay=70ms", "PORT:SPEC"),
        ("x:delay=70ms", "not a port number"),
        ("-1:delay=70ms", "not negative"),
        ("3:speed=1", "unknown shaping key"),
    ],
)
def test_parse_shape_rejects(text, word):
    with pytest.raises(ShapeError, match=word):
        parse_shape(text)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"delay_s": -0.001},
        {"delay_s": float("inf")},
        {"rate_bps": 0.0},
        {"loss": 1.0},
        {"queue_limit": 0},
        {"queue_limit": True},
    ],
)
def test_spec_validates_its_fields(kwargs):
    with pytest.raises(ShapeError):
        ShapeSpec(**kwargs)


def test_passthrough_only_when_nothing_is_shaped():
    assert ShapeSpec().is_passthrough
    assert ShapeSpec(queue_limit=5).is_passthrough
    assert not ShapeSpec(delay_s=MS).is_passthrough
    assert not ShapeSpec(rate_bps=1e6).is_passthrough
    assert not ShapeSpec(loss=0.1).is_passthrough


# -- the queue --------------------------------------------------------------------------------


def test_unshaped_queue_says_send_now():
    q = queue(ShapeSpec())
    assert q.offer(b"x" * 100, now=5.0) is Verdict.SEND_NOW
    assert len(q) == 0
    assert q.next_due() is None


def test_delay_holds_each_frame_for_the_delay():
    q = queue(ShapeSpec(delay_s=50 * MS))
    assert q.offer(b"a", now=1.0) is Verdict.QUEUED
    assert q.offer(b"b", now=1.010) is Verdict.QUEUED
    assert q.next_due() == pytest.approx(1.050)
    assert q.pop_due(1.049) == []
    assert q.pop_due(1.050) == [b"a"]
    assert q.next_due() == pytest.approx(1.060)
    assert q.pop_due(1.2) == [b"b"]
    assert len(q) == 0


def test_rate_serialises_back_to_back_frames():
    # 1250 bytes = 10,000 bits = 1 ms at 10 Mb/s
    q = queue(ShapeSpec(rate_bps=10e6))
    frames = [bytes([i]) * 1250 for i in range(3)]
    for frame in frames:
        assert q.offer(frame, now=0.0) is Verdict.QUEUED
    assert q.next_due() == pytest.approx(1 * MS)
    assert q.pop_due(0.5 * MS) == []
    assert q.pop_due(1 * MS) == frames[:1]
    assert q.pop_due(2.5 * MS) == frames[1:2]
    assert q.pop_due(3 * MS) == frames[2:]


def test_rate_then_delay():
    q = queue(ShapeSpec(delay_s=50 * MS, rate_bps=10e6))
    q.offer(b"a" * 1250, now=0.0)
    q.offer(b"b" * 1250, now=0.0)
    assert q.next_due() == pytest.approx(51 * MS)
    assert q.pop_due(51 * MS) == [b"a" * 1250]
    assert q.next_due() == pytest.approx(52 * MS)


def test_idle_link_starts_serialising_at_arrival():
    q = queue(ShapeSpec(rate_bps=10e6))
    q.offer(b"a" * 1250, now=0.0)
    q.offer(b"b" * 1250, now=10.0)  # long after the first frame left
    assert q.pop_due(1 * MS) == [b"a" * 1250]
    assert q.next_due() == pytest.approx(10.0 + 1 * MS)


def test_throughput_matches_rate_over_a_burst():
    rate = 8e6
    q = queue(ShapeSpec(rate_bps=rate, queue_limit=10_000))
    frame = b"z" * 1000
    for _ in range(2000):
        q.offer(frame, now=0.0)
    last = None
    while len(q):
        last = q.next_due()
        q.pop_due(last)
    assert last == pytest.approx(2000 * 1000 * 8 / rate)


def test_queue_limit_drops_tail_and_counts_only_frames_in_serialisation():
    q = queue(ShapeSpec(rate_bps=10e6, queue_limit=3, delay_s=1.0))
    verdicts = [q.offer(b"x" * 1250, now=0.0) for _ in range(5)]
    assert verdicts == [Verdict.QUEUED] * 3 + [Verdict.QUEUE_FULL] * 2
    assert q.backlog(0.0) == 3
    # the first frame is serialised at 1 ms; it waits in the delay line, which is not limited
    assert q.offer(b"y" * 1250, now=1 * MS) is Verdict.QUEUED
    assert q.backlog(1 * MS) == 3
    assert len(q) == 4
    assert q.offer(b"z" * 1250, now=1 * MS) is Verdict.QUEUE_FULL


def test_loss_fraction_follows_the_seed():
    spec = ShapeSpec(loss=0.2)
    q = queue(spec, seed=7)
    verdicts = [q.offer(b"x", now=0.0) for _ in range(20_000)]
    lost = verdicts.count(Verdict.LOSS)
    assert lost / len(verdicts) == pytest.approx(0.2, abs=0.01)
    assert set(verdicts) == {Verdict.LOSS, Verdict.SEND_NOW}
    again = queue(spec, seed=7)
    assert [again.offer(b"x", now=0.0) for _ in range(20_000)] == verdicts
    other = queue(spec, seed=8)
    assert [other.offer(b"x", now=0.0) for _ in range(20_000)] != verdicts


def test_lost_frames_take_no_serialisation_time():
    q = queue(ShapeSpec(rate_bps=10e6, loss=0.5), seed=1)
    kept = [i for i in range(100) if q.offer(bytes([i]) * 1250, now=0.0) is Verdict.QUEUED]
    assert 0 < len(kept) < 100
    last = None
    while len(q):
        last = q.next_due()
        q.pop_due(last)
    assert last == pytest.approx(len(kept) * MS)


def test_frames_keep_their_order_when_the_delay_shrinks():
    q = queue(ShapeSpec(delay_s=100 * MS))
    q.offer(b"old", now=0.0)
    q.set_spec(ShapeSpec(delay_s=10 * MS))
    q.offer(b"new", now=1 * MS)
    assert q.pop_due(50 * MS) == []  # "new" is due but waits behind "old"
    assert q.pop_due(100 * MS) == [b"old", b"new"]


def test_unshaping_a_busy_queue_keeps_order():
    q = queue(ShapeSpec(delay_s=10 * MS))
    q.offer(b"held", now=0.0)
    q.set_spec(ShapeSpec())
    assert q.offer(b"next", now=1 * MS) is Verdict.QUEUED  # not SEND_NOW: "held" is first
    assert q.pop_due(10 * MS) == [b"held", b"next"]
    assert q.offer(b"free", now=11 * MS) is Verdict.SEND_NOW


def test_lateness_is_recorded():
    q = queue(ShapeSpec(delay_s=10 * MS))
    q.offer(b"a", now=0.0)
    q.pop_due(13 * MS)
    assert q.lateness_max_s == pytest.approx(3 * MS)


def test_a_frame_read_after_it_was_due_counts_its_lateness_from_the_read() -> None:
    """The wait before the switch read the frame is its receive lag, reported apart; lateness
    is how late the release was once the frame was in hand."""
    from p4switch.shaping import EgressQueue, ShapeSpec

    q = EgressQueue(ShapeSpec(delay_s=0.010), random.Random(0))
    q.offer(b"x" * 100, now=1.000, read=1.050)  # arrived at 1.000, due 1.010, read at 1.050
    assert q.next_due() == pytest.approx(1.010)  # shaped from its arrival
    assert q.pop_due(1.052) == [b"x" * 100]
    assert q.lateness_max_s == pytest.approx(0.002)  # released 2 ms after it was read
    q.offer(b"y" * 100, now=2.000)  # read as it arrived: lateness from the due time
    q.pop_due(2.013)
    assert q.lateness_max_s == pytest.approx(0.003)
