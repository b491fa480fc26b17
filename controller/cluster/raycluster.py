"""innet on a Ray cluster: the driver's connection, the cluster's machines, and an agent on each.

    with Cluster.connect("10.250.0.1:6379") as cluster:   # ClusterError (exit 2) if unreachable
        facts = cluster.facts()                          # every node's NodeFacts, in node order
        print(cluster.survey(exchanges=30).text)         # and the clocks and wires between them

The cluster is one a researcher already runs: `ray start --head` on one machine, `ray start
--address=HEAD:6379` on the others, each as root (docs/cluster.md). The driver (`innet` on any
machine that reaches the head) connects as a Ray client of that cluster and places one
`NodeAgent` actor on every alive node, pinned there (a node-affinity strategy that is not soft:
an agent never runs elsewhere) and asking for no CPU, so that the islands keep the cores. The
agents are the driver's: Ray ends them when it disconnects or dies.

Before `ray.init` is asked to connect, the head's address is tried over TCP for
CONNECT_TIMEOUT_S: Ray itself retries an unreachable address for minutes before it gives up.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from controller.cluster.agent import NodeAgent
from controller.cluster.nodes import NodeFacts, driver_versions, node_problems
from controller.cluster.probe import DEFAULT_EXCHANGES
from controller.cluster.survey import Survey, measure
from controller.runner.exceptions import ExperimentError
from innet.exceptions import InputError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0
AGENT_THREADS = 8  # calls an agent answers at once, each on a thread of its own
AGENT_TIMEOUT_S = 60.0  # an agent's first answer: Ray starts a Python process on its node first
DEFAULT_RAY_PORT = 6379  # `ray start --head`'s
RAY_NAMESPACE = "innet"


class ClusterError(InputError):
    """A cluster innet cannot use: unreachable, or a machine that lacks what a run needs there.
    Nothing was started on any node."""


class ClusterFailure(ExperimentError):
    """A node's agent did not answer, is gone (its machine lost), or failed at what it was
    asked; the message names the node, `lost` the nodes given up for lost."""

    def __init__(self, message: str, lost: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.lost = tuple(lost)


@dataclass(frozen=True, slots=True)
class ClusterNode:
    """One alive node of the Ray cluster: Ray's id and the address it is reached at."""

    node_id: str
    address: str


def head_address(text: str) -> tuple[str, int]:
    """`HOST[:PORT]` as (host, port), Ray's default port when none is given; ClusterError for
    anything else."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        host, port = text.strip(), str(DEFAULT_RAY_PORT)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(
            f"cluster address {text!r}: give the head's HOST:PORT, e.g. 10.0.0.1:6379"
        )
    return host, int(port)


def try_reach(host: str, port: int, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """ClusterError unless a TCP connection to the head's port opens within `timeout_s`."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return
    except TimeoutError:
        why = f"no answer within {timeout_s:g} s"
    except OSError as err:
        why = err.strerror or str(err)
    raise ClusterError(
        f"cannot reach the Ray cluster at {host}:{port}: {why} (is `ray start --head` running "
        "there, and is the port open to this machine?)"
    )


def place_agent(node: ClusterNode) -> Any:
    """A NodeAgent actor on `node` and nowhere else: no CPU asked for, never restarted (a lost
    node is a lost run, not a silent rebuild), answering several calls at once (a call that
    waits for its leaders' events never holds up a command to them)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return (
        ray.remote(NodeAgent)
        .options(
            num_cpus=0,
            max_restarts=0,
            max_concurrency=AGENT_THREADS,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
        )
        .remote(node.address)
    )


class Cluster:
    """The driver's connection to a Ray cluster, with an agent on every alive node."""

    def __init__(self, address: str, nodes: Sequence[ClusterNode], agents: Sequence[Any]) -> None:
        self.address = address
        self.nodes = tuple(nodes)
        self.agents = tuple(agents)  # NodeAgent actor handles, in node order

    @classmethod
    def connect(cls, address: str) -> Cluster:
        """Connect to the cluster whose head is at `address` and place the agents."""
        host, port = head_address(address)
        try_reach(host, port)
        import ray

        try:
            ray.init(
                address=f"{host}:{port}",
                namespace=RAY_NAMESPACE,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise ClusterError(f"cannot join the Ray cluster at {host}:{port}: {err}") from None
        try:
            nodes = alive_nodes(ray.nodes())  # type: ignore[no-untyped-call]  # (Ray's own)
            agents = [place_agent(n) for n in nodes]
        except BaseException:
            ray.shutdown()
            raise
        log.info("joined the Ray cluster at %s:%d: %d nodes", host, port, len(nodes))
        return cls(f"{host}:{port}", nodes, agents)

    def facts(self) -> list[NodeFacts]:
        """Every node's facts, in node order, asked of all at once."""
        return self.gather("its facts", [a.facts.remote() for a in self.agents])

    @property
    def addresses(self) -> tuple[str, ...]:
        return tuple(n.address for n in self.nodes)

    def agent(self, address: str) -> Any:
        """The agent of the node at `address`; ClusterError for no such node."""
        for node, agent in zip(self.nodes, self.agents, strict=True):
            if node.address == address:
                return agent
        raise ClusterError(
            f"no node of the cluster at {self.address} has the address {address} (its nodes: "
            f"{', '.join(self.addresses)})"
        )

    def gather(
        self, what: str, asked: Sequence[Any], timeout_s: float = AGENT_TIMEOUT_S
    ) -> list[Any]:
        """The answers to `asked` (one Ray call per node, in node order), as `gather_from`."""
        return self.gather_from(self.addresses, what, asked, timeout_s)

    def ask(self, address: str, what: str, asked: Any, timeout_s: float = AGENT_TIMEOUT_S) -> Any:
        """The answer to one call to the agent at `address`, as `gather_from`."""
        return self.gather_from([address], what, [asked], timeout_s)[0]

    def gather_from(
        self,
        addresses: Sequence[str],
        what: str,
        asked: Sequence[Any],
        timeout_s: float = AGENT_TIMEOUT_S,
    ) -> list[Any]:
        """The answers to `asked` (one Ray call to each node of `addresses`, in that order)
        within `timeout_s`; ClusterError naming every node that did not answer, whose agent is
        gone, or whose agent failed (with its error's first line)."""
        import ray

        ready, _ = ray.wait(list(asked), num_returns=len(asked), timeout=timeout_s)
        done = set(ready)
        answers: list[Any] = []
        failed: list[str] = []
        lost: list[str] = []
        for address, ref in zip(addresses, asked, strict=True):
            if ref not in done:
                failed.append(f"node {address}: no answer within {timeout_s:g} s")
                lost.append(address)
                continue
            try:
                answers.append(ray.get(ref))
            except ray.exceptions.RayTaskError as err:
                failed.append(f"node {address}: {_first_line(err.cause or err)}")
            except ray.exceptions.RayError as err:
                failed.append(f"node {address}: its agent is gone ({_first_line(err)})")
                lost.append(address)
        if failed:
            why = " (a machine lost, or one too busy to start a Python process)" if lost else ""
            raise ClusterFailure(f"asking for {what}: {'; '.join(failed)}{why}", lost)
        return answers

    def check(self) -> list[NodeFacts]:
        """Every node's facts; ClusterError (every problem, each naming its node) unless every
        node has what a run needs and the driver's versions."""
        facts = self.facts()
        problems = node_problems(facts, driver_versions())
        if problems:
            raise ClusterError("; ".join(problems))
        return facts

    def survey(self, exchanges: int = DEFAULT_EXCHANGES) -> Survey:
        """The nodes (checked), their clocks against this driver's, and the wires between them."""
        return measure(self.address, self.check(), self, exchanges)

    def close(self) -> None:
        """End the agents and leave the cluster (the cluster's own processes stay)."""
        import ray

        for agent in self.agents:
            ray.kill(agent)
        self.agents = ()
        ray.shutdown()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def alive_nodes(listed: Sequence[dict[str, Any]]) -> list[ClusterNode]:
    """The alive nodes of `ray.nodes()`, ordered by address (a stable order for placement);
    ClusterError when there is none."""
    nodes = sorted(
        (ClusterNode(str(n["NodeID"]), str(n["NodeManagerAddress"])) for n in listed if n["Alive"]),
        key=lambda n: _address_order(n.address),
    )
    if not nodes:
        raise ClusterError("the Ray cluster has no alive node")
    return nodes


def _address_order(address: str) -> tuple[int, int, str]:
    """Addresses in numeric order, IPv4 before IPv6, names after both."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return (2, 0, address)
    return (ip.version // 6, int(ip), address)


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__
