"""controller.cluster.nodes: what a machine of the cluster must have, each lack one line naming
the machine; and this machine's own facts."""

from __future__ import annotations

import dataclasses
import os

import pytest

from controller.cluster.nodes import NodeFacts, driver_versions, node_facts, node_problems

GOOD = NodeFacts("10.250.0.2", "gpu-2", 8, 0, None, None, "2.60.0", "3.11.2", "0.1.0", "0.1.0")
DRIVER = GOOD.versions


def test_a_node_with_everything_has_no_problem() -> None:
    assert node_problems([GOOD, dataclasses.replace(GOOD, address="10.250.0.3")], DRIVER) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"uid": 1000, "namespaces": "needs root"}, "runs as uid 1000, not root"),
        ({"namespaces": "Operation not permitted"}, "cannot create a network namespace: Op"),
        ({"mininet": "Mininet's mnexec is not installed"}, "Mininet's mnexec is not installed"),
        ({"ray": "2.59.0"}, "Ray 2.59.0 here, 2.60.0 on the driver"),
        ({"ray": None}, "no Ray here, 2.60.0 on the driver"),
        ({"python": "3.12.1"}, "Python 3.12.1 here, 3.11.2 on the driver"),
        ({"innet": "0.2.0"}, "innet 0.2.0 here, 0.1.0 on the driver"),
        ({"p4switch": None}, "no p4switch here"),
    ],
)
def test_each_lack_is_one_line_naming_the_node(change: dict[str, object], expected: str) -> None:
    node = dataclasses.replace(GOOD, **change)  # type: ignore[arg-type]
    problems = node_problems([GOOD, node], DRIVER)
    assert len(problems) == 1
    assert problems[0].startswith("node 10.250.0.2 (gpu-2): ")
    assert expected in problems[0]
    assert "\n" not in problems[0]


def test_a_python_patch_release_apart_is_alike() -> None:
    assert node_problems([dataclasses.replace(GOOD, python="3.11.9")], DRIVER) == []


def test_a_node_known_by_its_address_alone_is_named_once() -> None:
    node = dataclasses.replace(GOOD, hostname="10.250.0.2", uid=7)
    assert node_problems([node], DRIVER)[0].startswith("node 10.250.0.2: runs as uid 7")


def test_this_machine_s_facts_are_its_own() -> None:
    facts = node_facts("127.0.0.1")
    assert facts.address == "127.0.0.1"
    assert facts.uid == os.geteuid()
    assert facts.cores == os.cpu_count()
    assert facts.versions == driver_versions()
    assert facts.to_json()["address"] == "127.0.0.1"
