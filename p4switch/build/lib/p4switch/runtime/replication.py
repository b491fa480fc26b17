"""The packet replication engine's configuration: multicast groups and clone sessions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from p4switch.exceptions import AlreadyExists, InvalidArgument, NotFound


@dataclass(frozen=True)
class Replica:
    egress_port: int
    instance: int  # the replica id (egress_rid in v1model)


@dataclass(frozen=True)
class CloneSession:
    id: int
    replicas: tuple[Replica, ...]
    class_of_service: int = 0
    packet_length_bytes: int = 0  # 0: no truncation


@dataclass
class PacketReplication:
    """Multicast groups and clone sessions (the packet replication engine's configuration)."""

    groups: dict[int, tuple[Replica, ...]] = field(default_factory=dict)
    sessions: dict[int, CloneSession] = field(default_factory=dict)
    version: int = field(default=0, compare=False)  # bumped by every change

    def insert_group(self, group_id: int, replicas: Sequence[Replica]) -> None:
        self._check_group(group_id, replicas)
        if group_id in self.groups:
            raise AlreadyExists(f"multicast group {group_id} exists")
        self.groups[group_id] = tuple(replicas)
        self.version += 1

    def modify_group(self, group_id: int, replicas: Sequence[Replica]) -> None:
        self._check_group(group_id, replicas)
        if group_id not in self.groups:
            raise NotFound(f"no multicast group {group_id}")
        self.groups[group_id] = tuple(replicas)
        self.version += 1

    def delete_group(self, group_id: int) -> None:
        if self.groups.pop(group_id, None) is None:
            raise NotFound(f"no multicast group {group_id}")
        self.version += 1

    def insert_session(self, session: CloneSession) -> None:
        self._check_session(session)
        if session.id in self.sessions:
            raise AlreadyExists(f"clone session {session.id} exists")
        self.sessions[session.id] = session
        self.version += 1

    def modify_session(self, session: CloneSession) -> None:
        self._check_session(session)
        if session.id not in self.sessions:
            raise NotFound(f"no clone session {session.id}")
        self.sessions[session.id] = session
        self.version += 1

    def delete_session(self, session_id: int) -> None:
        if self.sessions.pop(session_id, None) is None:
            raise NotFound(f"no clone session {session_id}")
        self.version += 1

    @staticmethod
    def _check_group(group_id: int, replicas: Sequence[Replica]) -> None:
        if group_id <= 0:
            raise InvalidArgument(f"multicast group id must be positive, got {group_id}")
        if len(set(replicas)) != len(replicas):
            raise InvalidArgument(f"multicast group {group_id} lists a replica twice")

    @staticmethod
    def _check_session(session: CloneSession) -> None:
        if session.id <= 0:
            raise InvalidArgument(f"clone session id must be positive, got {session.id}")
        if len(set(session.replicas)) != len(session.replicas):
            raise InvalidArgument(f"clone session {session.id} lists a replica twice")
        if session.packet_length_bytes < 0:
            raise InvalidArgument(f"clone session {session.id}: negative truncation length")
