"""What the machine check programs its switch with, on either target: the changes the controller
writes to one island's edge as a member of an all-to-all round (the base entries, then round
`ROUND_NUMBER`), as `to_updates` turns them into P4Runtime updates."""

from __future__ import annotations

from controller.planner.schedule import Round
from controller.round_entries import round_entries
from controller.rounds import Addressing, Change, base_entries, install_changes
from controller.runner.emulation import Emulation
from topo import siteplan as site

ROUND_NUMBER = 1  # the round the check installs, and its frames carry


def member_changes(em: Emulation, island: int) -> list[tuple[Change, ...]]:
    """The two batches, in order, that make `island`'s edge a member of an all-to-all round."""
    sc = em.scenario
    base = base_entries(sc.wan, Addressing.default(sc.wan.n, sc.hosts))
    everyone = Round.of([range(sc.wan.n)])
    rnd = round_entries(
        sc.wan, everyone, job=site.JOB, number=ROUND_NUMBER, hosts_per_island=sc.hosts
    )
    return [changes[island] for changes in (install_changes(base), install_changes(rnd, [base]))]
