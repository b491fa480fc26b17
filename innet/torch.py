"""What a torch.distributed script asks of innet: the planner's rotating cliques as groups.

    cliques = Cliques([[[0, 1], [2]], [[1, 2], [0]], [[0, 2], [1]]])   # rounds of groups of ranks
    for step in range(steps):
        group = cliques.next()                  # this rank's clique this round (None: alone)
        if group is not None:
            dist.all_reduce(delta, group=group)
            delta /= dist.get_world_size(group)

A schedule (docs/cost-model.md) is a cycle of rounds, each a partition of the islands into
groups that exchange their updates that round; in a script each island is a rank. torch makes
a group with `dist.new_group`, which every rank of the world must call for every group, in the
same order, even for the groups it is not in: `Cliques` does so once, for every group of every
round, when it is made (every rank makes it with the same rounds), and then hands each rank its
own group round by round. It is plain torch.distributed, so it works with any backend (gloo as
well as innet's), and a script that would rather average over the whole world each round
keeps its `all_reduce` on the world group: the run then says what that costs.

The rounds come as lists of ranks (`rounds`) or from the environment (`Cliques.from_env`:
`INNET_CLIQUES`, the same as JSON), where `innet run` puts its schedule's.

`log(...)` records what a script measures (a loss, an accuracy, its own step time) as one
JSON line: `innet run` gathers every rank's lines beside its collectives and its networks
(`INNET_LOG` names the rank's file); outside it the line goes to stderr.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from innet.exceptions import InputError

ENV = "INNET_CLIQUES"
LOG_ENV = "INNET_LOG"


class CliquesError(InputError, ValueError):
    """Rounds that are not partitions of the world's ranks, or a rank's environment without
    them."""


class Cliques:
    """The groups of a cycle of rounds, made on every rank, and this rank's one round by round
    (the cycle repeats)."""

    def __init__(
        self, rounds: Sequence[Sequence[Sequence[int]]], timeout: timedelta | None = None
    ) -> None:
        import torch.distributed as dist

        world, me = dist.get_world_size(), dist.get_rank()
        self.rounds = check_rounds(rounds, world)
        made: dict[tuple[int, ...], Any] = {}
        for groups in self.rounds:
            for ranks in groups:
                if len(ranks) > 1 and ranks not in made:
                    made[ranks] = dist.new_group(list(ranks), timeout=timeout)
        self._mates = [next(g for g in groups if me in g) for groups in self.rounds]
        self._mine = [made.get(mates) for mates in self._mates]  # None: a group of one
        self.round = 0  # the next `next()` gives this round's group

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, timeout: timedelta | None = None
    ) -> Cliques:
        text = (os.environ if env is None else env).get(ENV)
        if text is None:
            raise CliquesError(f"{ENV} is not set: innet run sets it with its schedule's rounds")
        try:
            rounds = json.loads(text)
        except json.JSONDecodeError as err:
            raise CliquesError(f"{ENV} is not JSON: {err}") from None
        return cls(rounds, timeout)

    def ranks(self, round_: int) -> tuple[int, ...]:
        """This rank's clique in round `round_` (of the repeating cycle), itself included."""
        return self._mates[round_ % len(self.rounds)]

    def group(self, round_: int) -> Any:
        """This rank's clique in round `round_` as a group; None when it is alone that round."""
        return self._mine[round_ % len(self.rounds)]

    def next(self) -> Any:
        """The current round's group (None: alone), and on to the next round."""
        group = self.group(self.round)
        self.round += 1
        return group


def check_rounds(rounds: Any, world: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """Rounds as tuples, each a partition of ranks 0..world-1 into groups; CliquesError naming
    the round and the rank otherwise."""
    if not isinstance(rounds, Sequence) or isinstance(rounds, str) or not rounds:
        raise CliquesError("the cliques are a non-empty list of rounds, each a list of groups")
    checked = []
    for r, groups in enumerate(rounds):
        if not isinstance(groups, Sequence) or isinstance(groups, str):
            raise CliquesError(f"round {r}: a list of groups of ranks, not {groups!r}")
        seen: dict[int, int] = {}
        round_groups = []
        for g, ranks in enumerate(groups):
            if not isinstance(ranks, Sequence) or isinstance(ranks, str) or not ranks:
                raise CliquesError(f"round {r}, group {g}: a non-empty list of ranks")
            for rank in ranks:
                if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < world:
                    raise CliquesError(
                        f"round {r}, group {g}: {rank!r} is not a rank of a world of {world}"
                    )
                if rank in seen:
                    raise CliquesError(
                        f"round {r}: rank {rank} is in group {seen[rank]} and group {g}"
                    )
                seen[rank] = g
            round_groups.append(tuple(sorted(ranks)))
        missing = [rank for rank in range(world) if rank not in seen]
        if missing:
            raise CliquesError(f"round {r}: rank(s) {missing} in no group: give every rank one")
        checked.append(tuple(round_groups))
    return tuple(checked)


def log(**metrics: float | int | str) -> dict[str, Any]:
    """Record `metrics` (numbers or short texts, such as `step=3, loss=2.1`) with this rank and
    the time; the record, as written. A value that is not a number or a text is refused."""
    for name, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise InputError(f"innet.torch.log: {name}={value!r} is not a number or a text")
        if isinstance(value, float) and not math.isfinite(value):
            metrics[name] = str(value)  # JSON has no NaN: kept as text, and visible
    record: dict[str, Any] = {"rank": int(os.environ.get("RANK", "0")), "time": time.time()}
    record.update(metrics)
    line = json.dumps(record) + "\n"
    path = os.environ.get(LOG_ENV)
    if path:
        with open(path, "a") as out:
            out.write(line)
    else:
        sys.stderr.write(line)
    return record
