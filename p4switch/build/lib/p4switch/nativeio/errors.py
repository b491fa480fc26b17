"""What the native I/O loop raises, each a kind of an existing p4switch error."""

from __future__ import annotations

from p4switch.exceptions import PortError, UsageError


class NativeIOBuildError(PortError):
    """The native I/O loop cannot be built or loaded here (no gcc, a failed build): use the
    Python loop, `p4switch.dataplane.Switch`, instead."""


class NativeIOError(PortError):
    """The native I/O loop failed while forwarding (a port's socket went away, out of memory)."""


class NativeSwitchArgumentError(UsageError, ValueError):
    """A port map or CPU port `NativeSwitch` refuses (a `ValueError`, as `Switch` raises)."""
