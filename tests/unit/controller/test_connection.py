"""SwitchConnection against a real p4switch P4Runtime server running innet.p4."""

from __future__ import annotations

import re
import time

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt import (
    ArbitrationError,
    Schema,
    SwitchConnection,
    SwitchUnreachable,
    WriteError,
    deadline_after,
)
from controller.p4rt.schema import delete, insert
from tests.unit.controller.conftest import DEVICE_ID, Innet, Switch


def member(schema: Schema, group: int, local_grp: int = 1) -> p4runtime_pb2.Entity:
    params = {"expected": 3, "my_bit": 1, "local_grp": local_grp}
    # any further parameter innet.p4's member action takes (a slot's stale bound...) is 0 here
    rest = {p.name: 0 for p in schema.action("InnetIngress.member").params if p.name not in params}
    return schema.table_entry(
        "InnetIngress.membership",
        {"hdr.innet.job": 1, "hdr.innet.round": 1, "hdr.innet.group": group},
        "InnetIngress.member",
        {**params, **rest},
    )


def test_write_read_and_per_update_codes(innet: Innet, switches: list[Switch]) -> None:
    sw = switches[0]
    with SwitchConnection("s0", sw.address, DEVICE_ID) as conn:
        conn.connect(deadline_after(10))
        assert conn.primary
        conn.set_pipeline(innet.p4info, innet.source)
        assert conn.get_p4info() == innet.p4info
        schema = Schema(innet.p4info)
        conn.write([insert(member(schema, 0)), insert(schema.multicast_group(1, [(1, 1)]))])
        got = conn.read([member(schema, 0)])
        assert len(got) == 1 and got[0].table_entry.match == member(schema, 0).table_entry.match
        with pytest.raises(WriteError) as caught:
            conn.write(
                [
                    insert(member(schema, 1)),  # fine
                    insert(member(schema, 0)),  # exists
                    delete(
                        schema.table_entry(
                            "InnetIngress.membership",
                            {"hdr.innet.job": 9, "hdr.innet.round": 9, "hdr.innet.group": 9},
                        )
                    ),  # missing
                ]
            )
        err = caught.value
        assert err.switch == "s0" and err.succeeded == (0,)
        assert [(f.index, f.code) for f in err.failures] == [
            (1, code_pb2.ALREADY_EXISTS),
            (2, code_pb2.NOT_FOUND),
        ]
        text = str(err)
        assert "switch s0 refused 2 of 3 updates" in text
        assert (
            "#1 INSERT InnetIngress.membership [hdr.innet.job=1" in text
            and "ALREADY_EXISTS" in text
        )
        assert sw.entry_count("InnetIngress.membership") == 2


def test_a_second_controller_with_a_higher_election_id_takes_over(
    innet: Innet, switches: list[Switch]
) -> None:
    sw = switches[0]
    with SwitchConnection("s0", sw.address, DEVICE_ID, election_id=(0, 1)) as low:
        low.connect(deadline_after(10))
        with SwitchConnection("s0", sw.address, DEVICE_ID, election_id=(0, 9)) as high:
            high.connect(deadline_after(10))
            deadline = deadline_after(5)
            while low.primary:  # the old primary is told it is a backup now
                assert time.monotonic() < deadline, "the first controller was not demoted"
                time.sleep(0.01)
            with pytest.raises(ArbitrationError, match="not primary"):
                low.set_pipeline(innet.p4info, innet.source)
            again = SwitchConnection("s0", sw.address, DEVICE_ID, election_id=(0, 2))
            with pytest.raises(ArbitrationError) as caught:
                again.connect(deadline_after(10))
            assert "another controller is primary with election id 9 (ours is 2)" in str(
                caught.value
            )
            assert "s0" in str(caught.value)


def test_an_absent_switch_is_reported_with_its_address() -> None:
    conn = SwitchConnection("nowhere", "127.0.0.1:1", DEVICE_ID)
    with pytest.raises(
        SwitchUnreachable, match=re.escape("nowhere: no P4Runtime server answers at 127.0.0.1:1")
    ):
        conn.connect(deadline_after(0.5))


def test_a_restart_ends_the_stream_and_reconnect_arbitrates_again(
    innet: Innet, switches: list[Switch]
) -> None:
    sw = switches[0]
    with SwitchConnection("s0", sw.address, DEVICE_ID) as conn:
        conn.connect(deadline_after(10))
        sw.restart()
        deadline = deadline_after(5)
        while conn.alive:
            assert time.monotonic() < deadline, "the connection did not notice the restart"
            time.sleep(0.01)
        conn.reconnect(deadline_after(10))
        assert conn.alive and conn.primary
        conn.set_pipeline(innet.p4info, innet.source)


def test_packet_out_reaches_the_switch(innet: Innet, switches: list[Switch]) -> None:
    sw = switches[0]
    with SwitchConnection("s0", sw.address, DEVICE_ID) as conn:
        conn.connect(deadline_after(10))
        conn.set_pipeline(innet.p4info, innet.source)
        conn.packet_out(b"\x01\x02\x03")
        deadline = deadline_after(5)
        while not sw.packets_out:
            assert time.monotonic() < deadline, "the packet-out never reached the switch"
            time.sleep(0.01)
        assert sw.packets_out == [b"\x01\x02\x03"]
