"""innet.p4 on the native back end against the python one: the three-edge triangle of
tests/unit/dataplane/harness.py (groups installed as the controller would, frames carried edge to
edge) on each, the same frames (random, boundary and malformed) through both; what reaches the
hosts, `counts`, register cells, counters and direct counters must be the same. (p4switch's own
tests compare the back ends on its test programs: p4switch/tests/native/test_differential.py.)
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4switch.compiler.v1model import Pipeline
from p4switch.native import NativePipeline, available
from p4switch.program import CompiledProgram

from tests.unit.dataplane import harness as h

pytestmark = pytest.mark.skipif(available() is not None, reason=f"{available()}")

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
AnyPipeline = Pipeline | NativePipeline


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


# --- innet.p4 on the triangle ---------------------------------------------------------------------


def triangles(monkeypatch: pytest.MonkeyPatch) -> tuple[h.Triangle, h.Triangle]:
    """The same triangle on each back end, with one merging group and one relay group."""
    h.FakeClock().install(monkeypatch)
    made = []
    for name in ("python", "native"):
        by = functools.partialmethod(CompiledProgram.pipeline, backend=name)
        with monkeypatch.context() as m:
            m.setattr(CompiledProgram, "pipeline", by)
            t = h.Triangle(64)
        t.install_group(7, 1, 0, [h.A, h.B, h.C])
        t.install_group(7, 1, 1, [h.A, h.C], merge=False)
        t.install_route(h.A, bytes([10, 0, 0, 0]), 8, h.NEXT_PORT, bytes(6))
        made.append(t)
    assert isinstance(made[1].edges[0].pipe, NativePipeline)
    return made[0], made[1]


messages = st.builds(
    h.Innet,
    type=st.sampled_from([0, h.CONTRIBUTION, h.RESULT, h.NACK, h.RECOVER, 5]),
    flags=st.integers(0, 15),
    job=st.sampled_from([7, 7, 8]),
    round=st.sampled_from([1, 1, 2]),
    group=st.sampled_from([0, 0, 1, 3]),
    src=st.integers(0, 3),
    chunk=st.sampled_from([0, 1, 1023, 1024, 2047, 65535]),
    values=st.lists(st.integers(-(2**31), 2**31 - 1), min_size=h.N, max_size=h.N).map(tuple),
    bitmap=st.integers(0, 7),
    version=st.sampled_from([1, 1, 1, 0, 2]),
)


@st.composite
def innet_traffic(draw: st.DrawFn) -> list[tuple[int, bytes]]:
    out = []
    for _ in range(draw(st.integers(1, 12))):
        island = draw(st.sampled_from(h.ISLANDS))
        frame = h.innet_frame(draw(messages), island)
        cut = draw(st.sampled_from([None, None, None, 0, 13, 14, 33, 34, 42, 57, 185, 187]))
        if cut is not None:
            frame = frame[:cut] if cut <= len(frame) else frame + bytes(cut - len(frame))
        out.append((island, frame))
    return out


@SETTINGS
@given(traffic=innet_traffic())
def test_innet_triangle_agrees_on_every_edge(
    monkeypatch: pytest.MonkeyPatch, traffic: list[tuple[int, bytes]]
) -> None:
    python, c = triangles(monkeypatch)
    for island, frame in traffic:
        python.send(island, frame)
        c.send(island, frame)
        assert c.hosts == python.hosts
    for e_python, e_c in zip(python.edges, c.edges, strict=True):
        assert snapshot(e_c.pipe) == snapshot(e_python.pipe)


def test_innet_edge_agrees_on_frames_cut_at_every_length(monkeypatch: pytest.MonkeyPatch) -> None:
    python, c = triangles(monkeypatch)
    msg = h.Innet(h.CONTRIBUTION, h.WAN, 7, 1, 0, h.B, 5, tuple(range(h.N)))
    frame = h.innet_frame(msg, h.A)
    frames = [(port, frame[:n]) for n in range(len(frame) + 2) for port in (1, 2, 3)]
    frames += [(1, frame + bytes(n)) for n in (1, 100)]
    run_both((python.edges[h.A].pipe, c.edges[h.A].pipe), frames)
