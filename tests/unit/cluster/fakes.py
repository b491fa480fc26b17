"""Stand-ins for a Ray cluster's agents (no Ray, no network), as controller/cluster's modules
reach them: `cluster.agent(address).method.remote(...)` and the answers gathered."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.cluster.raycluster import ClusterFailure


class Gone(Exception):
    """What a call to an agent whose machine is lost gives."""


@dataclass(frozen=True)
class Answer:
    """What a call gave, held as Ray holds it until it is asked for: a value or an error."""

    value: Any = None
    error: BaseException | None = None


class Remote:
    """A method as Ray's handle offers it: `.remote(...)` runs it at once and holds the answer
    (or the error) for the stand-in cluster to hand out."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self.method = method

    def remote(self, *args: Any) -> Answer:
        try:
            return Answer(self.method(*args))
        except Exception as err:
            return Answer(error=err)


@dataclass
class StandIn:
    """An agent: every call is recorded and answered by the method `on_<name>` (None when it
    has none); a lost one answers every call with Gone."""

    address: str
    lost: bool = False
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    def __getattr__(self, name: str) -> Remote:
        if name.startswith("on_") or name.startswith("__"):
            raise AttributeError(name)
        return Remote(lambda *args: self._call(name, *args))

    def _call(self, name: str, *args: Any) -> Any:
        self.calls.append((name, args))
        if self.lost:
            raise Gone(f"node {self.address}: its agent is gone")
        handler = getattr(type(self), f"on_{name}", None)
        return None if handler is None else handler(self, *args)


class StandInCluster:
    """The agents by address, in the order given (as a cluster's nodes)."""

    def __init__(self, agents: dict[str, Any]) -> None:
        self.by_address = dict(agents)
        self.agents = tuple(self.by_address.values())

    @property
    def addresses(self) -> tuple[str, ...]:
        return tuple(self.by_address)

    def agent(self, address: str) -> Any:
        return self.by_address[address]

    def ask(self, address: str, what: str, asked: Answer) -> Any:
        return self.gather_from([address], what, [asked])[0]

    def gather(self, what: str, asked: Sequence[Answer]) -> list[Any]:
        return self.gather_from(self.addresses, what, asked)

    def gather_from(
        self, addresses: Sequence[str], what: str, asked: Sequence[Answer]
    ) -> list[Any]:
        """As the cluster's: a lost agent is a ClusterFailure naming it; any other error is
        raised as the agent raised it."""
        lost = [
            a for a, answer in zip(addresses, asked, strict=True) if isinstance(answer.error, Gone)
        ]
        if lost:
            raise ClusterFailure(f"asking for {what}: node {lost[0]}: its agent is gone", lost)
        for answer in asked:
            if answer.error is not None:
                raise answer.error
        return [answer.value for answer in asked]
