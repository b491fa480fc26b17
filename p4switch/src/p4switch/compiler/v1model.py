"""The v1model architecture around the generated code: what BMv2 simple_switch does between
the blocks.

parser -> verify checksum -> ingress -> packet replication -> egress (per copy) -> compute
checksum -> deparser. After ingress, as simple_switch: a requested clone goes first (I2E: the
packet as it entered ingress, parsed again, user metadata reset but for the preserved field
list, instance_type 1), then the last digest ingress made goes to `state.digests` (whatever
becomes of the packet), then a resubmit (the packet as it entered, through the pipeline again
with the preserved field list, instance_type 6; this copy goes no further), then multicast when
`mcast_grp` is set (one copy per replica of the group, instance_type 5, `egress_rid` = the
replica's instance), else drop when `egress_spec` is 511, else unicast to `egress_spec`. After
egress: an E2E clone (the packet as egress left it, metadata reset, instance_type 2), then drop
if `egress_spec` is 511, else deparse, then recirculate (the deparsed packet through the
pipeline again, instance_type 4, same ingress port, the field list preserved) or send.

Packets the parser rejects are dropped and counted (`parser_reject="drop"`, the default), or
continue to ingress with `parser_error` set as BMv2 does (`parser_reject="ingress"`).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any

from p4switch import runtime
from p4switch.compiler.layout import (
    CLONE,
    CLONE_FIELD_LIST,
    CLONE_SESSION,
    PAYLOAD,
    RECIRCULATE,
    RESUBMIT,
    TRUNCATE,
)
from p4switch.compiler.module import CompiledCode

log = logging.getLogger(__name__)

DROP_PORT = 511
NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRCULATED, REPLICATION, RESUBMITTED = 0, 1, 2, 4, 5, 6
MAX_EGRESS_CLONES = 8  # an egress clone of an egress clone ... stops here
MAX_PASSES = 16  # a packet resubmitted or recirculated more often than this is dropped


class Pipeline:
    """Runs packets through the compiled program against one `SwitchState`.

    `process` never raises: a packet the program cannot handle is dropped and counted under
    `counts` (parser errors as `parser_error.<name>`, drops as `drop.<reason>`). `clock`
    (nanoseconds, `time.monotonic_ns` unless given) is what the global timestamps count on.
    """

    def __init__(
        self,
        code: CompiledCode,
        state: runtime.SwitchState,
        *,
        cpu_port: int | None = None,
        parser_reject: str = "drop",
        seed: int | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        if parser_reject not in ("drop", "ingress"):
            raise ValueError(f"parser_reject must be 'drop' or 'ingress', not {parser_reject!r}")
        if cpu_port is not None and not 0 <= cpu_port < DROP_PORT:
            raise ValueError(f"cpu_port {cpu_port} is outside 0..510")
        self.state = state
        self.cpu_port = cpu_port
        self.counts: dict[str, int] = {}
        self._code = code
        self._drop_rejected = parser_reject == "drop"
        ns = code.bind(state, random.Random(seed))
        self._payload: list[bytes] = ns["PAYLOAD_DATA"]  # for checksums with payload
        self._digest: list[tuple[str, tuple[int, ...]] | None] = ns["DIGEST"]
        self._parse: Callable[[list[Any], bytes], int] = ns["parse"]
        # an empty control is not called at all (None): a call costs more than the check
        empty = code.empty_controls
        self._verify: Callable[[list[Any]], None] | None = (
            None if "verify_checksum" in empty else ns["C_verify_checksum"]
        )
        self._ingress: Callable[[list[Any]], None] = ns["C_ingress"]
        self._egress_fn: Callable[[list[Any]], None] | None = (
            None if "egress" in empty else ns["C_egress"]
        )
        self._compute: Callable[[list[Any]], None] | None = (
            None if "compute_checksum" in empty else ns["C_compute_checksum"]
        )
        self._deparse: Callable[[list[Any], list[Any]], None] = ns["deparse"]
        self._template = list(code.template)
        sm = code.sm
        self._ingress_port = sm["ingress_port"]
        self._egress_spec = sm["egress_spec"]
        self._egress_port = sm["egress_port"]
        self._instance_type = sm["instance_type"]
        self._packet_length = sm["packet_length"]
        self._mcast_grp = sm["mcast_grp"]
        self._egress_rid = sm["egress_rid"]
        self._parser_error = sm["parser_error"]
        self._ingress_ts = sm["ingress_global_timestamp"]
        self._egress_ts = sm["egress_global_timestamp"]
        self._metadata = tuple(code.meta_slots) + tuple(sm.values())
        self._clock = clock if clock is not None else time.monotonic_ns
        self._start = self._clock()

    # --- the packet path ----------------------------------------------------------------------

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet; the (port, frame) pairs it produces, in order."""
        try:
            with self.state.lock:
                return self._process(ingress_port, data)
        except Exception:  # a bug in p4switch, not a bad packet: keep the switch running
            log.exception("packet from port %d: processing failed", ingress_port)
            self._count("drop.internal_error")
            return []

    def _process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        self._pass(ingress_port, data, None, out, 0)
        return out

    def _pass(
        self,
        ingress_port: int,
        data: bytes,
        again: tuple[int, list[Any], int] | None,
        out: list[tuple[int, bytes]],
        passes: int,
    ) -> None:
        """One pass through the pipeline; `again` is (instance type, the state of the pass
        before, its field list) for a resubmitted or recirculated packet."""
        S = self._template[:]
        if again is not None:
            kind, before, field_list = again
            for slot in self._code.field_lists.get(field_list, ()):
                S[slot] = before[slot]
            S[self._instance_type] = kind
        S[self._ingress_port] = ingress_port
        S[self._packet_length] = len(data)
        S[self._ingress_ts] = (self._clock() - self._start) // 1000
        off = self._parse(S, data)
        if off < 0:
            self._count("parser_error." + self._error_name(S[self._parser_error]))
            if self._drop_rejected:
                return
        else:
            S[PAYLOAD] = off
        if self._verify is not None:
            self._payload[0] = data[S[PAYLOAD] :]
            self._verify(S)
        self._digest[0] = None
        self._ingress(S)
        if S[CLONE]:
            self._clone_i2e(S, data, out)
        if self._digest[0] is not None:  # as simple_switch: the last digest of ingress, sent
            self.state.digests.learn(*self._digest[0])  # whatever becomes of the packet
        if S[RESUBMIT] >= 0:  # the packet as it came in, through ingress again
            if self._more_passes(passes, "drop.resubmit_depth"):
                self._pass(ingress_port, data, (RESUBMITTED, S, S[RESUBMIT]), out, passes + 1)
            return
        group = S[self._mcast_grp]
        if group:
            replicas = self.state.pre.groups.get(group)
            if not replicas:
                self._count("drop.multicast_group_empty")
            for r in replicas or ():
                copy = S[:]
                copy[self._egress_port] = r.egress_port
                copy[self._egress_rid] = r.instance
                copy[self._instance_type] = REPLICATION
                self._egress(copy, data, out, 0, 0, passes)
        elif S[self._egress_spec] == DROP_PORT:
            self._count("drop.ingress")
        else:
            S[self._egress_port] = S[self._egress_spec]
            self._egress(S, data, out, 0, 0, passes)

    def _more_passes(self, passes: int, reason: str) -> bool:
        if passes + 1 >= MAX_PASSES:
            self._count(reason)
            return False
        return True

    def _egress(
        self,
        S: list[Any],
        data: bytes,
        out: list[tuple[int, bytes]],
        cut: int,
        depth: int,
        passes: int = 0,
    ) -> None:
        S[self._egress_spec] = 0
        S[self._egress_ts] = (self._clock() - self._start) // 1000
        if self._egress_fn is not None:
            self._egress_fn(S)
        if S[CLONE]:
            self._clone_e2e(S, data, out, depth)
        if S[self._egress_spec] == DROP_PORT:
            self._count("drop.egress")
            return
        if self._compute is not None:
            self._payload[0] = data[S[PAYLOAD] :]
            self._compute(S)
        parts: list[bytes] = []
        self._deparse(S, parts)
        parts.append(data[S[PAYLOAD] :])
        frame = b"".join(parts)
        limit = S[TRUNCATE]
        if limit >= 0:
            frame = frame[:limit]
        if cut:
            frame = frame[:cut]
        if S[RECIRCULATE] >= 0:  # the packet as egress left it, through ingress again
            if self._more_passes(passes, "drop.recirculate_depth"):
                port = S[self._ingress_port]
                self._pass(port, frame, (RECIRCULATED, S, S[RECIRCULATE]), out, passes + 1)
            return
        out.append((S[self._egress_port], frame))

    # --- clones -------------------------------------------------------------------------------

    def _session(self, S: list[Any]) -> runtime.CloneSession | None:
        session = self.state.pre.sessions.get(S[CLONE_SESSION])
        if session is None:
            self._count("drop.clone_session_missing")
        return session

    def _fresh(self, S: list[Any]) -> list[Any]:
        """A copy of `S` with every metadata field reset, but for the preserved field list."""
        copy = S[:]
        template = self._template
        for slot in self._metadata:
            copy[slot] = template[slot]
        for slot in self._code.field_lists.get(S[CLONE_FIELD_LIST], ()):
            copy[slot] = S[slot]
        copy[CLONE] = 0
        copy[TRUNCATE] = -1
        copy[RECIRCULATE] = -1
        return copy

    def _clone_i2e(self, S: list[Any], data: bytes, out: list[tuple[int, bytes]]) -> None:
        S[CLONE] = 0
        session = self._session(S)
        if session is None:
            return
        clone = self._template[:]
        for slot in self._code.field_lists.get(S[CLONE_FIELD_LIST], ()):
            clone[slot] = S[slot]
        off = self._parse(clone, data)  # the packet as it entered ingress, parsed again
        if off < 0:
            self._count("parser_error." + self._error_name(clone[self._parser_error]))
            if self._drop_rejected:
                return
        else:
            clone[PAYLOAD] = off
        clone[self._instance_type] = INGRESS_CLONE
        for r in session.replicas:
            copy = clone[:]
            copy[self._egress_port] = r.egress_port
            copy[self._egress_rid] = r.instance
            self._egress(copy, data, out, session.packet_length_bytes, 0)

    def _clone_e2e(
        self, S: list[Any], data: bytes, out: list[tuple[int, bytes]], depth: int
    ) -> None:
        S[CLONE] = 0
        if depth >= MAX_EGRESS_CLONES:
            self._count("drop.clone_depth")
            return
        session = self._session(S)
        if session is None:
            return
        clone = self._fresh(S)
        clone[self._instance_type] = EGRESS_CLONE
        for r in session.replicas:
            copy = clone[:]
            copy[self._egress_port] = r.egress_port
            copy[self._egress_rid] = r.instance
            self._egress(copy, data, out, session.packet_length_bytes, depth + 1)

    # --- bookkeeping -------------------------------------------------------------------------

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def _error_name(self, code: int) -> str:
        errors = self._code.errors
        return errors[code] if 0 <= code < len(errors) else str(code)
