"""The digests a P4Info declares, bound to the program's: a digest's values travel as P4Data
of its P4Info type, a struct of bitstrings (canonical binary strings: unsigned, or for int<N>
the shortest two's complement), bools, errors and enums by name, serializable enums' values and
structs, in the order the program lists them. A new type's values travel as its original
type's; a digest with a value of a translated type (`@p4runtime_translation`) cannot be
configured, since p4switch does not translate the program's values to the controller's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2, p4types_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4switch.runtime import DigestList, SwitchState


@dataclass(frozen=True)
class DigestInfo:
    id: int
    name: str
    type_spec: p4types_pb2.P4DataTypeSpec
    types: p4types_pb2.P4TypeInfo  # P4Info's type_info
    translated: str = ""  # `T (uri)`: a value of a translated new type, which p4switch refuses

    def message(self, digest_list: DigestList, timestamp_ns: int) -> p4runtime_pb2.DigestList:
        msg = p4runtime_pb2.DigestList(
            digest_id=self.id, list_id=digest_list.list_id, timestamp=timestamp_ns
        )
        for values in digest_list.values:
            _encode(msg.data.add(), self.type_spec, iter(values), self.types)
        return msg


def _encode(
    out: p4data_pb2.P4Data,
    spec: p4types_pb2.P4DataTypeSpec,
    values: Iterator[int],
    types: p4types_pb2.P4TypeInfo,
) -> None:
    kind = spec.WhichOneof("type_spec")
    if kind == "struct":
        out.struct.SetInParent()
        for m in types.structs[spec.struct.name].members:
            _encode(out.struct.members.add(), m.type_spec, values, types)
        return
    if kind == "tuple":
        out.tuple.SetInParent()
        for member in spec.tuple.members:
            _encode(out.tuple.members.add(), member, values, types)
        return
    if kind == "new_type":  # untranslated (a translated one is not configured)
        _encode(out, types.new_types[spec.new_type.name].original_type, values, types)
        return
    value = next(values)
    if kind == "bool":
        out.bool = bool(value)
    elif kind == "error":  # an error's code is its position among the program's errors
        out.error = types.error.members[value]
    elif kind == "enum":  # a plain enum's value is its member's position
        out.enum = types.enums[spec.enum.name].members[value].name
    elif kind == "serializable_enum":
        out.enum_value = _unsigned(value)
    elif spec.bitstring.WhichOneof("type_spec") == "int":
        width = spec.bitstring.int.bitwidth
        if value >> (width - 1):  # negative: the slot holds its two's complement
            value -= 1 << width
        bits = (value if value >= 0 else ~value).bit_length() + 1  # with the sign bit
        out.bitstring = value.to_bytes(max(1, (bits + 7) // 8), "big", signed=True)
    else:
        out.bitstring = _unsigned(value)


def _unsigned(value: int) -> bytes:
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _widths(spec: p4types_pb2.P4DataTypeSpec, types: p4types_pb2.P4TypeInfo) -> list[int] | None:
    """The width of each value a digest of this type carries, 0 for an error or a plain enum
    (sent by name), TRANSLATED for a translated new type's; None: a type p4switch does not
    send."""
    kind = spec.WhichOneof("type_spec")
    if kind == "new_type" and spec.new_type.name in types.new_types:
        new_type = types.new_types[spec.new_type.name]
        if new_type.HasField("original_type"):
            return _widths(new_type.original_type, types)
        return [TRANSLATED]
    if kind == "bool":
        return [1]
    if kind in ("error", "enum"):
        return [0]
    if kind == "serializable_enum" and spec.serializable_enum.name in types.serializable_enums:
        return [types.serializable_enums[spec.serializable_enum.name].underlying_type.bitwidth]
    if kind == "bitstring":
        bits = spec.bitstring
        which = bits.WhichOneof("type_spec")
        return [bits.bit.bitwidth if which == "bit" else bits.int.bitwidth]
    if kind in ("struct", "tuple") and (kind == "tuple" or spec.struct.name in types.structs):
        parts = (
            list(spec.tuple.members)
            if kind == "tuple"
            else [m.type_spec for m in types.structs[spec.struct.name].members]
        )
        out: list[int] = []
        for part in parts:
            inner = _widths(part, types)
            if inner is None:
                return None
            out += inner
        return out
    return None


TRANSLATED = -1  # the width of a translated new type's value: the program's, whatever it is


def _translated(spec: p4types_pb2.P4DataTypeSpec, types: p4types_pb2.P4TypeInfo) -> str:
    """`T (uri)` for the first value of a translated new type a digest carries, if any."""
    kind = spec.WhichOneof("type_spec")
    if kind == "new_type" and spec.new_type.name in types.new_types:
        new_type = types.new_types[spec.new_type.name]
        if new_type.HasField("translated_type"):
            return f"{spec.new_type.name} ({new_type.translated_type.uri})"
    members: list[p4types_pb2.P4DataTypeSpec] = []
    if kind == "tuple":
        members = list(spec.tuple.members)
    elif kind == "struct" and spec.struct.name in types.structs:
        members = [m.type_spec for m in types.structs[spec.struct.name].members]
    return next((found for m in members if (found := _translated(m, types))), "")


def bind_digests(
    p4info: p4info_pb2.P4Info, state: SwitchState, problems: list[str]
) -> dict[int, DigestInfo]:
    """P4Info's digests by id, each checked against the program's digest of that name."""
    out = {}
    for d in p4info.digests:
        name = d.preamble.name
        spec = state.digests.specs.get(name)
        if spec is None:
            problems.append(f"digest {name} is not in the program")
        elif not _same_widths(_widths(d.type_spec, p4info.type_info), [w for _, w in spec.fields]):
            problems.append(f"digest {name}: its type_spec does not match the program's {name}")
        else:
            translated = _translated(d.type_spec, p4info.type_info)
            out[d.preamble.id] = DigestInfo(
                d.preamble.id, name, d.type_spec, p4info.type_info, translated
            )
    return out


def _same_widths(given: list[int] | None, program: list[int]) -> bool:
    return (
        given is not None
        and len(given) == len(program)
        and all(g in (w, TRANSLATED) for g, w in zip(given, program, strict=True))
    )
