"""controller.cluster.probe: timed exchanges over UDP on loopback, whose offsets hold the true
offset between the two clocks within their stated bound, and what a prober says when no one
answers."""

from __future__ import annotations

import socket
import time

import pytest

from controller.cluster.clocks import MeasurementError, estimate_offset
from controller.cluster.probe import MAGIC, REQUEST, Responder, probe

LOOPBACK = "127.0.0.1"


@pytest.mark.parametrize("ahead_s", [0.0, 5.0, -0.75])
def test_the_offset_between_two_clocks_lies_within_the_stated_bound(ahead_s: float) -> None:
    with Responder(LOOPBACK, clock=lambda: time.time() + ahead_s) as responder:
        samples = probe(responder.address, 12, interval_s=0.0)
    assert responder.answered == 12  # counted by its thread, joined on leaving the block
    assert len(samples) == 12
    clock = estimate_offset(samples)
    # both clocks are this machine's, one shifted by exactly `ahead_s`: whatever the scheduling,
    # the exchange bounds the shift (causality, not timing)
    assert abs(clock.offset_s - ahead_s) <= clock.uncertainty_s + 1e-6
    assert all(s.round_trip_s >= 0 for s in samples)


def test_a_stranger_s_datagrams_are_ignored_and_answers_go_on() -> None:
    with Responder(LOOPBACK) as responder, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"not a probe", responder.address)
        s.sendto(REQUEST.pack(b"nope", 1, 0.0), responder.address)
        s.sendto(REQUEST.pack(MAGIC, 7, 1.5), responder.address)
        s.settimeout(5.0)
        reply = s.recv(64)
        assert len(probe(responder.address, 2, interval_s=0.0)) == 2
    assert reply[:4] == MAGIC
    assert responder.ignored == 2


def test_a_port_no_one_answers_on_is_named() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as closed:
        closed.bind((LOOPBACK, 0))
        address = closed.getsockname()
    with pytest.raises(MeasurementError, match=r"node x answered none of 3 probes"):
        probe(address, 3, interval_s=0.0, timeout_s=0.05, who="node x")


def test_a_silent_responder_times_out_and_is_named_by_address() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind((LOOPBACK, 0))
        host, port = silent.getsockname()
        with pytest.raises(MeasurementError, match=rf"{host}:{port} answered none of 2"):
            probe((host, port), 2, interval_s=0.0, timeout_s=0.05)


def test_a_responder_on_an_address_not_here_is_refused() -> None:
    with pytest.raises(MeasurementError, match=r"cannot answer clock and wire probes on 192\.0\.2"):
        Responder("192.0.2.1")


def test_at_least_one_exchange() -> None:
    with pytest.raises(MeasurementError, match="at least one exchange"):
        probe((LOOPBACK, 9), 0)
