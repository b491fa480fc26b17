"""The controller's P4Runtime client: one switch (`connection`), names to ids (`schema`), and
many switches programmed all-or-none (`fabric`)."""

from controller.p4rt.connection import PacketIn, SwitchConnection, deadline_after
from controller.p4rt.exceptions import (
    ArbitrationError,
    ConnectionLost,
    FabricError,
    InstallError,
    P4RuntimeError,
    SchemaError,
    SwitchUnreachable,
    UpdateFailure,
    WriteError,
)
from controller.p4rt.fabric import Fabric
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
    "Schema",
    "SchemaError",
    "SwitchConnection",
    "SwitchUnreachable",
    "Ternary",
    "UpdateFailure",
    "WriteError",
    "deadline_after",
]
