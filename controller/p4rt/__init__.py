"""The controller's P4Runtime client: one switch (`connection`, its arbitration in
`arbitration`), names to ids (`schema`), many switches programmed all-or-none (`fabric`), and a
switch's state read back and made the desired one (`reconcile`)."""

from controller.p4rt.connection import PacketIn, SwitchConnection, deadline_after
from controller.p4rt.exceptions import (
    ArbitrationError,
    ConnectionLost,
    FabricError,
    InstallError,
    P4RuntimeError,
    ReconcileError,
    SchemaError,
    SwitchUnreachable,
    UpdateFailure,
    WriteError,
    WriteOutcomeUnknown,
)
from controller.p4rt.fabric import Fabric, SwitchStatus
from controller.p4rt.reconcile import Reconciled
from controller.p4rt.schema import Lpm, Schema, Ternary

__all__ = [
    "ArbitrationError",
    "ConnectionLost",
    "Fabric",
    "FabricError",
    "InstallError",
    "Lpm",
    "P4RuntimeError",
    "PacketIn",
    "ReconcileError",
    "Reconciled",
    "Schema",
    "SchemaError",
    "SwitchConnection",
    "SwitchStatus",
    "SwitchUnreachable",
    "Ternary",
    "UpdateFailure",
    "WriteError",
    "WriteOutcomeUnknown",
    "deadline_after",
]
