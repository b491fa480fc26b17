"""The native I/O library as ctypes sees it: its structures and the prototypes of its functions.

`library()` builds (once per source version, `p4switch.nativeio.build`) and loads it, then
declares every function it exports; a CDLL releases the GIL for each call, so a call that waits
for the loop's lock never holds up the Python thread the loop may call back.
"""

from __future__ import annotations

import ctypes
import functools
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_double,
    c_int,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)

from p4switch.nativeio.build import load
from p4switch.shaping import ShapeSpec
from p4switch.switchports import DROP_REASONS

MAX_OUT = 64  # P4S_MAX_OUT: frames one input may produce
FRAME_MAX = 9216  # P4S_FRAME_MAX: bytes per emitted frame
CPU_DELIVERED, CPU_LISTENER_FAILED, CPU_NO_LISTENER = 0, 1, 2


class NioOut(Structure):
    """`p4s_out`: the frames the processor emits for one input."""

    _fields_ = [
        ("n", c_uint32),
        ("port", c_uint32 * MAX_OUT),
        ("len", c_uint32 * MAX_OUT),
        ("data", (c_uint8 * FRAME_MAX) * MAX_OUT),
    ]


DATA_OFFSET: int = NioOut.data.offset  # ctypes' CField


class NioSpec(Structure):
    """`nio_spec`: a `ShapeSpec` as the C queue reads it (rate 0: no rate)."""

    _fields_ = [
        ("delay_s", c_double),
        ("rate_bps", c_double),
        ("loss", c_double),
        ("jitter_s", c_double),
        ("queue_limit", c_uint32),
        ("reorder", c_int),
    ]

    @classmethod
    def of(cls, spec: ShapeSpec) -> NioSpec:
        return cls(
            spec.delay_s,
            spec.rate_bps or 0.0,
            spec.loss,
            spec.jitter_s,
            min(spec.queue_limit, 2**32 - 1),
            int(spec.reorder),
        )


class NioFrame(Structure):
    """`nio_frame`: one frame popped from a queue (its data is freed with `nio_free`)."""

    _fields_ = [
        ("due", c_double),
        ("ref", c_double),
        ("seq", c_uint64),
        ("len", c_uint32),
        ("data", c_void_p),
    ]


class NioCounters(Structure):
    """`nio_counters`: one port's traffic counters, drops in `DROP_REASONS` order."""

    _fields_ = [
        ("rx_packets", c_uint64),
        ("rx_bytes", c_uint64),
        ("tx_packets", c_uint64),
        ("tx_bytes", c_uint64),
        ("drops", c_uint64 * len(DROP_REASONS)),
    ]

    def snapshot(self) -> dict[str, object]:
        """The same shape as `p4switch.switchports.PortCounters.snapshot`."""
        return {
            "rx_packets": self.rx_packets,
            "rx_bytes": self.rx_bytes,
            "tx_packets": self.tx_packets,
            "tx_bytes": self.tx_bytes,
            "drops": dict(zip(DROP_REASONS, self.drops, strict=True)),
        }


class NioPortStats(Structure):
    """`nio_port_stats`: counters, queue depth and held frames, the two peaks."""

    _fields_ = [
        ("counters", NioCounters),
        ("queue_depth", c_uint64),
        ("queue_held", c_uint64),
        ("lateness_max_s", c_double),
        ("rx_lag_max_s", c_double),
    ]


# p4s_process_fn(ctx, ingress_port, data, len, out) -> 0, or -1 (frame dropped)
PROCESS_FN = CFUNCTYPE(c_int, c_void_p, c_uint32, c_void_p, c_uint32, c_void_p)
# nio_cpu_fn(data, len) -> CPU_DELIVERED, CPU_LISTENER_FAILED or CPU_NO_LISTENER
CPU_FN = CFUNCTYPE(c_int, c_void_p, c_uint32)

_PROTOTYPES: dict[str, tuple[object, list[object]]] = {
    "nio_queue_new": (c_void_p, [c_uint64, c_uint32]),
    "nio_queue_free": (None, [c_void_p]),
    "nio_queue_set_spec": (None, [c_void_p, POINTER(NioSpec)]),
    "nio_queue_offer": (c_int, [c_void_p, c_void_p, c_uint32, c_double]),
    "nio_queue_pop_due": (c_size_t, [c_void_p, c_double, POINTER(NioFrame), c_size_t]),
    "nio_queue_next_due": (c_int, [c_void_p, POINTER(c_double)]),
    "nio_queue_backlog": (c_size_t, [c_void_p, c_double]),
    "nio_queue_held": (c_size_t, [c_void_p]),
    "nio_queue_lateness": (c_double, [c_void_p, c_int]),
    "nio_free": (None, [c_void_p]),
    "nio_create": (
        c_void_p,
        [
            c_uint32,
            POINTER(c_int),
            POINTER(c_uint32),
            POINTER(c_int),
            POINTER(c_uint64),
            c_int,
            c_uint32,
            c_int,
            c_int,
        ],
    ),
    "nio_destroy": (None, [c_void_p]),
    "nio_set_capture": (c_int, [c_void_p, c_uint32, c_char_p, c_char_p]),
    "nio_flush_captures": (None, [c_void_p]),
    "nio_set_processor": (c_int, [c_void_p, c_void_p, c_void_p]),
    "nio_epoch": (c_uint64, [c_void_p]),
    "nio_set_cpu_listener": (None, [c_void_p, c_void_p]),
    "nio_set_shape": (None, [c_void_p, c_uint32, POINTER(NioSpec)]),
    "nio_inject": (c_int, [c_void_p, c_uint32, c_void_p, c_uint32]),
    "nio_run": (c_int, [c_void_p, c_double]),
    "nio_port_stats_of": (None, [c_void_p, c_uint32, c_int, POINTER(NioPortStats)]),
    "nio_cpu_stats": (None, [c_void_p, POINTER(NioCounters)]),
}


@functools.cache
def library() -> ctypes.CDLL:
    """The loaded library, its functions declared (`NativeIOBuildError` if it cannot be)."""
    lib = load()
    for name, (restype, argtypes) in _PROTOTYPES.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib
