"""The native loop's egress queue on its own, driven from Python with a caller's clock.

`NativeEgressQueue` has the methods of `p4switch.shaping.EgressQueue` that the loop uses
(`set_spec`, `offer`, `pop_due`, `next_due`, `backlog`, `len`, `lateness_max_s`), so the two are
tested side by side on the same frames and times. Its loss and jitter draws come from the C
generator (xoshiro256**, seeded from `seed` and `port`), not from `random.Random`: the same
seed gives a repeatable run, but not the same one as the Python queue.
"""

from __future__ import annotations

import ctypes
from types import TracebackType

from p4switch.nativeio.clib import NioFrame, NioSpec, library
from p4switch.nativeio.errors import NativeIOError
from p4switch.shaping import ShapeSpec, Verdict

_POP_BATCH = 256


class NativeEgressQueue:
    """One shaped egress port's frames in the C queue; `close` (or `with`) frees them."""

    def __init__(self, spec: ShapeSpec, seed: int = 0, port: int = 0) -> None:
        self._lib = library()
        self._queue: int | None = self._lib.nio_queue_new(seed % 2**64, port)
        if not self._queue:
            raise NativeIOError("no memory for a native egress queue")
        self._spec = spec
        self.set_spec(spec)

    def _handle(self) -> int:
        if self._queue is None:
            raise NativeIOError("the native egress queue is closed")
        return self._queue

    @property
    def spec(self) -> ShapeSpec:
        return self._spec

    def set_spec(self, spec: ShapeSpec) -> None:
        """Shape frames offered from now on by `spec`; held frames keep their due times."""
        self._lib.nio_queue_set_spec(self._handle(), ctypes.byref(NioSpec.of(spec)))
        self._spec = spec

    def offer(self, frame: bytes, now: float) -> Verdict:
        """Queue `frame` arriving at `now`, or say to send it now, or drop it."""
        return Verdict(self._lib.nio_queue_offer(self._handle(), frame, len(frame), now))

    def pop_due(self, now: float) -> list[bytes]:
        """The frames due at or before `now`, in the order they leave, removed from the queue."""
        handle = self._handle()
        frames = (NioFrame * _POP_BATCH)()
        due: list[bytes] = []
        while True:
            count = self._lib.nio_queue_pop_due(handle, now, frames, _POP_BATCH)
            for frame in frames[:count]:
                due.append(ctypes.string_at(frame.data, frame.len))
                self._lib.nio_free(frame.data)
            if count < _POP_BATCH:
                return due

    def next_due(self) -> float | None:
        """When the first held frame is due, or None when nothing is held."""
        due = ctypes.c_double()
        if self._lib.nio_queue_next_due(self._handle(), ctypes.byref(due)):
            return due.value
        return None

    def backlog(self, now: float) -> int:
        """Frames waiting for (or in) serialisation at `now`."""
        return int(self._lib.nio_queue_backlog(self._handle(), now))

    @property
    def lateness_max_s(self) -> float:
        """The most a frame left after its due time (measured at `pop_due`)."""
        return float(self._lib.nio_queue_lateness(self._handle(), 0))

    def __len__(self) -> int:
        return int(self._lib.nio_queue_held(self._handle()))

    def close(self) -> None:
        if self._queue is not None:
            self._lib.nio_queue_free(self._queue)
            self._queue = None

    def __enter__(self) -> NativeEgressQueue:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
