"""bench/forwarding.py's BMv2 rows: planned for both builds, each saying why it cannot run where
its simple_switch_grpc is missing. The tools are fakes in tmp dirs: what this machine has
installed does not matter (the rows' figures come from the benchmark itself, on BMv2)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import bmv2_forwarder, forwarding_rows
from topo import bmv2


def tool(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty install prefix whose bin/ is the only place tools are looked for (what the
    rows found about the native back end with that PATH is forgotten after the test)."""
    monkeypatch.setenv("PATH", str(tmp_path / "prefix" / "bin"))
    monkeypatch.setattr(bmv2, "EXTRA_TOOL_DIRS", ())
    forwarding_rows.native_backend_unavailable.cache_clear()
    yield tmp_path / "prefix"
    forwarding_rows.native_backend_unavailable.cache_clear()


def bmv2_rows(program: str = "agg32") -> list[forwarding_rows.ForwardingRow]:
    planned = forwarding_rows.planned([program], [], Path("forwarder"))
    return [row for row in planned if row.pipeline == "bmv2"]


def test_each_program_has_a_row_for_each_build_that_says_bmv2_is_missing(prefix: Path) -> None:
    rows = bmv2_rows()
    assert [row.label for row in rows] == [
        "agg32: BMv2 simple_switch_grpc, default build",
        "agg32: BMv2 simple_switch_grpc, fast build",
    ]
    for row in rows:
        assert (
            row.unavailable is not None and "simple_switch_grpc is not installed" in row.unavailable
        )
        assert len(row.label) <= 46  # the table's column


def test_the_default_build_runs_where_found_and_the_fast_one_beside_it(prefix: Path) -> None:
    switch = tool(prefix / "bin", "simple_switch_grpc")
    tool(prefix / "bin", "p4c-bm2-ss")
    default, fast = bmv2_rows("l2")
    assert default.unavailable is None
    assert default.command is not None and default.command[-4:] == (
        "l2",
        "default",
        *forwarding_rows.PORTS,
    )
    assert (
        fast.unavailable == f"no BMv2 build for speed under {prefix} (fast/bin/simple_switch_grpc)"
    )
    assert bmv2_forwarder.switch_binary("default") == switch

    fast_switch = tool(prefix / "fast" / "bin", "simple_switch_grpc")
    assert bmv2_rows("l2")[1].unavailable is None
    assert bmv2_forwarder.switch_binary("fast") == fast_switch


def test_without_p4c_there_is_no_program_to_run(prefix: Path) -> None:
    tool(prefix / "bin", "simple_switch_grpc")
    tool(prefix / "fast" / "bin", "simple_switch_grpc")
    assert all("p4c-bm2-ss is not installed" in (row.unavailable or "") for row in bmv2_rows())


def test_the_table_says_how_many_times_faster_p4switch_s_native_back_end_is() -> None:
    earlier = [
        {
            "label": "l2: native back end, native I/O",
            "program": "l2",
            "pipeline": "native",
            "io": "native",
            "delivered": {"value": 1_000_000.0},
        }
    ]
    row = {
        "label": "l2: BMv2 simple_switch_grpc, fast build",
        "program": "l2",
        "pipeline": "bmv2",
        "io": "bmv2",
        "delivered": {"value": 40_000.0},
        "offered": {"value": 900_000.0},
    }
    line = forwarding_rows.table_row(row, earlier)
    assert line.endswith("p4switch native 25.0x this")
    assert row["p4switch_native_is"] == {"value": 25.0, "unit": "times this row"}


def test_the_role_refuses_a_wrong_call() -> None:
    assert bmv2_forwarder.main(["l2"]) == 2


def test_each_program_runs_in_the_p4switch_command_on_each_back_end_and_loop() -> None:
    planned = forwarding_rows.planned(["agg32"], [], Path("forwarder"))
    rows = {(row.pipeline, row.io): row for row in planned if row.program == "agg32"}
    assert set(rows) >= {(b, io) for b in ("python", "native") for io in ("python", "native")}
    command = rows["native", "python"].command
    assert command is not None and command[1:] == (
        str(forwarding_rows.P4SWITCH_FORWARDER),
        "agg32",
        "native",
        "python",
        *forwarding_rows.PORTS,
    )
    assert forwarding_rows.switch_command("l2", "python", "python", ["2:rate=10Mbit"])[-1] == (
        "--shape=2:rate=10Mbit"
    )
