"""p4switch's P4Runtime server: one device programmed over P4Runtime 1.4 (`p4.v1`) by gRPC.

`server` holds the device (pipeline configuration, write and read dispatch, streams, packet
I/O), `program` what a pipeline configuration becomes there, `service` is its gRPC face and
`handlers` its method table (requests that do not decode are INVALID_ARGUMENT); `compiling`
builds pushed programs in a bounded child process, `deadline` keeps expired work from running,
`report` keeps error reports under gRPC's metadata limit. The other modules translate messages
to and from the switch's run-time state (`p4switch.runtime`): `schema` (a P4Info bound to the
program), `codec`, `write`, `read`, `reconcile`, `packetio` and `arbitration` (primary
election).
"""

from p4switch.p4rt.program import LoadedProgram, Loader
from p4switch.p4rt.server import P4RuntimeServer

__all__ = ["LoadedProgram", "Loader", "P4RuntimeServer"]
