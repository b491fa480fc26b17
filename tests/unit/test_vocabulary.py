"""innet.vocabulary: each choice defined once, read at the edges into members, and nothing in the
testbed's packages comparing against a choice's value spelled as a string."""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import pytest
from p4switch import BACKENDS as P4SWITCH_BACKENDS

from controller.planner.exceptions import PlanError
from controller.planner.params import CostParams
from innet.vocabulary import (
    PLANNED_NETWORKS,
    SCENARIO_NETWORKS,
    Backend,
    Collective,
    EntityState,
    NetworkMode,
    P4Target,
    Pacing,
    PrimaryState,
    Shaping,
    Term,
    VocabularyError,
    WriteState,
)
from topo.exceptions import NetworkBuildError
from topo.loader import default_wan
from topo.mininet_net import NetworkSpec
from workers.protocol import COLLECTIVES, Go, decode_command, encode

REPO = Path(__file__).resolve().parents[2]
TERMS = (
    NetworkMode,
    Collective,
    P4Target,
    Backend,
    Shaping,
    Pacing,
    PrimaryState,
    EntityState,
    WriteState,
)
# the testbed's packages (p4switch names its own, and the benchmarks read its rows)
TESTBED = ("innet", "controller", "workers", "topo", "p4diff", "scripts")


@pytest.mark.parametrize("term", TERMS, ids=lambda t: t.__name__)
def test_every_value_reads_as_its_member_and_anything_else_is_refused(term: type[Term]) -> None:
    assert list(term) and "what" not in term.__members__  # the name in errors is no member
    for member in term:
        assert term.parse(member.value) is member and term.parse(member) is member
        assert str(member) == f"{member}" == member.value and json.dumps(member) == f'"{member}"'
    known = ", ".join(m.value for m in term)
    with pytest.raises(VocabularyError, match=f"unknown {term.what} 'nope'; known: {known}$"):
        term.parse("nope")
    with pytest.raises(argparse.ArgumentTypeError, match=f"unknown {term.what} 'nope'"):
        term.argument("nope")


def test_a_choice_among_some_members_refuses_the_others() -> None:
    assert PLANNED_NETWORKS == (NetworkMode.PLAIN, NetworkMode.MULTICAST, NetworkMode.INNA)
    assert (*PLANNED_NETWORKS, NetworkMode.GLOO) == SCENARIO_NETWORKS
    with pytest.raises(VocabularyError, match=r"known: plain, multicast, inna$"):
        NetworkMode.parse("gloo", among=PLANNED_NETWORKS)
    assert tuple(c for c in Collective if c != Collective.LOCAL) == COLLECTIVES


def test_the_testbed_and_p4switch_name_the_same_back_ends() -> None:
    assert tuple(Backend) == P4SWITCH_BACKENDS


def test_values_from_outside_become_members_where_they_enter() -> None:
    go = decode_command(encode(Go(1, 1, 0, (0, 1), 0.0, collective="ring", order=(1, 0))))
    assert isinstance(go, Go) and go.collective is Collective.RING
    with pytest.raises(ValueError, match="unknown collective 'local'"):
        Go(1, 1, 0, (0,), 0.0, collective="local")  # a group of one sends no Go of its own
    spec = NetworkSpec(default_wan(), 1, shaping="links", target="bmv2")
    assert (spec.shaping, spec.target) == (Shaping.LINKS, P4Target.BMV2)
    with pytest.raises(NetworkBuildError, match="unknown target 'tofino'; known: p4switch, bmv2"):
        NetworkSpec(default_wan(), 1, target="tofino")
    params = CostParams(10**9, 10**8, 1e10, network="multicast", pacing="window")
    assert (params.network, params.pacing) == (NetworkMode.MULTICAST, Pacing.WINDOW)
    with pytest.raises(PlanError, match="unknown network 'gloo'; known: plain, multicast, inna"):
        CostParams(10**9, 10**8, 1e10, network="gloo")  # measured beside the plan, not planned


def comparisons_with_a_term_s_value(path: Path, values: set[str], root: Path = REPO) -> list[str]:
    """`x == "inna"`, `x in ("ring", "direct")` and the like: a choice spelled as a string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        for op, right in zip(node.ops, node.comparators, strict=True):
            sides = [node.left, right] if isinstance(op, ast.Eq | ast.NotEq) else [right]
            for side in sides:
                items = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
                found += [
                    f"{path.relative_to(root)}:{node.lineno}: {item.value!r}"
                    for item in items
                    if isinstance(item, ast.Constant) and item.value in values
                ]
    return found


def test_no_choice_is_compared_as_a_string() -> None:
    values = {
        m.value
        for term in (NetworkMode, Collective, P4Target, Backend, Shaping, Pacing)
        for m in term
    }
    found = [
        hit
        for package in TESTBED
        for path in sorted((REPO / package).rglob("*.py"))
        for hit in comparisons_with_a_term_s_value(path, values)
    ]
    assert found == []


def test_the_check_sees_a_string_comparison(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('a = x == "inna"\nb = y in ("ring", "other")\nc = "python" in name\n')
    hits = comparisons_with_a_term_s_value(module, {"inna", "ring", "python"}, tmp_path)
    assert hits == ["m.py:1: 'inna'", "m.py:2: 'ring'"]  # not the substring test
