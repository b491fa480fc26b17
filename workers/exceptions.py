"""Errors of the workers: aggregation, the innet packet codec, quantisation, transport, and
the island process protocol."""

from __future__ import annotations

from innet.exceptions import InnetError, InputError


class AggregationError(InnetError):
    """The round cannot produce an exact sum (and says why); nothing wrong is ever returned."""


class AggregationTimeout(AggregationError):
    """The round's deadline passed with chunks still missing; names them and the silent members."""

    def __init__(self, message: str, chunks: tuple[int, ...], members: tuple[int, ...]) -> None:
        super().__init__(message)
        self.chunks = chunks
        self.members = members


class ResultMismatch(AggregationError):
    """A RESULT contradicts what the group must sum (another membership, or another sum)."""


class PolicyError(InputError, ValueError):
    """A SendPolicy or GroupSpec that cannot work."""


class PacketError(InputError, ValueError):
    """Bytes that are not an innet packet, or fields out of range."""


class QuantiseError(InputError, ValueError):
    """Input the codec refuses (NaN or Inf, a bound out of range, a bad contributor count)."""


class TrainingConfigError(InputError, ValueError):
    """Training settings the trainers cannot use (a non-positive step count, a rate of NaN)."""


class TransportError(InnetError, OSError):
    """The transport cannot be opened or used (address, port, closed socket)."""


class ProtocolError(InputError, ValueError):
    """A line between the experiment runner and an island process that is not a message of
    the protocol (workers/protocol.py)."""
