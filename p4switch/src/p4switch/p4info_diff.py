"""Compare two P4Info files: p4c's for a program against the one p4switch generates for it.

    python -m p4switch.p4info_diff build/p4/innet.p4info.txtpb build/p4/innet.p4switch.p4info.txtpb

`make p4` runs this after compiling p4src/ with p4c-bm2-ss. What must agree, by kind and name:
everything P4Info says of every table, action, action profile, counter, direct counter, meter,
direct meter, controller header, value set, register and digest (alias, annotations, match
fields, action references, initial and const default actions, size, entries, parameters,
units, type specs; an id naming another object is compared as that object's name), every type
of `type_info`, and `pkg_info`. A difference is printed one line each and the exit status is 1.
Ids that differ for the same name are reported as well (controllers that go by name do not
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


KINDS = (
    ("table", "tables"),
    ("action", "actions"),
    ("action_profile", "action_profiles"),
    ("counter", "counters"),
    ("direct_counter", "direct_counters"),
    ("meter", "meters"),
    ("direct_meter", "direct_meters"),
    ("controller_packet_metadata", "controller_packet_metadata"),
    ("value_set", "value_sets"),
    ("register", "registers"),
    ("digest", "digests"),
)
# fields holding the id of another object: compared by the name they refer to
_REFERENCES = frozenset(
    {
        "const_default_action_id",
        "implementation_id",
        "direct_resource_ids",
        "direct_table_id",
        "table_ids",
        "action_id",
    }
)
_PREAMBLE_IDENTITY = ("id", "name")
Description = dict[str, Any]


def summary(info: p4info_pb2.P4Info) -> dict[str, dict[str, Description]]:
    """What must agree, per kind and name: everything P4Info says of each object (its preamble
    but for id and name, which are the key and `ids`), with ids of other objects as names."""
    names = {
        item.preamble.id: item.preamble.name for _, field in KINDS for item in getattr(info, field)
    }
    out: dict[str, dict[str, Description]] = {
        kind: {item.preamble.name: _describe(item, names) for item in getattr(info, field)}
        for kind, field in KINDS
    }
    out["extern"] = {e.extern_type_name: _describe(e, names) for e in info.externs}
    out["type_info"] = {}  # each type by its kind and name
    for field, value in info.type_info.ListFields():
        if field.message_type.GetOptions().map_entry:
            for key in value:
                out["type_info"][f"{field.name} {key}"] = _describe(value[key], names)
        else:
            out["type_info"][field.name] = _describe(value, names)
    out["pkg_info"] = {"": _describe(info.pkg_info, names)} if info.HasField("pkg_info") else {}
    return out


def _describe(msg: Any, names: dict[int, str]) -> Description:
    """A message's fields that are set, by name: enums by their names, references by the names
    of the objects they refer to, maps and sub-messages described alike, the preamble's
    fields (but for id and name) as the message's own."""
    out: Description = {}
    for field, value in msg.ListFields():
        if field.name == "preamble":
            preamble = _describe(value, names)
            out.update((k, v) for k, v in preamble.items() if k not in _PREAMBLE_IDENTITY)
        elif field.message_type is not None and field.message_type.GetOptions().map_entry:
            out[field.name] = {key: _describe(value[key], names) for key in sorted(value)}
        elif field.label == field.LABEL_REPEATED:
            out[field.name] = tuple(_value(msg, field, v, names) for v in value)
        else:
            out[field.name] = _value(msg, field, value, names)
    return out


def _value(msg: Any, field: Any, value: Any, names: dict[int, str]) -> Any:
    refers = field.name in _REFERENCES or (
        field.name == "id" and msg.DESCRIPTOR.name == "ActionRef"
    )
    if refers:
        return names.get(value, f"<id {value:#x}>")
    if field.enum_type is not None:
        return field.enum_type.values_by_number[value].name
    if field.message_type is not None:
        return _describe(value, names)
    return value


def ids(info: p4info_pb2.P4Info) -> dict[tuple[str, str], int]:
    return {
        (kind, item.preamble.name): item.preamble.id
        for kind, field in KINDS
        for item in getattr(info, field)
    }


def diff(
    reference: p4info_pb2.P4Info, candidate: p4info_pb2.P4Info, labels: tuple[str, str]
) -> list[str]:
    """One line per difference (empty: they agree); `labels` name the two sides, p4c's first."""
    ref, cand = summary(reference), summary(candidate)
    a, b = labels
    lines = []
    for kind in ref:
        for name in sorted(ref[kind].keys() - cand[kind].keys()):
            lines.append(f"{kind} {name}: in {a}, missing from {b}")
        for name in sorted(cand[kind].keys() - ref[kind].keys()):
            lines.append(f"{kind} {name}: in {b}, missing from {a}")
        for name in sorted(ref[kind].keys() & cand[kind].keys()):
            where = f"{kind} {name}".rstrip()
            lines += _differences(where, ref[kind][name], cand[kind][name], labels)
    ref_ids, cand_ids = ids(reference), ids(candidate)
    for key in sorted(ref_ids.keys() & cand_ids.keys()):
        if ref_ids[key] != cand_ids[key]:
            kind, name = key
            lines.append(f"{kind} {name}: id {ref_ids[key]:#x} in {a}, {cand_ids[key]:#x} in {b}")
    return lines


def _differences(
    where: str, ref: Description, cand: Description, labels: tuple[str, str], path: str = ""
) -> list[str]:
    """Field by field, into sub-messages (`type_spec.bitstring.bit.bitwidth`); a list of named
    items (match fields, parameters, action references, metadata) item by item, by name."""
    a, b = labels
    lines = []
    for field in sorted(ref.keys() | cand.keys(), key=_field_order(ref, cand)):
        mine, other = ref.get(field), cand.get(field)
        label = path + field
        if mine == other:
            continue
        if isinstance(mine, dict) and isinstance(other, dict):
            lines += _differences(where, mine, other, labels, f"{label}.")
            continue
        keyed_mine, keyed_other = _by_name(mine), _by_name(other)
        if keyed_mine is None or keyed_other is None:
            lines.append(f"{where}: {label} {_show(mine)} in {a}, {_show(other)} in {b}")
            continue
        for key in sorted(keyed_mine.keys() - keyed_other.keys(), key=str):
            lines.append(f"{where}: {label} {key}: in {a}, missing from {b}")
        for key in sorted(keyed_other.keys() - keyed_mine.keys(), key=str):
            lines.append(f"{where}: {label} {key}: in {b}, missing from {a}")
        for key in sorted(keyed_mine.keys() & keyed_other.keys(), key=str):
            inner = f"{where}: {label} {key}"
            lines += _differences(inner, keyed_mine[key], keyed_other[key], labels)
    return lines


def _field_order(ref: Description, cand: Description) -> Any:
    order = {k: i for i, k in enumerate([*ref, *cand])}
    return lambda field: order[field]


def _by_name(value: Any) -> dict[Any, Description] | None:
    """A repeated message field by its items' names (or ids, or for an action reference the
    action's name); None for anything else, or names that repeat."""
    if value is None:
        value = ()
    if not isinstance(value, tuple) or not all(isinstance(v, dict) for v in value):
        return None
    keyed = {v.get("name", v.get("id")): v for v in value}
    return keyed if len(keyed) == len(value) else None


def _show(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value) if isinstance(value, (str, bytes)) else str(value)


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
    labels = (args.reference.name, args.candidate.name)
    lines = diff(a, b, labels)
    if lines:
        print("\n".join(lines))
        print(f"{len(lines)} difference(s)", file=sys.stderr)
        return 1
    counts = [(len(getattr(a, field)), field) for _, field in KINDS]
    agreed = ", ".join(f"{n} {field}" for n, field in counts if n)
    print(f"P4Info agree: {agreed}" if agreed else "P4Info agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
