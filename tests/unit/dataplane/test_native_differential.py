"""innet.p4 on the native back end against the python one: the three-edge triangle of
tests/unit/dataplane/harness.py (groups installed as the controller would, frames carried edge to
edge) on each, the same frames (random, boundary and malformed) through both; what reaches the
hosts, `counts`, register cells, counters and direct counters must be the same. (p4switch's own
tests compare the back ends on its test programs: p4switch/tests/native/test_differential.py.)
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2

from tests.unit.backends import native_unavailable
from tests.unit.dataplane import harness as h

pytestmark = pytest.mark.skipif(native_unavailable() is not None, reason=f"{native_unavailable()}")

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# --- comparing ------------------------------------------------------------------------------------


def snapshot(edge: h.Edge) -> dict[str, object]:
    """Everything a run leaves behind that the two back ends must agree on: the pipeline's own
    counts, register cells, counters, and the table entries with their direct counters."""
    switch, p4info = edge.switch, edge.switch.p4info
    counted = {d.direct_table_id for d in p4info.direct_counters}
    queries = [p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=0))]
    for table in counted:  # entries and the default entry, with their counts
        for default in (False, True):
            query = p4runtime_pb2.TableEntry(table_id=table, is_default_action=default)
            query.counter_data.SetInParent()
            queries.append(p4runtime_pb2.Entity(table_entry=query))
    return {
        "counts": switch.counts(),
        "registers": {r.preamble.name: switch.register(r.preamble.name) for r in p4info.registers},
        "counters": {c.preamble.name: edge.counter(c.preamble.name) for c in p4info.counters},
        "entries": sorted(e.SerializeToString(deterministic=True) for e in switch.read(queries)),
    }


def run_both(edges: tuple[h.Edge, h.Edge], frames: list[tuple[int, bytes]]) -> None:
    python, c = edges
    for port, frame in frames:
        assert c.pipe.process(port, frame) == python.pipe.process(port, frame), (port, frame.hex())
    assert snapshot(c) == snapshot(python)


# --- innet.p4 on the triangle ---------------------------------------------------------------------


def triangles(monkeypatch: pytest.MonkeyPatch) -> tuple[h.Triangle, h.Triangle]:
    """The same triangle on each back end, with one merging group and one relay group."""
    h.FakeClock().install(monkeypatch)
    made = []
    for name in ("python", "native"):
        with monkeypatch.context() as m:
            m.setattr(h.Pipelines, "backend", name)
            t = h.Triangle(64)
        t.install_group(7, 1, 0, [h.A, h.B, h.C])
        t.install_group(7, 1, 1, [h.A, h.C], merge=False)
        t.install_route(h.A, bytes([10, 0, 0, 0]), 8, h.NEXT_PORT, bytes(6))
        made.append(t)
    assert [t.edges[0].switch.backend for t in made] == ["python", "native"]
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
        assert snapshot(e_c) == snapshot(e_python)


def test_innet_edge_agrees_on_frames_cut_at_every_length(monkeypatch: pytest.MonkeyPatch) -> None:
    python, c = triangles(monkeypatch)
    msg = h.Innet(h.CONTRIBUTION, h.WAN, 7, 1, 0, h.B, 5, tuple(range(h.N)))
    frame = h.innet_frame(msg, h.A)
    frames = [(port, frame[:n]) for n in range(len(frame) + 2) for port in (1, 2, 3)]
    frames += [(1, frame + bytes(n)) for n in (1, 100)]
    run_both((python.edges[h.A], c.edges[h.A]), frames)
