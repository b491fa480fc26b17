"""`NativePipeline`: the program compiled to C, run against one `SwitchState`.

It offers the surface of `p4switch.compiler.Pipeline` (`process`, `state`, `cpu_port`,
`counts`) and behaves the same frame for frame, but for the `random` extern, whose generator
(splitmix64 seeded from `seed`) gives another sequence than Python's `random`. A frame whose
output would exceed `P4S_FRAME_MAX` bytes is dropped (`drop.internal_error`), and outputs past
`P4S_MAX_OUT` for one input are dropped (`drop.output_full`); the python back end has no such
limits. `native_entry` hands the C function and its context to a native I/O loop.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from p4switch import ir, runtime
from p4switch.compiler import v1model
from p4switch.compiler.v1model import DROP_PORT
from p4switch.exceptions import CompilerBug, NativeBuildError, P4SwitchError, UsageError
from p4switch.native.cmodule import NativeCode, generate_c
from p4switch.native.sync import NativeMember, StateLock, StateSync
from p4switch.native.toolchain import library, load

log = logging.getLogger(__name__)

MAX_OUT = 64
FRAME_MAX = 9216
DROPS = (
    "drop.ingress",
    "drop.egress",
    "drop.multicast_group_empty",
    "drop.clone_session_missing",
    "drop.clone_depth",
    "drop.internal_error",
    "drop.output_full",
)  # the order of the P4S_DROP_* counters of support.c
TOUCH_MAX = 256


class PipelineArgumentError(UsageError, ValueError):
    """A `parser_reject` or `cpu_port` the pipeline does not take (a ValueError, as for
    `Pipeline`)."""


class Out(ctypes.Structure):
    """`p4s_out` of abi.h."""

    _fields_ = [
        ("n", ctypes.c_uint32),
        ("port", ctypes.c_uint32 * MAX_OUT),
        ("len", ctypes.c_uint32 * MAX_OUT),
        ("data", (ctypes.c_uint8 * FRAME_MAX) * MAX_OUT),
    ]


class _Buffers:
    """One thread's output frames and direct counter log, with views made once."""

    def __init__(self) -> None:
        self.out = Out()
        self.ref = ctypes.byref(self.out)
        self.base = ctypes.addressof(self.out.data)
        self.ports = self.out.port
        self.lens = self.out.len
        self.touched = (ctypes.c_int64 * (3 * TOUCH_MAX))()


@dataclass(frozen=True, eq=False)
class NativeModule:
    """A program's generated C, built and loaded."""

    code: NativeCode
    lib: ctypes.CDLL


_BUILT: weakref.WeakKeyDictionary[ir.Program, NativeModule] = weakref.WeakKeyDictionary()
_BUILDING = threading.Lock()


def build(program: ir.Program) -> NativeModule:
    """The native module of `program`: generated, built (or found in the cache) and loaded once
    per process. `NativeUnsupported` or `NativeBuildError` when it cannot be, `CompilerBug`
    when generating its C fails otherwise (a p4switch bug)."""
    with _BUILDING:
        found = _BUILT.get(program)
        if found is None:
            try:
                code = generate_c(program)
            except (P4SwitchError, MemoryError):
                raise
            except Exception as exc:  # a p4switch bug: said in one line, where it was raised
                raise CompilerBug.of(exc) from exc
            found = _BUILT[program] = NativeModule(code, load(library(code.source)))
        return found


class NativePipeline:
    """Runs packets through the program's C code against one `SwitchState`."""

    def __init__(
        self,
        program: ir.Program,
        state: runtime.SwitchState,
        *,
        cpu_port: int | None = None,
        parser_reject: str = "drop",
        seed: int | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        if parser_reject not in ("drop", "ingress"):
            raise PipelineArgumentError(
                f"parser_reject must be 'drop' or 'ingress', not {parser_reject!r}"
            )
        if cpu_port is not None and not 0 <= cpu_port < DROP_PORT:
            raise PipelineArgumentError(f"cpu_port {cpu_port} is outside 0..510")
        module = build(program)
        self.state = state
        self.cpu_port = cpu_port
        self._code = module.code
        self._lib = lib = module.lib
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        self._ctx: int = lib.p4s_new(seed & (2**64 - 1), parser_reject == "drop")
        if not self._ctx:
            raise NativeBuildError("no memory for a native pipeline context")
        self._cells = self._bind(state)
        self._sync = StateSync(lib, self._ctx, module.code, state)
        self._member = NativeMember(lib, self._ctx, self._sync)
        weakref.finalize(self._member, lib.p4s_free, self._ctx)
        if not isinstance(state.lock, StateLock):
            with state.lock:
                # the lock object stands in for the RLock: acquire, release and `with` alike
                state.lock = cast(threading.RLock, StateLock())
        lock = cast(StateLock, state.lock)
        lock.add(self._member)
        with lock:
            self._sync.push()
        self._process = lib.p4s_process
        # the clock given, else v1model's (unless replaced, by a test): a clock other than
        # time.monotonic_ns stamps the frames from Python
        if clock is None:
            clock = v1model.time.monotonic_ns  # type: ignore[attr-defined]  # tests replace it
        self._clock = None if clock is time.monotonic_ns else clock
        self._start = clock()
        self._local = threading.local()  # output buffers: one per thread calling process
        # direct counters and ageing hits come back per frame
        self._direct = any(self._sync.direct) or any(self._sync.ageing)

    def _bind(self, state: runtime.SwitchState) -> list[ctypes.Array[ctypes.c_uint64]]:
        """Make the registers' and counters' cells C memory (ctypes arrays) the C code uses."""
        kept: list[ctypes.Array[ctypes.c_uint64]] = []

        def view(cells: object) -> ctypes.Array[ctypes.c_uint64]:
            if isinstance(cells, ctypes.Array):
                return cells
            values = list(cast(list[int], cells))
            return (ctypes.c_uint64 * len(values))(*values)

        for i, name in enumerate(self._code.registers):
            register = state.register(name)
            cells = view(register.cells)
            # a ctypes array indexes, slices and assigns like the list it replaces
            register.cells = cast(list[int], cells)
            self._lib.p4s_bind_register(self._ctx, i, cells)
            kept.append(cells)
        for i, name in enumerate(self._code.counters):
            counter = state.counter(name)
            packets, nbytes = view(counter.packets), view(counter.bytes)
            counter.packets, counter.bytes = cast(list[int], packets), cast(list[int], nbytes)
            self._lib.p4s_bind_counter(self._ctx, i, packets, nbytes)
            kept += [packets, nbytes]
        return kept

    @property
    def native_entry(self) -> tuple[int, int]:
        """(address of `p4s_process`, address of its context), for a native I/O loop."""
        address = ctypes.cast(self._process, ctypes.c_void_p).value
        assert address is not None
        return address, self._ctx

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet; the (port, frame) pairs it produces, in order."""
        sync = self._sync
        if sync.current() != sync.stamp:  # changed without the lock: bring the copies up to date
            with self.state.lock:
                pass
        b: _Buffers | None = getattr(self._local, "buffers", None)
        if b is None:
            b = self._local.buffers = _Buffers()
        if type(data) is not bytes:
            data = bytes(data)
        if self._clock is not None:
            self._lib.p4s_set_clock(self._ctx, (self._clock() - self._start) // 1000)
        if self._process(self._ctx, ingress_port, data, len(data), b.ref) < 0:
            log.error("packet from port %d: native processing failed", ingress_port)
        if self._direct:
            n = self._lib.p4s_touched(self._ctx, b.touched)
            if n:
                self._sync.count_touched(b.touched, n)
        ports, lens, base = b.ports, b.lens, b.base
        return [(ports[i], ctypes.string_at(base + i * FRAME_MAX, lens[i])) for i in range(b.out.n)]

    @property
    def counts(self) -> dict[str, int]:
        """Drops and parser errors so far, as `Pipeline.counts` keys them (zeros left out)."""
        drops = (ctypes.c_uint64 * len(DROPS))()
        errors = (ctypes.c_uint64 * 256)()
        self._lib.p4s_counts(self._ctx, drops, errors)
        out = {name: n for name, n in zip(DROPS, drops, strict=True) if n}
        names = self._code.errors
        for code, n in enumerate(errors):
            if n:
                out["parser_error." + (names[code] if code < len(names) else str(code))] = n
        return out
