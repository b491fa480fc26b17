"""Play a case on several targets at once, step by step, and record what each one did.

Every step is done on every target, then the harness listens on every port of every target
until all have been quiet for the case's settle time (0.2 s unless it says otherwise). That is
safe because nothing shapes these ports: no delay, rate or queue is configured on the veths or
in the switches, so a frame leaves a switch as soon as the switch has processed it, well under
a millisecond for either target. A frame that comes later than that is not lost either: it is
recorded under the next step, and shows up as a difference, never as an agreement.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from controller.p4rt.exceptions import SchemaError
from controller.p4rt.schema import Schema
from p4diff.case import Case, ReadCounters, Send, Step, Write
from p4diff.exceptions import CaseError, CaseFailed, TargetError
from p4diff.netns import PeerPort
from p4diff.recording import CPU, Cells, Recording, StepRecord
from p4diff.targets import Target, TargetPipeline, target_kind
from p4diff.writes import updates

log = logging.getLogger(__name__)

QUIET_LIMIT_S = 30.0  # ports still busy after this long: a forwarding loop, not a slow switch


def check_against(case: Case, schema: Schema, kind: str) -> None:
    """Every name and value of every batch and counter read fits this P4Info (CaseError
    naming the step otherwise), before any switch is started."""
    for step in case.steps:
        try:
            if isinstance(step, Write):
                updates(schema, step.batch)
            elif isinstance(step, ReadCounters):
                schema.counter(step.counter)
        except SchemaError as err:
            raise CaseError(
                case.path, step.line, f"{step.label} ({kind}'s P4Info): {err}"
            ) from None


def play(
    case: Case,
    targets: Sequence[Target],
    *,
    on_step: Callable[[Step], None] | None = None,
) -> list[Recording]:
    """Every step on every target; one recording per target."""
    records: list[list[StepRecord]] = [[] for _ in targets]
    for step in case.steps:
        outcomes: list[str | None] = []
        counters: list[dict[str, Cells]] = []
        for target in targets:
            target.check_alive()
            outcome, cells = _act(case, step, target)
            outcomes.append(outcome)
            counters.append(cells)
        heard = collect([t.peers for t in targets], case.settle)
        for k, target in enumerate(targets):
            emitted, stray = heard[k]
            packet_ins = target.packet_ins()
            if packet_ins:
                emitted[CPU] = tuple(p.payload for p in packet_ins)
            metadata = tuple(
                " ".join(f"{name}={value}" for name, value in sorted(p.metadata.items()))
                for p in packet_ins
            )
            records[k].append(
                StepRecord(
                    step.label, step.what, emitted, stray, outcomes[k], counters[k], metadata
                )
            )
        if on_step is not None:
            on_step(step)
    return [
        Recording(t.name, case.path.name, tuple(r)) for t, r in zip(targets, records, strict=True)
    ]


def _act(case: Case, step: Step, target: Target) -> tuple[str | None, dict[str, Cells]]:
    if isinstance(step, Send):
        peer = target.peers[step.port]
        for _ in range(step.repeat):
            peer.send(step.frame)
        return None, {}
    if isinstance(step, ReadCounters):
        return None, {step.counter: target.read_counter(step.counter)}
    assert isinstance(step, Write)
    outcome, why = target.write(step.batch)
    expected = "refused" if step.batch.expect_refused else "applied"
    if outcome != expected:
        said = f": {why}" if why else ""
        raise CaseFailed(
            f"{case.path}:{step.line or '-'}: {step.label} ({step.what}): target {target.name} "
            f"{outcome} the batch, the case requires it {expected}{said}"
        )
    return outcome, {}


Heard = tuple[dict[str, tuple[bytes, ...]], dict[str, tuple[bytes, ...]]]


def collect(peers: Sequence[dict[int, PeerPort]], settle: float) -> list[Heard]:
    """What every port of every target emitted (and any stray frame), once all have been
    quiet for `settle` seconds."""
    heard: list[tuple[dict[str, list[bytes]], dict[str, list[bytes]]]] = [({}, {}) for _ in peers]
    owner = {peer.fileno(): (k, peer) for k, ports in enumerate(peers) for peer in ports.values()}
    start = quiet_since = time.monotonic()
    while (left := settle - (time.monotonic() - quiet_since)) > 0:
        ready, _, _ = select.select(list(owner), [], [], left)
        for fd in ready:
            k, peer = owner[fd]
            for got in peer.receive_all():
                heard[k][1 if got.stray else 0].setdefault(str(peer.port), []).append(got.frame)
            quiet_since = time.monotonic()
        if time.monotonic() - start > QUIET_LIMIT_S:
            raise TargetError(f"the ports did not go quiet in {QUIET_LIMIT_S:g} s: a loop?")
    return [
        ({p: tuple(f) for p, f in emitted.items()}, {p: tuple(f) for p, f in stray.items()})
        for emitted, stray in heard
    ]


def namespace_name(index: int) -> str:
    """`p4d<pid>t<index>`: never the name of anything this run did not create."""
    return f"p4d{os.getpid()}t{index}"


def target_names(kinds: Sequence[str]) -> list[str]:
    """A name per target, unique in reports: p4switch, p4switch-2, bmv2."""
    names = []
    for k, kind in enumerate(kinds):
        n = kinds[:k].count(kind)
        names.append(kind if n == 0 else f"{kind}-{n + 1}")
    return names


def run_case(
    case: Case,
    kinds: Sequence[str],
    workdir: Path,
    *,
    on_step: Callable[[Step], None] | None = None,
) -> list[Recording]:
    """Compile the case's program for each kind of target (once), check the case against each
    P4Info, start every target and play the case on them; everything started is stopped."""
    found = [target_kind(name) for name in kinds]
    pipelines: dict[str, TargetPipeline] = {}
    for kind in found:
        if kind.name not in pipelines:
            pipelines[kind.name] = kind.pipeline(case, workdir)
            check_against(case, Schema(pipelines[kind.name].p4info), kind.name)
    with contextlib.ExitStack() as stack:
        sockets = Path(tempfile.mkdtemp(prefix="p4d"))  # short: a unix socket path is <108 B
        stack.callback(shutil.rmtree, sockets, ignore_errors=True)
        targets = [
            stack.enter_context(
                Target(name, kind, pipelines[kind.name], case, namespace_name(k), workdir, sockets)
            )
            for k, (name, kind) in enumerate(zip(target_names(kinds), found, strict=True))
        ]
        for target in targets:
            target.program()
        return play(case, targets, on_step=on_step)
