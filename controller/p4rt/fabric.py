"""Many switches under one controller: all-or-none installation, remembered state, reinstall.

    fabric = Fabric(connections, p4info, p4_source)
    fabric.connect(deadline_after(10))        # every switch: primary, pipeline set (empty)
    fabric.install({"s1": [...], "s2": [...]})  # every switch takes its updates, or none does
    ...
    for name in fabric.lost():                # streams that ended: the switch restarted
        fabric.reinstall(name, deadline_after(10))

`install` writes to one switch after the other. When a switch refuses any update, what was
already written (on the switches before it, and the accepted part of its own batch) is undone
with inverse updates (INSERT <-> DELETE; MODIFY and DELETE restore the entity read from the
switch just before the write) and `InstallError` names the switch and the refused updates. This
is all-or-none in outcome, not in time: other switches run with the new entries between their
write and the rollback.

A write that ends without telling what it did (deadline passed, server gone: the switch may
apply it later) is never taken as "nothing applied": that switch is marked diverged, no inverse
is guessed for it, and before the next install to it (and from the watchdog) `reconcile` reads
its tables, multicast groups and clone sessions back and makes them the desired state. A switch
whose primary another client took is diverged too (that client may have written), and an
install claims primary back first when the switch announces there is none.

The fabric remembers what it installed on every switch (the desired state), so that a switch
that restarted with empty tables gets the pipeline and every remembered entity back. A fabric
made with `clear_groups=True` deletes every multicast group a switch still has before it sets
the pipeline again: BMv2 keeps the replication nodes of groups across a pipeline push, so a
live switch given the same groups again would send every copy twice (behavioral-model#891).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt.connection import SwitchConnection, deadline_after
from controller.p4rt.entities import (
    Key,
    entity_key,
    inverse,
    key_query,
    replay_update,
)
from controller.p4rt.exceptions import (
    ArbitrationError,
    FabricError,
    InstallError,
    P4RuntimeError,
    ReconcileError,
    UpdateFailure,
    WriteError,
    WriteOutcomeUnknown,
)
from controller.p4rt.reconcile import Reconciled, reconcile
from controller.p4rt.schema import Schema, delete

log = logging.getLogger(__name__)

__all__ = ["Fabric", "SwitchStatus", "entity_key", "inverse", "key_query", "replay_update"]

CLAIM_TIMEOUT_S = 5.0  # how long an install waits for the switch to answer a claim of primary
_OTHER_PRIMARY = "another client was primary and may have written to it"


@dataclass(frozen=True, slots=True)
class SwitchStatus:
    """What the fabric knows of a switch's state beyond its connection."""

    diverged: bool = False  # its entities may differ from the desired state
    write_timed_out: bool = False  # a write to it ended with an unknown outcome
    reason: str = ""  # why, while either is set
    reconcile_failures: int = 0  # failed reconciles since it diverged


class Fabric:
    """SwitchConnections by name, programmed with one P4 program, with their desired state."""

    def __init__(
        self,
        connections: Iterable[SwitchConnection],
        p4info: p4info_pb2.P4Info,
        device_config: bytes,
        *,
        clear_groups: bool = False,
    ) -> None:
        self.clear_groups = clear_groups
        self._connections: dict[str, SwitchConnection] = {}
        for conn in connections:
            if conn.name in self._connections:
                raise FabricError(f"two connections are named {conn.name!r}")
            self._connections[conn.name] = conn
        self.p4info = p4info
        self.device_config = device_config
        self.schema = Schema(p4info)
        self._desired: dict[str, dict[Key, p4runtime_pb2.Entity]] = {
            name: {} for name in self._connections
        }
        self._status = {name: SwitchStatus() for name in self._connections}
        self._losses = {name: 0 for name in self._connections}  # primary losses accounted for
        self._lock = threading.RLock()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._connections)

    def connection(self, name: str) -> SwitchConnection:
        try:
            return self._connections[name]
        except KeyError:
            known = ", ".join(self._connections)
            raise FabricError(f"no switch {name!r} in the fabric; known: {known}") from None

    def connect(self, deadline: float) -> None:
        """Connect to every switch, become primary and set the pipeline (tables start empty)."""
        with self._lock:
            for conn in self._connections.values():  # every stream first: `deadline` bounds
                conn.connect(deadline)  # connecting, not the pipeline pushes (each its own)
            for name, conn in self._connections.items():
                conn.set_pipeline(self.p4info, self.device_config)
                self._desired[name].clear()
                self._settled(name)

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()

    def installed(self, name: str) -> tuple[p4runtime_pb2.Entity, ...]:
        """What the fabric has installed on a switch (its desired state), in installation order."""
        self.connection(name)
        with self._lock:
            return tuple(self._desired[name].values())

    def lost(self) -> tuple[str, ...]:
        """Switches whose stream ended (stopped or restarted) and that need `reinstall`."""
        return tuple(name for name, conn in self._connections.items() if not conn.alive)

    # --- what is known of each switch's state -----------------------------------------------

    def status(self, name: str) -> SwitchStatus:
        """Whether the switch may differ from the desired state, and why (never blocks)."""
        conn = self.connection(name)
        status = self._status[name]
        if conn.primary_losses > self._losses[name] and not status.diverged:
            return replace(status, diverged=True, reason=_OTHER_PRIMARY)
        return status

    def _account(self, name: str) -> None:
        """Mark the switch diverged if another client was primary since it was last settled."""
        losses = self._connections[name].primary_losses
        if losses > self._losses[name]:
            self._losses[name] = losses
            self._mark(name, _OTHER_PRIMARY)

    def diverged(self) -> tuple[str, ...]:
        """Switches whose state must be read back and reconciled before the next install."""
        return tuple(name for name in self._connections if self.status(name).diverged)

    def _mark(self, name: str, reason: str, *, timed_out: bool = False) -> None:
        old = self._status[name]
        if not old.diverged or timed_out:
            log.warning("switch %s: state diverged: %s", name, reason)
        self._status[name] = replace(
            old, diverged=True, write_timed_out=old.write_timed_out or timed_out, reason=reason
        )

    def _settled(self, name: str) -> None:
        self._status[name] = SwitchStatus()
        self._losses[name] = self._connections[name].primary_losses

    def reconcile(self, name: str) -> Reconciled:
        """Read the switch's entities back and make them the desired state (claiming primary
        first if the switch has none); ReconcileError if it cannot be done now."""
        conn = self.connection(name)
        with self._lock:
            self._account(name)
            try:
                self._claim(name)
                done = reconcile(conn, self.schema, self._desired[name])
            except P4RuntimeError as err:
                first = str(err).splitlines()[0]
                old = self._status[name]
                timed_out = isinstance(err, WriteOutcomeUnknown)
                self._mark(name, f"reconcile failed: {first}", timed_out=timed_out)
                failures = old.reconcile_failures + 1
                self._status[name] = replace(self._status[name], reconcile_failures=failures)
                raise ReconcileError(
                    f"switch {name}: its state is unknown and could not be reconciled "
                    f"(attempt {failures}): {first}"
                ) from err
            self._settled(name)
            level = logging.WARNING if done.changed else logging.INFO
            log.log(level, "switch %s: reconciled with the desired state (%s)", name, done)
            return done

    def _claim(self, name: str) -> None:
        """Be primary of the switch, or ArbitrationError (another client is primary)."""
        conn = self._connections[name]
        if conn.primary or conn.claim_primary(deadline_after(CLAIM_TIMEOUT_S)):
            return
        news = conn.announced
        holder = f"election id {news.highest}" if news is not None else "another election id"
        raise ArbitrationError(
            f"switch {name}: another client is primary ({holder}); nothing was written. The "
            "controller does not fight a live primary: it asks again once that client's "
            "stream ends"
        )

    # --- installation -----------------------------------------------------------------------

    def install(self, changes: Mapping[str, Sequence[p4runtime_pb2.Update]]) -> None:
        """Apply each switch's updates, on every switch or (after a rollback) on none.

        A diverged switch is reconciled first, and a switch whose primary was lost is claimed
        back first; if either cannot be done, nothing is written anywhere.
        """
        with self._lock:
            for name in changes:
                self.connection(name)
            targets = [name for name, updates in changes.items() if updates]
            lost = [name for name in targets if not self._connections[name].alive]
            if lost:
                raise FabricError(
                    f"switches {lost} lost their connection (restarted?); nothing was written: "
                    "call Fabric.reinstall for each, then install again"
                )
            for name in targets:
                self._claim(name)
                self._account(name)
                if self._status[name].diverged:
                    self.reconcile(name)
            undo: list[tuple[str, list[p4runtime_pb2.Update]]] = []
            for name in targets:
                updates = changes[name]
                conn = self._connections[name]
                previous = self._previous(conn, updates)
                try:
                    conn.write(updates)
                except WriteOutcomeUnknown as err:
                    self._mark(name, str(err).splitlines()[0], timed_out=True)
                    self._rollback(name, err, (), undo, {name: f"write ended with {err.code}"})
                except P4RuntimeError as err:
                    accepted = err.succeeded if isinstance(err, WriteError) else ()
                    own = _inverses(updates, previous, accepted)
                    failures = err.failures if isinstance(err, WriteError) else ()
                    self._check_refusals(name, failures)
                    self._rollback(name, err, failures, [*undo, (name, own)])
                undo.append((name, _inverses(updates, previous, range(len(updates)))))
            for name in targets:
                self._remember(name, changes[name])

    def _check_refusals(self, name: str, failures: Sequence[UpdateFailure]) -> None:
        """Refusals that contradict the desired state show that the switch differs from it."""
        desired = self._desired[name]
        for f in failures:
            key = entity_key(f.update.entity)
            exists = f.update.type == p4runtime_pb2.Update.INSERT and key not in desired
            gone = f.update.type != p4runtime_pb2.Update.INSERT and key in desired
            if (exists and f.code == code_pb2.ALREADY_EXISTS) or (
                gone and f.code == code_pb2.NOT_FOUND
            ):
                self._mark(
                    name,
                    f"it refused update #{f.index} with {f.code_name}: its state "
                    "differs from the controller's",
                )
                return

    def _previous(
        self, conn: SwitchConnection, updates: Sequence[p4runtime_pb2.Update]
    ) -> list[p4runtime_pb2.Entity | None]:
        """For each MODIFY and DELETE, the entity its key holds now (None for INSERTs)."""
        previous: list[p4runtime_pb2.Entity | None] = []
        for update in updates:
            if update.type == p4runtime_pb2.Update.INSERT:
                previous.append(None)
                continue
            key = entity_key(update.entity)
            try:
                found = [e for e in conn.read([key_query(update.entity)]) if entity_key(e) == key]
            except P4RuntimeError:
                found = []
            remembered = self._desired[conn.name].get(key)
            previous.append(found[0] if found else remembered)
        return previous

    def _rollback(
        self,
        switch: str,
        cause: P4RuntimeError,
        failures: Sequence[UpdateFailure],
        undo: list[tuple[str, list[p4runtime_pb2.Update]]],
        unknown: Mapping[str, str] | None = None,
    ) -> None:
        """Undo the writes whose outcome is known; mark diverged every switch it fails on."""
        rolled_back: list[str] = []
        unrestored: dict[str, str] = dict(unknown or {})
        for name, inverses in reversed(undo):
            try:
                self._connections[name].write(inverses)
                rolled_back.append(name)
            except P4RuntimeError as err:
                log.error("switch %s: rollback failed: %s", name, err)
                why = str(err).splitlines()[0]
                unrestored[name] = why
                self._mark(
                    name, f"rollback failed: {why}", timed_out=isinstance(err, WriteOutcomeUnknown)
                )
        log.warning("installation refused by %s, rolled back on %s", switch, rolled_back)
        raise InstallError(switch, cause, failures, rolled_back, unrestored) from cause

    def _remember(self, name: str, updates: Sequence[p4runtime_pb2.Update]) -> None:
        desired = self._desired[name]
        for update in updates:
            key = entity_key(update.entity)
            if update.type == p4runtime_pb2.Update.DELETE:
                desired.pop(key, None)
            else:
                desired[key] = update.entity

    # --- restarts ---------------------------------------------------------------------------

    def reinstall(self, name: str, deadline: float) -> None:
        """Reconnect if needed, set the pipeline again and replay every remembered entity."""
        conn = self.connection(name)
        with self._lock:
            if not conn.alive:
                conn.reconnect(deadline)
            if self.clear_groups:
                self._delete_groups(conn)
            conn.set_pipeline(self.p4info, self.device_config)
            entities = list(self._desired[name].values())
            try:
                conn.write([replay_update(e) for e in entities])
            except WriteOutcomeUnknown as err:
                self._mark(name, str(err).splitlines()[0], timed_out=True)
                raise
            self._settled(name)
            log.info("switch %s: reinstalled %d entities", name, len(entities))

    def _delete_groups(self, conn: SwitchConnection) -> None:
        """Delete every multicast group the switch has (read with a wildcard query)."""
        query = p4runtime_pb2.Entity()
        query.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        groups = conn.read([query])
        if groups:
            conn.write([delete(entity) for entity in groups])
            log.info(
                "switch %s: deleted %d multicast groups before setting the pipeline again",
                conn.name,
                len(groups),
            )

    def heal(self, deadline: float) -> tuple[str, ...]:
        """Reinstall every switch whose connection was lost; returns their names."""
        lost = self.lost()
        for name in lost:
            self.reinstall(name, deadline)
        return lost


def _inverses(
    updates: Sequence[p4runtime_pb2.Update],
    previous: Sequence[p4runtime_pb2.Entity | None],
    applied: Iterable[int],
) -> list[p4runtime_pb2.Update]:
    """Updates undoing the applied ones, last applied first."""
    out = []
    for index in sorted(applied, reverse=True):
        undo = inverse(updates[index], previous[index])
        if undo is not None:
            out.append(undo)
    return out
