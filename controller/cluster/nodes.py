"""What innet needs of every machine of a cluster, found out on the machine itself, and the one
line that refuses a machine that lacks it.

`node_facts()` runs on a node (a Ray task or actor placed there) and says what that machine is:
its address and name, its cores, who the process runs as, whether it can create a network
namespace, whether Mininet is installed, and the versions of Ray, Python, innet and p4switch.
`node_problems` holds every node's facts against what a run needs there and against the
driver's own versions (pure), each problem one line naming the node:

    >>> ok = NodeFacts("10.250.0.2", "n2", 2, 0, None, None, "2.60.0", "3.11.2", "0.1.0", "0.1.0")
    >>> node_problems([ok], ok.versions)
    []
    >>> user = NodeFacts("10.250.0.3", "n3", 2, 1000, "needs root", None, "2.59.0", "3.11.2",
    ...                  "0.1.0", "0.1.0")
    >>> print("\\n".join(node_problems([ok, user], ok.versions)))  # doctest: +NORMALIZE_WHITESPACE
    node 10.250.0.3 (n3): runs as uid 1000, not root: innet builds namespaces, switches and
    hosts on every node; start Ray there as root
    node 10.250.0.3 (n3): Ray 2.59.0 here, 2.60.0 on the driver: every machine and the driver
    need the same version (pip install ray==2.60.0)
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from innet.jsontypes import JSONObject
from innet.stopping import held
from innet.versions import installed_version

NAMESPACE_PROBE = "innet-node-check-"  # + the checking process's PID
VERSIONED = ("ray", "python", "innet", "p4switch")  # alike on every machine
RELEASE_PARTS = {"python": 2}  # where only the first parts must match: Python's 3.X


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """One machine of the cluster as a process placed there finds it."""

    address: str  # the node's address in the cluster (Ray's node manager address)
    hostname: str
    cores: int
    uid: int  # the effective user the node's processes run as
    namespaces: str | None  # why a network namespace cannot be created there; None: it can
    mininet: str | None  # what of Mininet is missing there; None: installed
    ray: str | None  # versions; None: not installed
    python: str
    innet: str | None
    p4switch: str | None

    @property
    def name(self) -> str:
        """How a line names the node: its address, and its host name when that says more."""
        if self.hostname and self.hostname != self.address:
            return f"{self.address} ({self.hostname})"
        return self.address

    @property
    def versions(self) -> dict[str, str | None]:
        return {key: getattr(self, key) for key in VERSIONED}

    def to_json(self) -> JSONObject:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def node_facts(address: str) -> NodeFacts:
    """This machine's facts, `address` being how the cluster knows it."""
    uid = os.geteuid()
    versions = driver_versions()
    return NodeFacts(
        address=address,
        hostname=socket.gethostname(),
        cores=os.cpu_count() or 1,
        uid=uid,
        namespaces=_namespace_problem() if uid == 0 else "needs root",
        mininet=_mininet_problem(),
        ray=versions["ray"],
        python=platform.python_version(),
        innet=versions["innet"],
        p4switch=versions["p4switch"],
    )


def driver_versions() -> dict[str, str | None]:
    """This machine's versions of what must be alike on every machine (on the driver: what
    every node is held against)."""
    return {
        "ray": installed_version("ray"),
        "python": platform.python_version(),
        "innet": installed_version("innet"),
        "p4switch": installed_version("p4switch"),
    }


def node_problems(nodes: Sequence[NodeFacts], driver: Mapping[str, str | None]) -> list[str]:
    """One line per thing a node lacks for a run, in node order; none when every node can run
    its islands."""
    problems: list[str] = []
    for node in nodes:
        where = f"node {node.name}"
        if node.uid != 0:
            problems.append(
                f"{where}: runs as uid {node.uid}, not root: innet builds namespaces, switches "
                "and hosts on every node; start Ray there as root"
            )
        elif node.namespaces is not None:
            problems.append(f"{where}: cannot create a network namespace: {node.namespaces}")
        if node.mininet is not None:
            problems.append(f"{where}: {node.mininet}")
        for key in VERSIONED:
            here, there = getattr(node, key), driver.get(key)
            if _release(key, here) != _release(key, there):
                problems.append(_version_problem(where, key, here, there))
    return problems


def _release(key: str, version: str | None) -> str | None:
    """What must match: Python's major.minor (its pickles), every other version whole."""
    parts = RELEASE_PARTS.get(key)
    if parts is not None and version:
        return ".".join(version.split(".")[:parts])
    return version


def _version_problem(where: str, key: str, here: str | None, there: str | None) -> str:
    label = {"ray": "Ray", "python": "Python"}.get(key, key)
    have = f"{label} {here}" if here else f"no {label}"
    want = f"{there}" if there else "none"
    fix = f" (pip install {key}=={there})" if key == "ray" and there else ""
    return (
        f"{where}: {have} here, {want} on the driver: every machine and the driver need the "
        f"same version{fix}"
    )


def _namespace_problem() -> str | None:
    """None when a network namespace can be created here (one is, and deleted again)."""
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    name = f"{NAMESPACE_PROBE}{os.getpid()}"
    with held():  # added and deleted whole, whatever signal arrives meanwhile
        added = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
        if added.returncode != 0:
            return added.stderr.strip() or f"ip netns add exited {added.returncode}"
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)
    return None


def _mininet_problem() -> str | None:
    if shutil.which("mnexec") is None:
        return "Mininet's mnexec is not installed (Debian: apt install mininet)"
    if importlib.util.find_spec("mininet") is None:
        return "Mininet's Python package is not importable (pip install mininet)"
    return None
