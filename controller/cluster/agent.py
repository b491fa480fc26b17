"""innet's agent on one machine of a cluster: a Ray actor pinned to its node (controller/cluster/
raycluster.py places it), and the only thing of innet's that runs there.

What it does now: it says what its machine is (`facts`, controller/cluster/nodes.py) and takes
part in the timed exchanges that measure the clocks and the wires between the machines
(controller/cluster/probe.py): it answers probes on its node's address (`responder`) and
probes another node's agent (`probe`). It is a plain class, usable without Ray; the actor is
made from it by `raycluster.agent_class()`.
"""

from __future__ import annotations

from controller.cluster.clocks import ClockSample
from controller.cluster.nodes import NodeFacts, node_facts
from controller.cluster.probe import DEFAULT_EXCHANGES, Address, Responder, probe


class NodeAgent:
    """innet's agent on the node whose cluster address is `address`."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._responder: Responder | None = None

    def facts(self) -> NodeFacts:
        return node_facts(self.address)

    def responder(self) -> Address:
        """Where this node answers probes (opened on the first call, on the node's address)."""
        if self._responder is None:
            self._responder = Responder(self.address)
        return self._responder.address

    def probe(
        self, target: Address, count: int = DEFAULT_EXCHANGES, who: str = ""
    ) -> list[ClockSample]:
        """Exchanges with the responder at `target`, sent from this node's address."""
        return probe(target, count, source=self.address, who=who)

    def close(self) -> None:
        if self._responder is not None:
            self._responder.close()
            self._responder = None
