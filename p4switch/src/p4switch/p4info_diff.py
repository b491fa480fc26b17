"""Compare two P4Info files: p4c's for a program against the one p4switch generates for it.

    python -m p4switch.p4info_diff build/p4/innet.p4info.txtpb build/p4/innet.p4switch.p4info.txtpb

`make p4` runs this after compiling p4src/ with p4c-bm2-ss. What must agree, by name: every
table (its match fields' names, widths and kinds, the names of its actions, its idle timeout
behavior), every action (its parameters' names and widths), every register (cell width and size)
and every counter (unit and size). A difference is printed one line each and the exit status is
1. Ids that differ for the same name are reported as well (controllers that go by name do not
care; ones that cache p4c's ids would). Both files are protobuf text format, whatever their
suffix (`.txtpb`, as p4c names it now, or `.txt`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.exceptions import P4InfoError


def load(path: Path) -> p4info_pb2.P4Info:
    """A P4Info in protobuf text format (`.txtpb` or `.txt`); P4InfoError if it is not one."""
    info = p4info_pb2.P4Info()
    try:
        text_format.Parse(Path(path).read_text(), info)
    except (OSError, text_format.ParseError) as err:
        raise P4InfoError(f"{path}: not a P4Info text file: {err}") from None
    return info


def summary(info: p4info_pb2.P4Info) -> dict[str, dict[str, Any]]:
    """What must agree, per kind and name."""
    actions = {a.preamble.id: a.preamble.name for a in info.actions}
    return {
        "table": {
            t.preamble.name: {
                "match": [
                    (m.name, m.bitwidth, p4info_pb2.MatchField.MatchType.Name(m.match_type))
                    for m in t.match_fields
                ],
                "actions": sorted(actions.get(r.id, f"<id {r.id}>") for r in t.action_refs),
                "entries": "const"
                if t.is_const_table
                else "initial"
                if t.has_initial_entries
                else "none",
                "idle_timeout": p4info_pb2.Table.IdleTimeoutBehavior.Name(t.idle_timeout_behavior),
            }
            for t in info.tables
        },
        "action": {
            a.preamble.name: {"params": [(p.name, p.bitwidth) for p in a.params]}
            for a in info.actions
        },
        "register": {
            r.preamble.name: {"width": r.type_spec.bitstring.bit.bitwidth, "size": r.size}
            for r in info.registers
        },
        "counter": {
            c.preamble.name: {
                "unit": p4info_pb2.CounterSpec.Unit.Name(c.spec.unit),
                "size": c.size,
            }
            for c in info.counters
        },
    }


def ids(info: p4info_pb2.P4Info) -> dict[tuple[str, str], int]:
    out = {}
    for kind, items in (
        ("table", info.tables),
        ("action", info.actions),
        ("register", info.registers),
        ("counter", info.counters),
    ):
        for item in items:
            out[(kind, item.preamble.name)] = item.preamble.id
    return out


def diff(
    reference: p4info_pb2.P4Info, candidate: p4info_pb2.P4Info, labels: tuple[str, str]
) -> list[str]:
    """One line per difference (empty: they agree); `labels` name the two sides."""
    ref, cand = summary(reference), summary(candidate)
    a, b = labels
    lines = []
    for kind in ref:
        for name in sorted(ref[kind].keys() - cand[kind].keys()):
            lines.append(f"{kind} {name}: in {a}, missing from {b}")
        for name in sorted(cand[kind].keys() - ref[kind].keys()):
            lines.append(f"{kind} {name}: in {b}, missing from {a}")
        for name in sorted(ref[kind].keys() & cand[kind].keys()):
            for field, value in ref[kind][name].items():
                other = cand[kind][name][field]
                if value != other:
                    lines.append(f"{kind} {name}: {field} {value} in {a}, {other} in {b}")
    ref_ids, cand_ids = ids(reference), ids(candidate)
    for key in sorted(ref_ids.keys() & cand_ids.keys()):
        if ref_ids[key] != cand_ids[key]:
            kind, name = key
            lines.append(f"{kind} {name}: id {ref_ids[key]:#x} in {a}, {cand_ids[key]:#x} in {b}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m p4switch.p4info_diff",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("reference", type=Path, help="P4Info text file (p4c's)")
    parser.add_argument("candidate", type=Path, help="P4Info text file (p4switch's)")
    args = parser.parse_args(argv)
    try:
        a, b = load(args.reference), load(args.candidate)
    except P4InfoError as err:
        print(f"p4info_diff: error: {err}", file=sys.stderr)
        return 2
    lines = diff(a, b, (args.reference.name, args.candidate.name))
    for line in lines:
        print(line)
    if lines:
        print(f"{len(lines)} difference(s)", file=sys.stderr)
        return 1
    counts = {kind: len(items) for kind, items in summary(a).items()}
    print("P4Info agree: " + ", ".join(f"{n} {kind}s" for kind, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
