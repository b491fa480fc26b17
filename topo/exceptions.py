"""Errors of the WAN model, the site plan and the emulated network (all `InnetError`s)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import p4switch

from innet.exceptions import InnetError, InputError


class TopologyError(InputError, ValueError):
    """A WAN file that cannot be loaded; str() is "{path}:{line}: {what is wrong}" (without the
    line when the problem is the file itself, e.g. it cannot be read)."""

    def __init__(self, path: Path | str, line: int | None, what: str) -> None:
        super().__init__(f"{path}:{line}: {what}" if line is not None else f"{path}: {what}")
        self.path = path
        self.line = line
        self.what = what


class YamlLimitError(InputError, ValueError):
    """A YAML file over innet's size or depth limits (topo/yamlfile.py); `line` is where it
    goes too deep (None: the file as a whole). `YamlReader` reports it as its caller's own
    file:line error."""

    def __init__(self, line: int | None, what: str) -> None:
        super().__init__(what if line is None else f"line {line}: {what}")
        self.line = line
        self.what = what


class WanError(InputError, ValueError):
    """A WAN whose cities and links do not form a valid model."""


class UnknownCityError(InputError, ValueError):
    """A city name or code that the WAN does not have; the message lists the known ones."""


class NotAdjacentError(InputError, ValueError):
    """Two cities that no single link joins."""


class FitError(InnetError):
    """The delay fit cannot run (no measured pairs) or the solver failed."""


class SlotPoolError(InputError, ValueError):
    """Aggregator memory (or a slot count) that innet.p4's slot pool cannot hold."""


class SiteError(InputError, ValueError):
    """An island, host or link that the site plan gives no address or port."""


class ShapingError(InnetError):
    """A shaping mode that cannot be honoured here, or link figures it cannot carry."""


class NetworkBuildError(InnetError):
    """An emulated network that cannot be built as asked (names, addresses, interfaces in the
    way, a missing tool)."""


class SwitchControlError(InnetError):
    """A switch whose counters cannot be read (it is dead, restarting, or its channel is gone)."""


class SwitchStartError(InnetError):
    """A switch process that could not start, exited early, or did not become ready."""


class Bmv2Error(InnetError):
    """The BMv2 toolchain is missing or refused the program; the message says which."""


class P4SwitchRefusedError(InputError):
    """What innet gave p4switch (a program, its defines, a back end) refused: p4switch's own
    message (`file:line:col: error: ...` for a program)."""


class P4SwitchFailedError(InnetError):
    """Something innet asked of p4switch correctly that it could not do: p4switch's message."""


@contextmanager
def from_p4switch() -> Iterator[None]:
    """Around a call into p4switch: its errors come out as innet's, bad input still bad input
    (p4switch is a project of its own, whose errors are not `InnetError`s)."""
    try:
        yield
    except p4switch.InputError as err:
        raise P4SwitchRefusedError(str(err)) from err
    except p4switch.P4SwitchError as err:
        raise P4SwitchFailedError(str(err)) from err
