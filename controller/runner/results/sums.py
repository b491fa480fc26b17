"""Two runs' int32 sums, round by round (`innet sums A B`, controller/runner/cli.py).

Every exact network (inna, multicast, plain) gives each member of a group the same int32 sum,
and a leader records its digest in rounds.jsonl (`sums`, workers.quantise.sum_digest). The same
scenario played on two targets (p4switch and BMv2), on two back ends or on two machines must give
the same sums in every round both played: that is what this compares. A round is named by its
(network, memory, schedule, round); rounds without sums (gloo's float all_reduce, a round where
every group is one island) are counted but not compared.

    >>> import dataclasses
    >>> from controller.runner.records import RoundRecord
    >>> a = RoundRecord(1_600_000_000, 256, "all-to-all", 0, (("A", "B"),), 0.0, 1.0, 1.0, 1.0,
    ...                 sums={"A": "aa", "B": "aa"})
    >>> same = compare_sums([a], [a])
    >>> same.compared, same.differences, same.same
    (1, (), True)
    >>> compare_sums([a], [dataclasses.replace(a, sums={"A": "aa", "B": "ab"})]).differences
    ('inna 1.6 GB all-to-all round 0: B aa here, ab there',)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from controller.runner.records import RoundRecord
from innet.units import format_size

Key = tuple[str, int, str, int]  # network, memory, schedule, round


@dataclass(frozen=True, slots=True)
class SumsComparison:
    compared: int  # rounds both runs played with sums
    without: int  # rounds both played where neither recorded a sum (gloo, groups of one)
    differences: tuple[str, ...]  # one line per round whose sums differ
    only_here: tuple[str, ...]  # rounds the first run finished and the second did not
    only_there: tuple[str, ...]

    @property
    def same(self) -> bool:
        """Every round both finished gave the same sums, and at least one was compared."""
        return self.compared > 0 and not self.differences

    def report(self, here: str = "A", there: str = "B") -> str:
        if self.same:
            verdict = "the same int32 sums in every one"
        elif self.differences:
            verdict = f"{len(self.differences)} differ"
        else:
            verdict = "no round of both has sums"
        lines = [f"{self.compared} rounds compared ({self.without} without sums): {verdict}"]
        lines += self.differences
        for who, keys in ((here, self.only_here), (there, self.only_there)):
            if keys:
                lines.append(f"finished only in {who}: {', '.join(keys)}")
        return "\n".join(lines)


def compare_sums(here: Iterable[RoundRecord], there: Iterable[RoundRecord]) -> SumsComparison:
    """The rounds both finished, compared city by city; failed rounds are left out of both."""
    a, b = _finished(here), _finished(there)
    compared, without, differences = 0, 0, []
    for key in sorted(a.keys() & b.keys()):
        x, y = a[key].sums, b[key].sums
        if not x and not y:
            without += 1
            continue
        compared += 1
        if dict(x) != dict(y):
            differences.append(f"{_name(key)}: {_cities(x, y)}")
    return SumsComparison(
        compared,
        without,
        tuple(differences),
        tuple(_name(k) for k in sorted(a.keys() - b.keys())),
        tuple(_name(k) for k in sorted(b.keys() - a.keys())),
    )


def _finished(records: Iterable[RoundRecord]) -> dict[Key, RoundRecord]:
    return {(r.network, r.memory, r.schedule, r.round): r for r in records if r.ok}


def _name(key: Key) -> str:
    network, memory, schedule, number = key
    return f"{network} {format_size(memory)} {schedule} round {number}"


def _cities(x: Mapping[str, str], y: Mapping[str, str]) -> str:
    cities = sorted(x.keys() | y.keys())
    return "; ".join(
        f"{c} {x.get(c, 'none')} here, {y.get(c, 'none')} there"
        for c in cities
        if x.get(c) != y.get(c)
    )
