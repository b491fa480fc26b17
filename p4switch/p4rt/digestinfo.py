"""The digests a P4Info declares, bound to the program's: a digest's values travel as P4Data
of its P4Info type, a struct of bitstrings (canonical binary strings: unsigned, or for int<N>
the shortest two's complement), bools and structs, in the order the program lists them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.runtime import DigestList, SwitchState


@dataclass(frozen=True)
class DigestInfo:
    id: int
    name: str
    type_spec: p4info_pb2.P4DataTypeSpec
    structs: dict[str, p4info_pb2.P4StructTypeSpec]  # P4Info's type_info.structs

    def message(self, digest_list: DigestList, timestamp_ns: int) -> p4runtime_pb2.DigestList:
        msg = p4runtime_pb2.DigestList(
            digest_id=self.id, list_id=digest_list.list_id, timestamp=timestamp_ns
        )
        for values in digest_list.values:
            _encode(msg.data.add(), self.type_spec, iter(values), self.structs)
        return msg


def _encode(
    out: p4runtime_pb2.P4Data,
    spec: p4info_pb2.P4DataTypeSpec,
    values: Iterator[int],
    structs: dict[str, p4info_pb2.P4StructTypeSpec],
) -> None:
    kind = spec.WhichOneof("type_spec")
    if kind == "struct":
        members = out.struct.members
        out.struct.SetInParent()
        for m in structs[spec.struct.name].members:
            _encode(members.add(), m.type_spec, values, structs)
    elif kind == "bool":
        out.bool = bool(next(values))
    else:
        value = next(values)
        if spec.bitstring.WhichOneof("type_spec") == "int":
            width = spec.bitstring.int.bitwidth
            if value >> (width - 1):  # negative: the slot holds its two's complement
                value -= 1 << width
            bits = (value if value >= 0 else ~value).bit_length() + 1  # with the sign bit
            size = max(1, (bits + 7) // 8)
            out.bitstring = value.to_bytes(size, "big", signed=True)
        else:
            out.bitstring = value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _widths(
    spec: p4info_pb2.P4DataTypeSpec, structs: dict[str, p4info_pb2.P4StructTypeSpec]
) -> list[int] | None:
    """The width of each value a digest of this type carries (None: a type p4switch lacks)."""
    kind = spec.WhichOneof("type_spec")
    if kind == "bool":
        return [1]
    if kind == "bitstring":
        bits = spec.bitstring
        which = bits.WhichOneof("type_spec")
        return [bits.bit.bitwidth if which == "bit" else bits.int.bitwidth]
    if kind == "struct" and spec.struct.name in structs:
        out: list[int] = []
        for m in structs[spec.struct.name].members:
            inner = _widths(m.type_spec, structs)
            if inner is None:
                return None
            out += inner
        return out
    return None


def bind_digests(
    p4info: p4info_pb2.P4Info, state: SwitchState, problems: list[str]
) -> dict[int, DigestInfo]:
    """P4Info's digests by id, each checked against the program's digest of that name."""
    structs = dict(p4info.type_info.structs)
    out = {}
    for d in p4info.digests:
        name = d.preamble.name
        spec = state.digests.specs.get(name)
        widths = _widths(d.type_spec, structs)
        if spec is None:
            problems.append(f"digest {name} is not in the program")
        elif widths != [w for _, w in spec.fields]:
            problems.append(f"digest {name}: its type_spec does not match the program's {name}")
        else:
            out[d.preamble.id] = DigestInfo(d.preamble.id, name, d.type_spec, structs)
    return out
