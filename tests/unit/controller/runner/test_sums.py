"""Two runs' int32 sums round by round (`innet sums A B`), and the digest a leader records."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from controller.runner.play import split_sums
from controller.runner.records import RoundRecord
from controller.runner.results.sums import compare_sums
from controller.runner.results.writer import ROUNDS_FILE
from innet_cli import main
from workers.protocol import Done, decode_event, encode
from workers.quantise import sum_digest

GB = 10**9
NAMES = ("Tokyo", "London", "Lima")


def rec(network: str, number: int, sums: dict[str, str], status: str = "ok") -> RoundRecord:
    done = status == "ok"
    return RoundRecord(
        int(1.6 * GB),
        256,
        "all-to-all",
        number,
        (NAMES,),
        0.0,
        1.0 if done else None,
        1.0,
        1.0,
        status=status,
        network=network,
        sums=sums,
    )


def same(digest: str) -> dict[str, str]:
    return dict.fromkeys(NAMES, digest)


def write(folder: Path, records: list[RoundRecord]) -> Path:
    folder.mkdir()
    lines = [json.dumps(r.to_json()) + "\n" for r in records]
    (folder / ROUNDS_FILE).write_text("".join(lines))
    return folder


def test_the_digest_is_of_the_int32_values_alone() -> None:
    total = np.array([1, -2, 2**31 - 1, -(2**31)], dtype=np.int32)
    assert sum_digest(total) == sum_digest(total.astype(np.int64))  # the values, not the dtype
    assert sum_digest(total) == sum_digest(total.astype(">i4"))  # nor the byte order
    assert len(sum_digest(total)) == 16
    for i in range(total.size):  # any one value changed changes it
        other = total.copy()
        other[i] ^= 1
        assert sum_digest(other) != sum_digest(total)
    assert sum_digest(np.zeros(4, np.int32)) != sum_digest(np.zeros(5, np.int32))


def test_done_carries_the_digest_and_records_keep_it() -> None:
    done = Done(2, 7, 1.0, 2.0, 0.5, 0.9, sums="0123456789abcdef")
    assert decode_event(encode(done)) == done
    assert decode_event(encode(Done(2, 7, 1.0, 2.0, 0.5, 0.9))).sums == ""  # gloo, alone
    r = rec("inna", 0, same("ab"))
    assert RoundRecord.from_json(json.loads(json.dumps(r.to_json()))) == r
    older = r.to_json()
    del older["sums"]  # written before rounds had sums
    assert RoundRecord.from_json(older).sums == {}


def test_a_group_whose_members_got_different_sums_is_named_with_every_digest() -> None:
    def done(island: int, digest: str) -> Done:
        return Done(island, 0, 1.0, 1.0, 0.5, 0.9, sums=digest)

    got: dict[int, Done] = {0: done(0, "aa"), 1: done(1, "aa"), 2: done(2, "bb")}
    assert split_sums(NAMES, [(0, 1), (2,)], dict(got)) == []
    assert split_sums(NAMES, [(0, 1, 2)], dict(got)) == [
        "group Tokyo-London-Lima: its members got different int32 sums "
        "(Tokyo aa, London aa, Lima bb)"
    ]
    without = {0: done(0, "aa"), 1: done(1, ""), 2: done(2, "aa")}  # one with no sum: not split
    assert split_sums(NAMES, [(0, 1, 2)], dict(without)) == []


def test_rounds_compared_by_network_memory_schedule_and_number() -> None:
    here = [rec("inna", 0, same("aa")), rec("inna", 1, same("bb")), rec("gloo", 0, {})]
    assert compare_sums(here, list(reversed(here))).same  # the order of the lines is no matter
    there = [
        rec("inna", 0, same("aa")),
        rec("inna", 1, {**same("bb"), "Lima": "bc"}),
        rec("gloo", 0, {}),
    ]
    result = compare_sums(here, there)
    assert (result.compared, result.without, result.same) == (2, 1, False)
    assert result.differences == ("inna 1.6 GB all-to-all round 1: Lima bb here, bc there",)
    failed = [rec("inna", 0, same("aa")), rec("inna", 1, {}, status="failed: dead")]
    partial = compare_sums(here[:2], failed)
    assert partial.same and partial.compared == 1
    assert partial.only_here == ("inna 1.6 GB all-to-all round 1",)
    assert "finished only in A: inna 1.6 GB all-to-all round 1" in partial.report()
    # nothing with sums on either side is not "the same"
    assert not compare_sums([rec("gloo", 0, {})], [rec("gloo", 0, {})]).same


def test_innet_sums_exit_status(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a = write(tmp_path / "a", [rec("inna", 0, same("aa")), rec("inna", 1, same("bb"))])
    b = write(tmp_path / "b", [rec("inna", 0, same("aa")), rec("inna", 1, same("bb"))])
    c = write(tmp_path / "c", [rec("inna", 0, same("aa")), rec("inna", 1, same("bx"))])
    assert main(["sums", str(a), str(b)]) == 0
    assert "2 rounds compared (0 without sums): the same int32 sums" in capsys.readouterr().out
    assert main(["sums", str(a), str(c)]) == 1
    out = capsys.readouterr().out
    assert "1 differ" in out and "round 1: Lima bb here, bx there" in out
    assert main(["sums", str(a), str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing is not a results folder" in err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / ROUNDS_FILE).write_text('{"round": 1}\n')
    assert main(["sums", str(a), str(tmp_path / "bad")]) == 2
    assert "rounds.jsonl:1: not a round record" in capsys.readouterr().err


def test_cities_without_a_sum_compare_as_none() -> None:
    r = dataclasses.replace(rec("inna", 0, same("aa")), sums={"Tokyo": "aa"})
    result = compare_sums([rec("inna", 0, same("aa"))], [r])
    assert result.differences == (
        "inna 1.6 GB all-to-all round 0: Lima aa here, none there; London aa here, none there",
    )
