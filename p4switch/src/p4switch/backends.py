"""Which back end runs a program, and which loop moves the frames: native where it can, python
where it must, and one line saying why.

Two back ends run the same compiled program: `native` (C generated from the IR, built with the
system C compiler, `p4switch.native`) and `python` (Python generated from the IR,
`p4switch.compiler`). Two I/O loops move frames: `native` (batched receive and send, shaping in
C, `p4switch.nativeio`) and `python` (`p4switch.dataplane`). Asked for by name, a back end or
loop that cannot run is an error (`BackendError`). Left to choose (`None`), p4switch takes the
native one, and the python one when the native one is unavailable (no C compiler, a build that
failed) or does not cover the program, with the reason in `BackendChoice.reason`.

    >>> choose(None, lambda: "no C compiler (gcc) on PATH")
    BackendChoice(name='python', reason='no C compiler (gcc) on PATH')
    >>> choose("python", lambda: None)
    BackendChoice(name='python', reason='asked for')
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p4switch.exceptions import P4SwitchError, UsageError, one_line

if TYPE_CHECKING:
    from p4switch import runtime
    from p4switch.program import CompiledProgram
    from p4switch.shaping import ShapeSpec

log = logging.getLogger(__name__)

NAMES = ("native", "python")


class BackendError(UsageError):
    """The back end or I/O loop asked for by name cannot run here or cannot run this program."""


@dataclass(frozen=True)
class BackendChoice:
    name: str  # "native" or "python"
    reason: str  # why not native ("asked for" when python was asked for); "" when native


def choose(requested: str | None, unavailable: Callable[[], str | None]) -> BackendChoice:
    """The back end to use: `requested`, or native unless `unavailable()` gives a reason."""
    if requested is not None and requested not in NAMES:
        raise BackendError(f"unknown back end {requested!r}: choose one of {', '.join(NAMES)}")
    if requested == "python":
        return BackendChoice("python", "asked for")
    reason = unavailable()
    if reason is None:
        return BackendChoice("native", "")
    if requested == "native":
        raise BackendError(f"the native back end cannot run here: {reason}")
    return BackendChoice("python", reason)


def _native_unavailable() -> str | None:
    try:
        from p4switch import native
    except ImportError as err:  # a broken install: say so, run on python
        return f"p4switch.native cannot be imported ({err})"
    return native.available()


def _nativeio_unavailable() -> str | None:
    try:
        from p4switch import nativeio
    except ImportError as err:
        return f"p4switch.nativeio cannot be imported ({err})"
    return nativeio.available()


@dataclass(frozen=True)
class Built:
    """A pipeline and the back end that runs it (with the reason when it is not native)."""

    pipeline: Any  # v1model.Pipeline or native.NativePipeline: both are PacketProcessors
    choice: BackendChoice


def build_pipeline(
    program: CompiledProgram,
    state: runtime.SwitchState,
    requested: str | None,
    *,
    cpu_port: int | None,
    parser_reject: str,
    clock: Callable[[], int] | None = None,
) -> Built:
    """`program` on the chosen back end; a program native does not cover runs on python
    (unless native was asked for: then `BackendError`, naming what it lacks). `clock`: what the
    global timestamps count on (nanoseconds; `time.monotonic_ns` unless given)."""
    choice = choose(requested, _native_unavailable)
    if choice.name == "native":
        try:
            pipeline = program.pipeline(
                state, cpu_port=cpu_port, parser_reject=parser_reject, backend="native", clock=clock
            )
            return Built(pipeline, choice)
        except P4SwitchError as err:  # NativeUnsupported or NativeBuildError
            if requested == "native":
                raise BackendError(f"the native back end cannot run this program: {err}") from err
            choice = BackendChoice("python", one_line(err))
    pipeline = program.pipeline(state, cpu_port=cpu_port, parser_reject=parser_reject, clock=clock)
    return Built(pipeline, choice)


def log_choice(what: str, choice: BackendChoice) -> None:
    """One line: which back end runs `what`, and why not native when it is not."""
    if choice.name == "native":
        log.info("%s: native", what)
    elif choice.reason == "asked for":
        log.info("%s: python (asked for)", what)
    else:
        log.warning("%s: python, because %s", what, choice.reason)


def build_switch(
    ports: Mapping[int, str],
    processor: Any,
    requested: str | None,
    *,
    shaping: Mapping[int, ShapeSpec],
    pcap_dir: Path | None,
    cpu_port: int | None,
) -> tuple[Any, BackendChoice]:
    """The I/O loop around `processor`: native unless unavailable or asked otherwise."""
    choice = choose(requested, _nativeio_unavailable)
    if choice.name == "native":
        from p4switch.nativeio import NativeSwitch

        try:
            native = NativeSwitch(
                ports, processor, shaping=shaping, pcap_dir=pcap_dir, cpu_port=cpu_port
            )
            return native, choice
        except P4SwitchError as err:  # e.g. a build that failed
            if requested == "native":
                raise BackendError(f"the native I/O loop cannot run: {err}") from err
            choice = BackendChoice("python", one_line(err))
    from p4switch.dataplane import Switch

    return Switch(ports, processor, shaping=shaping, pcap_dir=pcap_dir, cpu_port=cpu_port), choice
