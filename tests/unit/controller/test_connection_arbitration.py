"""SwitchConnection when another client takes primary: it reports the loss, does not fight a
live primary, and is primary again once that client's stream ends — even after an election id
of (2^64-1, 2^64-1). Real gRPC against an in-process p4switch server running innet.p4."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from controller.p4rt import ArbitrationError, Schema, SwitchConnection, deadline_after
from controller.p4rt.arbitration import ClaimBackoff
from controller.p4rt.schema import insert
from tests.unit.controller.conftest import DEVICE_ID, Innet, Switch

OURS = (2, 0)
TOP = (2**64 - 1, 2**64 - 1)


def until(condition: Callable[[], bool], what: str, seconds: float = 5.0) -> None:
    deadline = deadline_after(seconds)
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def group(schema: Schema, gid: int) -> list:
    return [insert(schema.multicast_group(gid, [(1, 1)]))]


@pytest.mark.parametrize("theirs", [(3, 0), TOP], ids=["higher", "highest possible"])
def test_a_stolen_primary_is_reported_and_taken_back_once_the_other_client_leaves(
    innet: Innet, switches: list[Switch], theirs: tuple[int, int]
) -> None:
    sw = switches[0]
    schema = Schema(innet.p4info)
    with SwitchConnection("s0", sw.address, DEVICE_ID, OURS) as conn:
        conn.connect(deadline_after(10))
        conn.set_pipeline(innet.p4info, innet.source)
        other = SwitchConnection("other", sw.address, DEVICE_ID, theirs)
        other.connect(deadline_after(10))
        until(lambda: not conn.primary, "the controller was not told it lost primary")
        assert conn.primary_losses == 1
        assert conn.announced is not None and conn.announced.other_primary
        with pytest.raises(ArbitrationError, match="not primary"):
            conn.write(group(schema, 2))
        assert conn.claim_primary(deadline_after(5)) is False  # a live primary is not fought
        assert not conn.primary and other.primary
        other.close()  # its stream ends: the switch announces there is no primary
        until(lambda: conn.primary, "the controller did not ask to be primary again")
        assert conn.election_id == max(OURS, theirs)  # at least the highest the switch saw
        conn.write(group(schema, 2))
        assert 2 in sw.groups()


def test_a_controller_connecting_after_the_highest_id_left_is_primary(
    innet: Innet, switches: list[Switch]
) -> None:
    sw = switches[0]
    with SwitchConnection("other", sw.address, DEVICE_ID, TOP) as other:
        other.connect(deadline_after(10))
    with SwitchConnection("s0", sw.address, DEVICE_ID, OURS) as conn:
        conn.connect(deadline_after(10))  # before: "not primary (NOT_FOUND)", locked out
        assert conn.primary and conn.election_id == TOP
        conn.set_pipeline(innet.p4info, innet.source)


def test_claims_back_off_until_one_makes_the_controller_primary() -> None:
    backoff = ClaimBackoff(initial=0.5, cap=2.0)
    assert backoff.wait_s() == 0.0  # the first claim goes at once
    delays = []
    for _ in range(4):
        backoff.claimed()
        delays.append(backoff.delay_s)
    assert delays == [0.5, 1.0, 2.0, 2.0]
    assert 0.0 < backoff.wait_s() <= 2.0
    backoff.won()
    assert backoff.wait_s() == 0.0 and backoff.delay_s == 0.0
