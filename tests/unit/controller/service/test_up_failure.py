"""What `innet net up` says when the background service exits while building: the service's
own one-line error, not the tail of its log (tracebacks, Mininet's chatter)."""

from __future__ import annotations

from pathlib import Path

from controller.service.cli import _failure
from controller.service.options import SERVICE_ERROR


def test_the_services_one_line_error_is_what_net_up_reports(tmp_path: Path) -> None:
    log = tmp_path / "service.log"
    log.write_text(
        "2026-12-01 INFO building\nTraceback (most recent call last):\n  File ...\n"
        f"{SERVICE_ERROR}the bmv2 target needs simple_switch_grpc\n*** Mininet: done\n"
    )
    assert _failure(log) == "the bmv2 target needs simple_switch_grpc"


def test_without_one_the_logs_last_lines_are_reported(tmp_path: Path) -> None:
    log = tmp_path / "service.log"
    log.write_text("a\nb\nc\nd\n")
    assert _failure(log) == "b; c; d"
