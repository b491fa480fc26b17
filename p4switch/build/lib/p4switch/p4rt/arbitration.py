"""Client arbitration: which StreamChannel is the primary controller of the device.

As the P4Runtime specification has it: the primary is the live stream whose election id equals
the highest election id ever received (for the device and role); when it goes away the device
has no primary until a client sends an election id at least that high. Every change of primary
is announced to every stream (OK to the primary, ALREADY_EXISTS to backups while there is a
primary, NOT_FOUND while there is none). p4switch supports the default role only.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass, field

from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import ArbitrationRefusedError

log = logging.getLogger(__name__)

PACKET_IN_BACKLOG = 1024  # packet-ins queued for a slow client before newer ones are dropped
CLOSE = object()  # queued last on a Session's outbox: its response stream ends


def election_id(msg: p4runtime_pb2.Uint128) -> int:
    return int((msg.high << 64) | msg.low)


def _uint128(value: int) -> p4runtime_pb2.Uint128:
    return p4runtime_pb2.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


@dataclass(eq=False)
class Session:
    """One StreamChannel: what it sends back, and who it said it is once it arbitrated."""

    outbox: queue.Queue[object] = field(default_factory=queue.Queue)
    arbitrated: bool = False
    device_id: int = 0
    election_id: int | None = None  # None: no election id, never primary
    closed: bool = False

    def send(self, item: object) -> None:
        if not self.closed:
            self.outbox.put(item)

    def send_packet_in(self, msg: p4runtime_pb2.StreamMessageResponse) -> bool:
        """Queue a packet-in unless the client is too far behind; False if dropped."""
        if self.closed or self.outbox.qsize() >= PACKET_IN_BACKLOG:
            return False
        self.outbox.put(msg)
        return True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.outbox.put(CLOSE)


class Arbiter:
    """The live streams of one device and its primary (default role)."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._sessions: list[Session] = []
        self._highest: int | None = None  # the highest election id ever received

    def update(self, session: Session, msg: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """Apply an arbitration update received on `session` and notify the streams concerned.

        Raises ArbitrationRefusedError when the stream must be ended.
        """
        if msg.HasField("role") and (msg.role.name or msg.role.id or msg.role.HasField("config")):
            raise ArbitrationRefusedError(
                code_pb2.UNIMPLEMENTED, "p4switch supports the default role only"
            )
        eid = election_id(msg.election_id) if msg.HasField("election_id") else None
        with self._lock:
            if not session.arbitrated:
                if msg.device_id != self.device_id:
                    raise ArbitrationRefusedError(
                        code_pb2.NOT_FOUND,
                        f"no device {msg.device_id} here (this is device {self.device_id})",
                    )
            elif msg.device_id != session.device_id:
                raise ArbitrationRefusedError(
                    code_pb2.FAILED_PRECONDITION, "a stream cannot change its device id"
                )
            if eid is not None and any(
                s.election_id == eid for s in self._sessions if s is not session
            ):
                raise ArbitrationRefusedError(
                    code_pb2.INVALID_ARGUMENT, f"election id {eid} is used by another client"
                )
            was_primary = self._primary() is session
            if not session.arbitrated:
                session.arbitrated, session.device_id = True, msg.device_id
                self._sessions.append(session)
            session.election_id = eid
            if eid is not None and (self._highest is None or eid >= self._highest):
                self._highest = eid
                log.info("client with election id %d is primary", eid)
                self._notify(self._sessions)
            elif was_primary:
                log.info("the primary stepped down to election id %s: no primary", eid)
                self._notify(self._sessions)
            else:
                self._notify([session])

    def remove(self, session: Session) -> None:
        """Forget a stream that ended; if it was the primary, tell the others there is none."""
        with self._lock:
            if session not in self._sessions:
                return
            was_primary = self._primary() is session
            self._sessions.remove(session)
            if was_primary:
                log.info("the primary client went away: no primary until a client claims it")
                self._notify(self._sessions)

    def is_primary(self, eid: int | None) -> bool:
        """Whether `eid` (from a Write or SetForwardingPipelineConfig) is the primary's."""
        with self._lock:
            primary = self._primary()
            return primary is not None and eid is not None and primary.election_id == eid

    def primary(self) -> Session | None:
        with self._lock:
            return self._primary()

    def _primary(self) -> Session | None:
        if self._highest is None:
            return None
        return next((s for s in self._sessions if s.election_id == self._highest), None)

    def _notify(self, sessions: list[Session]) -> None:
        primary = self._primary()
        for s in sessions:
            update = p4runtime_pb2.MasterArbitrationUpdate(device_id=self.device_id)
            if self._highest is not None:
                update.election_id.CopyFrom(_uint128(self._highest))
            if s is primary:
                update.status.CopyFrom(status_pb2.Status(code=code_pb2.OK, message="primary"))
            elif primary is not None:
                update.status.CopyFrom(
                    status_pb2.Status(code=code_pb2.ALREADY_EXISTS, message="a primary exists")
                )
            else:
                update.status.CopyFrom(
                    status_pb2.Status(code=code_pb2.NOT_FOUND, message="there is no primary")
                )
            s.send(p4runtime_pb2.StreamMessageResponse(arbitration=update))
