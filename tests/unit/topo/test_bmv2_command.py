"""The bmv2 target's command line (the process itself runs only where BMv2 is installed)."""

from __future__ import annotations

from topo.bmv2 import bmv2_command


def test_ids_ports_and_addresses_are_explicit_and_logging_is_off() -> None:
    argv = bmv2_command({2: "s0-eth2", 1: "s0-eth1"}, "127.0.0.1:50003", 4, 9093)
    assert argv[:3] == ["simple_switch_grpc", "--device-id", "4"]
    assert argv[3:7] == ["-i", "1@s0-eth1", "-i", "2@s0-eth2"]
    assert "--no-p4" in argv and "--log-console" not in argv
    target = argv[argv.index("--") + 1 :]
    assert target == ["--grpc-server-addr", "127.0.0.1:50003", "--cpu-port", "255"]
    assert argv[argv.index("--thrift-port") + 1] == "9093"


def test_the_console_log_only_on_request() -> None:
    argv = bmv2_command({1: "s0-eth1"}, "127.0.0.1:50000", 1, 9090, log_console=True)
    assert argv.index("--log-console") < argv.index("--")
