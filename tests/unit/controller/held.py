"""Writes held by an in-process p4switch server past the client's deadline, then applied."""

from __future__ import annotations

import threading

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from controller.p4rt import Schema
from controller.p4rt.schema import insert
from tests.unit.controller.conftest import Switch, handled_by

HOLD_LIMIT_S = 30.0  # a held write is let go by then at the latest (a test that forgot it)


class HeldWrites:
    """From the `after`-th Write on, the switch holds each one until `release()` and then
    applies it, past the client's deadline: what a server does that runs expired work
    (p4switch did, while a slow program compiled under its write lock), whatever this server's
    own policy. `ran` is set once a held write has been carried out."""

    def __init__(self, sw: Switch, monkeypatch: pytest.MonkeyPatch, after: int = 0) -> None:
        self.gate, self.ran = threading.Event(), threading.Event()
        self.seen = 0
        device = sw.device  # a restarted switch is another: the held writes stay with this one
        assert device is not None

        def holding(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
            def write(
                request: p4runtime_pb2.WriteRequest, context: grpc.ServicerContext
            ) -> p4runtime_pb2.WriteResponse:
                self.seen += 1
                if self.seen <= after:
                    return handler.unary_unary(request, context)
                self.gate.wait(HOLD_LIMIT_S)
                try:
                    device.write(request.updates)  # no deadline: it runs however late it is
                finally:
                    self.ran.set()
                return p4runtime_pb2.WriteResponse()

            return handled_by(handler, write)

        monkeypatch.setitem(sw.hooks.wrap, "Write", holding)

    def release(self) -> None:
        self.gate.set()


def tree_round(schema: Schema, group: int = 2) -> list[p4runtime_pb2.Update]:
    """What a round installs on a switch of a tree: two multicast groups and a tree entry
    replicating to them (the groups a round shares with the next)."""
    tree = schema.table_entry(
        "InnetIngress.tree",
        {"hdr.innet.job": 1, "hdr.innet.round": group, "hdr.innet.group": 0, "hdr.innet.src": 0},
        "InnetIngress.replicate",
        {"wan_grp": group, "wan_local_grp": group + 1},
    )
    return [
        insert(schema.multicast_group(group, [(3, 0)])),
        insert(schema.multicast_group(group + 1, [(1, 1), (3, 0)])),
        insert(tree),
    ]


def groups(sw: Switch) -> dict[int, tuple[tuple[int, int], ...]]:
    return sw.groups()


def trees(sw: Switch) -> int:
    return sw.entry_count("InnetIngress.tree")


def direct_write(sw: Switch, updates: list[p4runtime_pb2.Update]) -> None:
    """Change a switch's state behind the controller's back (another program, an old write)."""
    sw.write(updates)
