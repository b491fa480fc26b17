"""p4switch's native I/O loop: batched AF_PACKET receive and send, and egress shaping, in C.

`NativeSwitch` is a drop-in for `p4switch.dataplane.Switch` (same constructor, methods,
statistics and capture files; its clocks are the C loop's own, so no `clock`, `wall_clock`,
`poll` or `wait_timeout`). Its C sources (nio.h, queue.c, ring.c, pcap.c, loop.c next to
this file) are built with gcc into the cache directory on first use
(`p4switch.nativeio.build`) and loaded with ctypes; `available()` says whether that works here,
and if not, why.

The loop follows p4switch/docs/p4switch-process.md ("The I/O loop", "Shaping semantics", "Frames as
on the wire"). What differs: frames are read up to 64 at a time per port from a receive ring the
kernel shares with the loop (PACKET_MMAP, TPACKET_V2; recvmmsg where a socket cannot have one) and
written with one sendmmsg per port and batch; the loop waits with ppoll (nanosecond timeouts); and
the loss and jitter draws come from a C generator (xoshiro256**) seeded from `seed` and the port
number, so a run repeats itself but does not draw what `Switch`'s `random.Random` would. The error
of a processor without `native_entry` is logged as `Switch` logs it; the native pipeline counts its
own internal errors, and the loop counts each such frame as `pipeline_error`.
"""

from __future__ import annotations

from p4switch.nativeio.errors import NativeIOBuildError, NativeIOError, NativeSwitchArgumentError
from p4switch.nativeio.switch import NativeSwitch

__all__ = [
    "NativeIOBuildError",
    "NativeIOError",
    "NativeSwitch",
    "NativeSwitchArgumentError",
    "available",
]


def available() -> str | None:
    """None when the native loop can be used here, else why not (no gcc, a failed build)."""
    from p4switch.nativeio.clib import library

    try:
        library()
    except NativeIOBuildError as err:
        return str(err)
    return None
