"""controller.cluster.raycluster without a cluster: the head's address, a head that cannot be
reached (refused in one line, before Ray is asked), and the order of the alive nodes."""

from __future__ import annotations

import socket

import pytest

from controller.cluster.raycluster import (
    DEFAULT_RAY_PORT,
    ClusterError,
    ClusterNode,
    alive_nodes,
    head_address,
    try_reach,
)
from innet.exceptions import InputError
from innet_cli import main


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10.0.0.1:6380", ("10.0.0.1", 6380)), ("head.example", ("head.example", DEFAULT_RAY_PORT))],
)
def test_the_head_s_address_with_or_without_its_port(text: str, expected: tuple[str, int]) -> None:
    assert head_address(text) == expected


@pytest.mark.parametrize("text", ["", ":6379", "10.0.0.1:", "10.0.0.1:0", "h:70000", "h:x"])
def test_an_address_that_names_no_head_is_refused(text: str) -> None:
    with pytest.raises(ClusterError, match="give the head's HOST:PORT"):
        head_address(text)


def test_a_closed_port_is_refused_in_one_line_naming_the_address() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(ClusterError, match=rf"cannot reach the Ray cluster at 127.0.0.1:{port}"):
        try_reach("127.0.0.1", port)
    assert issubclass(ClusterError, InputError)  # exit status 2


def test_the_command_refuses_an_unreachable_head_with_status_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert main(["cluster", "check", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("innet: error: cannot reach the Ray cluster") and err.count("\n") == 1


def test_alive_nodes_in_address_order() -> None:
    listed = [
        {"NodeID": "c", "NodeManagerAddress": "10.0.0.10", "Alive": True},
        {"NodeID": "d", "NodeManagerAddress": "10.0.0.3", "Alive": False},
        {"NodeID": "b", "NodeManagerAddress": "10.0.0.9", "Alive": True},
        {"NodeID": "a", "NodeManagerAddress": "fd00::1", "Alive": True},
    ]
    assert alive_nodes(listed) == [
        ClusterNode("b", "10.0.0.9"),
        ClusterNode("c", "10.0.0.10"),
        ClusterNode("a", "fd00::1"),
    ]


def test_a_cluster_with_no_alive_node_is_refused() -> None:
    with pytest.raises(ClusterError, match="no alive node"):
        alive_nodes([{"NodeID": "a", "NodeManagerAddress": "10.0.0.1", "Alive": False}])
