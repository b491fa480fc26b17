"""What the controller knows of a switch over P4Runtime, for health: whether it is the switch's
primary, whether the switch's state may differ from the desired one, whether a write ended with
an unknown outcome; and asking to be primary again without fighting a live primary.

`control_health(fabric, name)` gives a `ControlHealth`: `primary` is "ok" or "lost", `state`
"ok" or "diverged", `write` "ok" or "timed out", and `reasons` says what is wrong in words.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from controller.p4rt.connection import SwitchConnection
from controller.p4rt.exceptions import P4RuntimeError
from controller.p4rt.fabric import Fabric
from innet.vocabulary import EntityState, PrimaryState, WriteState

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ControlHealth:
    primary: PrimaryState
    state: EntityState
    write: WriteState
    reasons: tuple[str, ...]  # what is wrong (empty when all is ok)


def control_health(fabric: Fabric, name: str) -> ControlHealth:
    """The switch's P4Runtime side of health (never waits for an install in progress)."""
    conn = fabric.connection(name)
    status = fabric.status(name)
    reasons = []
    if not conn.alive:
        reasons.append("the P4Runtime stream is down")
    elif not conn.primary:
        news = conn.announced
        if news is not None and news.other_primary:
            reasons.append(
                f"another client is primary (election id {news.highest}); the controller asks "
                "again once it leaves"
            )
        else:
            reasons.append("no client is primary; the controller is asking again")
    if status.diverged:
        reasons.append(f"state diverged: {status.reason}")
    return ControlHealth(
        primary=PrimaryState.OK if conn.primary else PrimaryState.LOST,
        state=EntityState.DIVERGED if status.diverged else EntityState.OK,
        write=WriteState.TIMED_OUT if status.write_timed_out else WriteState.OK,
        reasons=tuple(reasons),
    )


def ask_primary_again(conn: SwitchConnection, deadline: float) -> bool:
    """Be primary of the switch if no other client is; False while another client is primary
    (it is not fought), before the back-off allows another claim, or if the claim failed."""
    if conn.primary:
        return True
    news = conn.announced
    if (news is not None and news.other_primary) or conn.arbitration.backoff.wait_s() > 0:
        return False
    try:
        won = conn.claim_primary(deadline)
    except P4RuntimeError as err:
        log.warning("switch %s: asking to be primary again failed: %s", conn.name, err)
        return False
    if won:
        log.warning("switch %s: primary again (election id %s)", conn.name, conn.election_id)
    return won
