"""The controller's P4Runtime client: one switch (`connection`), names to ids (`schema`), and
many switches programmed all-or-none (`fabric`)."""

from controller.p4rt.connection import (
    ArbitrationError,
    ConnectionLost,
    P4RuntimeError,
    PacketIn,
    SwitchConnection,
    SwitchUnreachable,
    UpdateFailure,
    WriteError,
    deadline_after,
)
from controller.p4rt.fabric import Fabric, FabricError, InstallError
from controller.p4rt.schema import Lpm, Schema, SchemaError, Ternary

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
