"""The testbed's choices among a few, each defined once: what the network does for an exchange,
how a group exchanges, which P4 target runs an edge, who shapes the WAN links, a switch's health.

Each is a `StrEnum`: a member is its value as a string (in JSON, a CSV, a format string, on a
command line; YAML is given `.value`), and a value read at an edge (a scenario, a flag, a
message, a request) becomes a member there or is refused, naming the choices:

    >>> NetworkMode.parse("inna") is NetworkMode.INNA, NetworkMode.INNA == "inna"
    (True, True)
    >>> NetworkMode.parse("nccl", among=SCENARIO_NETWORKS)
    Traceback (most recent call last):
    ...
    innet.vocabulary.VocabularyError: unknown network 'nccl'; known: plain, multicast, inna, gloo
    >>> [str(n) for n in PLANNED_NETWORKS]
    ['plain', 'multicast', 'inna']
"""

from __future__ import annotations

import argparse
import enum
from typing import ClassVar, Self

from innet.exceptions import InputError


class VocabularyError(InputError, ValueError):
    """A value that is none of a choice's members."""


class Term(enum.StrEnum):
    """A term of the vocabulary: each kind of choice is a subclass, whose `what` (the class's
    keyword) names it in errors."""

    what: ClassVar[str]  # set from the keyword: no member

    def __init_subclass__(cls, *, what: str = "choice", **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.what = what

    @classmethod
    def parse(cls, value: object, among: tuple[Self, ...] | None = None) -> Self:
        """The member whose value is `value`, one of `among` (default: any); VocabularyError
        naming the choices otherwise."""
        choices = tuple(cls) if among is None else among
        member = next((m for m in choices if m.value == value), None)
        if member is None:
            known = ", ".join(m.value for m in choices)
            raise VocabularyError(f"unknown {cls.what} {value!r}; known: {known}")
        return member

    @classmethod
    def argument(cls, text: str) -> Self:
        """`parse` for an argparse `type=` (with `choices=tuple(cls)`, which its help lists): a
        value none of the members is argparse's error, naming the choices."""
        try:
            return cls.parse(text)
        except VocabularyError as err:
            raise argparse.ArgumentTypeError(str(err)) from None


class NetworkMode(Term, what="network"):
    """What a WAN's edges do for a group's exchange (docs/cost-model.md, "Network modes")."""

    PLAIN = "plain"  # they only route: the hosts run a ring or a direct exchange (NCCL, gloo)
    MULTICAST = "multicast"  # they replicate each member's stream; the hosts sum
    INNA = "inna"  # they replicate and merge in line (in-network aggregation)
    GLOO = "gloo"  # torch.distributed's gloo over TCP between the leaders: the baseline
    ONE_DC = "one-dc"  # the same islands in one building, inna: the reference (no WAN)


# the planner's models, and what a scenario's `networks` may list
PLANNED_NETWORKS = (NetworkMode.PLAIN, NetworkMode.MULTICAST, NetworkMode.INNA)
SCENARIO_NETWORKS = (*PLANNED_NETWORKS, NetworkMode.GLOO)


class Collective(Term, what="collective"):
    """How one group exchanges its updates in one round."""

    INNA = "inna"  # in-line aggregation at the edges
    MULTICAST = "multicast"  # the edges replicate, each member sums the others' streams
    RING = "ring"  # ring all-reduce over unicast
    DIRECT = "direct"  # every member unicasts to every other and sums
    GLOO = "gloo"  # torch.distributed's gloo all-reduce
    LOCAL = "local"  # a group of one: nothing leaves the island


EXACT_COLLECTIVES = (Collective.INNA, Collective.MULTICAST, Collective.DIRECT, Collective.RING)


class Pacing(Term, what="pacing"):
    """How the planner models a leader's sending (controller/planner/params.py)."""

    RATE = "rate"  # at the planned rate; a slot is busy for the arrival skew
    WINDOW = "window"  # at most one bank of slots unanswered, as the worker library does


class P4Target(Term, what="target"):
    """The P4 target an edge runs on (ARCHITECTURE.md)."""

    P4SWITCH = "p4switch"  # innet's own P4 switch
    BMV2 = "bmv2"  # BMv2's simple_switch_grpc, the reference


class Backend(Term, what="back end"):
    """How p4switch runs a program: compiled to C (native) or interpreted (python). p4switch
    names its own (p4switch.backends.NAMES); a test holds the two lists equal."""

    NATIVE = "native"
    PYTHON = "python"


class Shaping(Term, what="shaping"):
    """Who shapes the WAN links (topo/shaping.py); AUTO: the best this machine has."""

    AUTO = "auto"
    KERNEL = "kernel"  # netem and TBF on the links' interfaces
    SWITCH = "switch"  # the switches' own egress shapers
    LINKS = "links"  # a link emulator process in the middle of each WAN link


class PrimaryState(Term, what="primary state"):
    """Whether the controller is a switch's P4Runtime primary."""

    OK = "ok"
    LOST = "lost"  # it is not: another client is, or none is and it is asking again


class EntityState(Term, what="entity state"):
    """What the controller knows of a switch's entities."""

    OK = "ok"  # as the controller wrote them
    DIVERGED = "diverged"  # they may differ from what the controller wants: reconcile


class WriteState(Term, what="write state"):
    """How the controller's last write to a switch ended."""

    OK = "ok"
    TIMED_OUT = "timed out"  # with an unknown outcome: the switch may or may not have it
