"""The forwarding benchmark's programs and the entries that forward between its two hosts (h1 on
port 1, h2 on port 2), as P4Runtime updates: what a controller writes to p4switch and to BMv2
alike, and what an in-process switch takes.

    >>> from p4switch import compile_file
    >>> from controller.p4rt.schema import Schema
    >>> updates = forwarding_updates(Schema(compile_file(PROGRAMS["l2"]).p4info), "l2")
    >>> len(updates), updates[0].entity.table_entry.action.action.params[0].value
    (2, b'\\x01')
"""

from __future__ import annotations

from pathlib import Path

from p4.v1 import p4runtime_pb2
from p4switch import EXAMPLES

from controller.p4rt.schema import Schema, insert

# l2: the example l2.p4; agg32: p4switch's test program, 32 int32 lanes added into registers
PROGRAMS = {
    "l2": EXAMPLES / "l2.p4",
    "agg32": Path(__file__).resolve().parents[1] / "p4switch" / "tests" / "programs" / "agg32.p4",
}
HOSTS = {1: ("02:00:0a:00:00:01", "10.0.0.1"), 2: ("02:00:0a:00:00:02", "10.0.0.2")}
# program -> (table, match field, action, its parameter, which of a host's addresses is the key)
ENTRIES = {
    "l2": ("L2Ingress.dmac", "hdr.ethernet.dstAddr", "L2Ingress.forward", "port", 0),
    "agg32": ("AggIngress.route", "hdr.ipv4.dstAddr", "AggIngress.forward", "port", 1),
}


def address_key(address: str) -> int:
    """A MAC (02:00:...) or an IPv4 address (10.0.0.1) as the integer a match carries."""
    if ":" in address:
        return int(address.replace(":", ""), 16)
    return int.from_bytes(bytes(int(x) for x in address.split(".")), "big")


def forwarding_updates(schema: Schema, program: str) -> list[p4runtime_pb2.Update]:
    """One insert per host: frames for it leave on its port."""
    table, field, action, param, which = ENTRIES[program]
    return [
        insert(
            schema.table_entry(table, {field: address_key(addresses[which])}, action, {param: port})
        )
        for port, addresses in HOSTS.items()
    ]
