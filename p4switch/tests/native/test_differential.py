"""The native back end against the python one: the same programs, control-plane writes and
frames (random, boundary and malformed) through both; emitted frames, `counts`, register cells,
counters and direct counters must be the same.

The test programs get random table entries, multicast groups and clone sessions from their
specs, and frames built to hit them.
"""

from __future__ import annotations

import contextlib
import functools
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4switch import EXAMPLES, native
from p4switch import runtime as rt
from p4switch.compiler.support import csum16
from p4switch.compiler.v1model import Pipeline
from p4switch.exceptions import StateError
from p4switch.native import NativePipeline
from p4switch.program import CompiledProgram, compile_file

pytestmark = pytest.mark.skipif(native.available() is not None, reason=f"{native.available()}")

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
EXTRAS = Path(__file__).resolve().parent / "programs"
PATHS = (
    EXAMPLES / "l2.p4",
    *(
        PROGRAMS / name
        for name in (
            "ipv4_lpm.p4",
            "multicast.p4",
            "clone.p4",
            "register_counter.p4",
            "agg32.p4",
            "features.p4",
            "p4info_full.p4",
        )
    ),
)
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
AnyPipeline = Pipeline | NativePipeline


@functools.cache
def program(path: Path) -> CompiledProgram:
    return compile_file(path)


# --- comparing ------------------------------------------------------------------------------------


def snapshot(pipe: AnyPipeline) -> dict[str, object]:
    """Everything a run leaves behind that the two back ends must agree on."""
    state = pipe.state
    with state.lock:  # native: reads the direct counters back from C
        return {
            "counts": dict(pipe.counts),
            "registers": {n: list(r.cells) for n, r in state.registers.items()},
            "counters": {n: (list(c.packets), list(c.bytes)) for n, c in state.counters.items()},
            "direct": {
                n: (
                    [(e.match, e.priority, e.packets, e.bytes) for e in t.entries()],
                    (t.default_packets, t.default_bytes),
                )
                for n, t in state.tables.items()
            },
        }


def run_both(pipes: tuple[AnyPipeline, AnyPipeline], frames: list[tuple[int, bytes]]) -> None:
    python, c = pipes
    for port, frame in frames:
        assert c.process(port, frame) == python.process(port, frame), (port, frame.hex())
    assert snapshot(c) == snapshot(python)


# --- the test programs, with random entries ------------------------------------------------------

SMALL = (0, 1, 2, 3, 0x0A000001, 0x0A000002)


def key_value(width: int, rng: random.Random) -> int:
    return rng.choice(SMALL) & ((1 << width) - 1)


def random_entry(spec: rt.TableSpec, actions: dict[str, rt.ActionSpec], rng: random.Random):
    match = []
    for k in spec.keys:
        value = key_value(k.bitwidth, rng)
        if k.match_kind == "exact":
            match.append(rt.exact(value, k.bitwidth))
        elif k.match_kind == "lpm":
            plen = rng.randint(0, k.bitwidth)
            mask = ((1 << plen) - 1) << (k.bitwidth - plen)
            match.append(rt.FieldMatch(value & mask, mask))
        else:
            mask = rng.choice([0, (1 << k.bitwidth) - 1, rng.getrandbits(k.bitwidth)])
            match.append(rt.FieldMatch(value & mask, mask))
    name = rng.choice([a for a in spec.actions if a not in spec.default_only] or spec.actions)
    args = tuple(rng.getrandbits(min(p.bitwidth, 9)) for p in actions[name].params)
    priority = rng.randint(1, 5) if spec.needs_priority else 0
    return rt.TableEntry(tuple(match), rt.ActionCall(name, args), priority)


def configure(state: rt.SwitchState, seed: int) -> None:
    """Random entries in every table, groups 1-3 and clone sessions 1-6, from `seed` alone."""
    rng = random.Random(seed)
    for t in state.tables.values():
        for _ in range(rng.randint(0, 12)):
            with contextlib.suppress(StateError):  # a duplicate key, a const table: on both alike
                t.insert(random_entry(t.spec, state.actions, rng))
    for group in (1, 2, 3):
        replicas = {
            rt.Replica(rng.randint(0, 5), rng.randint(0, 3)) for _ in range(rng.randint(0, 3))
        }
        state.pre.insert_group(group, sorted(replicas, key=lambda r: (r.egress_port, r.instance)))
    for session in range(1, 7):
        replica = rt.Replica(rng.randint(0, 5), rng.randint(0, 3))
        cut = rng.choice([0, 0, 20, 64])
        state.pre.insert_session(rt.CloneSession(session, (replica,), packet_length_bytes=cut))
    for r in state.registers.values():
        for i in range(min(4, r.spec.size)):
            r.write(i, rng.getrandbits(r.spec.bitwidth))


def ipv4(rng: random.Random) -> bytes:
    dst = rng.choice([0x0A000001, 0x0A000002, 0x0A000003, rng.getrandbits(32)])
    header = bytearray(
        bytes([0x45, 0, 0, 40, 0, 0, 0, 0, rng.choice([0, 1, 2, 64]), rng.choice([6, 17])])
        + bytes(2)
        + rng.getrandbits(32).to_bytes(4, "big")
        + dst.to_bytes(4, "big")
    )
    if rng.random() < 0.8:
        header[10:12] = csum16(bytes(header)).to_bytes(2, "big")
    return bytes(header)


def random_frame(rng: random.Random) -> bytes:
    dst = key_value(48, rng) if rng.random() < 0.7 else rng.getrandbits(48)
    ether_type = rng.choice([0x0800, 0x0800, 0x88B5, 0x88B5, 0x88B6, 0x88B7, 0x1234])
    body = (
        ipv4(rng)
        if ether_type == 0x0800
        else bytes([rng.choice([1, 2, 3, 4, 5, 0x13, 0x20, 0x21, 0xFF])])
    )
    body += rng.randbytes(rng.randint(0, 60))
    frame = dst.to_bytes(6, "big") + key_value(48, rng).to_bytes(6, "big")
    frame += ether_type.to_bytes(2, "big") + body
    if rng.random() < 0.2:
        frame = frame[: rng.randint(0, len(frame))]
    return frame


def pair(path: Path, seed: int, parser_reject: str) -> tuple[AnyPipeline, AnyPipeline]:
    compiled = program(path)
    pipes = []
    for backend in ("python", "native"):
        state = compiled.new_state()
        configure(state, seed)
        pipes.append(compiled.pipeline(state, parser_reject=parser_reject, backend=backend))
    return pipes[0], pipes[1]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
@SETTINGS
@given(seed=st.integers(0, 2**32), parser_reject=st.sampled_from(["ingress", "drop"]))
def test_programs_agree_with_random_entries_and_frames(
    path: Path, seed: int, parser_reject: str
) -> None:
    pipes = pair(path, seed, parser_reject)
    rng = random.Random(seed)
    run_both(pipes, [(rng.randint(0, 5), random_frame(rng)) for _ in range(40)])


@SETTINGS
@given(seed=st.integers(0, 2**32))
def test_control_plane_changes_between_frames_reach_both(seed: int) -> None:
    """Entries deleted and added, defaults changed and groups rewritten between frames."""
    pipes = pair(PROGRAMS / "ipv4_lpm.p4", seed, "ingress")
    rng = random.Random(seed)
    for _ in range(6):
        frames = [(rng.randint(0, 5), random_frame(rng)) for _ in range(10)]
        run_both(pipes, frames)
        step = rng.getrandbits(32)
        for pipe in pipes:
            mutate(pipe.state, step)


def mutate(state: rt.SwitchState, seed: int) -> None:
    rng = random.Random(seed)
    with state.lock:
        for t in state.tables.values():
            entries = list(t.entries())
            if entries and rng.random() < 0.5:
                e = rng.choice(entries)
                t.delete(e.match, e.priority)
            with contextlib.suppress(StateError):  # a duplicate key: the same on both states
                t.insert(random_entry(t.spec, state.actions, rng))
        if state.pre.groups:
            group = rng.choice(sorted(state.pre.groups))
            state.pre.modify_group(group, [rt.Replica(rng.randint(0, 5), 9)])


@SETTINGS
@given(seed=st.integers(0, 2**32))
def test_extras_agree_where_random_has_one_value(seed: int) -> None:
    """extras.p4: ternary priorities, a packets-only direct counter, wide and run-time-limited
    hashes, advance, signed shifts and saturation. `random(lo, hi)` with hi <= lo is lo on both
    (their generators differ otherwise)."""
    pipes = pair(EXTRAS / "extras.p4", seed, "ingress")
    rng = random.Random(seed)
    frames = []
    for _ in range(40):
        lo = rng.getrandbits(16)
        probe = bytes([rng.choice([0, 1, 2, 3, 0xFF]), rng.randint(0, 20)])
        probe += lo.to_bytes(2, "big") + rng.randint(0, lo).to_bytes(2, "big")
        probe += rng.randbytes(2 + 20)
        ether = rng.choice([0x88B6, 0x88B7, 0x0800]).to_bytes(2, "big")
        frame = key_value(48, rng).to_bytes(6, "big") + rng.randbytes(6) + ether + probe
        frames.append((1, frame[: rng.choice([len(frame), len(frame), 20, 30])]))
    run_both(pipes, frames)
