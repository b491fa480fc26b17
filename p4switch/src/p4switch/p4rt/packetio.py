"""Packet I/O between the controller and the CPU port: controller headers in and out.

A PacketOut's metadata becomes the program's `@controller_header("packet_out")` header (fields
in P4Info order, most significant bit first), put in front of the payload: that frame enters the
pipeline on the CPU port. A frame the pipeline sends to the CPU port starts with the
`@controller_header("packet_in")` header, which becomes the PacketIn's metadata.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from p4switch.exceptions import PacketInError
from p4switch.p4rt.codec import decode_uint, encode_uint, invalid, untranslated
from p4switch.p4rt.schema import ControllerHeaderInfo


def packet_out_frame(header: ControllerHeaderInfo | None, packet: p4runtime_pb2.PacketOut) -> bytes:
    """The frame to inject on the CPU port; raise P4RTError (INVALID_ARGUMENT) on bad metadata."""
    payload: bytes = packet.payload
    if header is None:
        if packet.metadata:
            raise invalid("the program has no packet_out header: PacketOut takes no metadata")
        return payload
    untranslatable = header.translated
    if untranslatable is not None:
        what = f"packet_out metadata {untranslatable.name}"
        raise untranslated(what, untranslatable.translated)
    fields = {f.id: f for f in header.fields}
    values: dict[int, int] = {}
    for md in packet.metadata:
        info = fields.get(md.metadata_id)
        if info is None:
            raise invalid(f"packet_out has no metadata with id {md.metadata_id}")
        if md.metadata_id in values:
            raise invalid(f"packet_out metadata {info.name} given twice")
        values[md.metadata_id] = decode_uint(md.value, info.bitwidth, f"packet_out {info.name}")
    word = 0
    for info in header.fields:
        value = values.get(info.id)
        if value is None:
            if not info.padding:
                raise invalid(f"packet_out metadata {info.name} is missing")
            value = 0
        word = (word << info.bitwidth) | value
    return word.to_bytes(header.byte_len, "big") + payload


def packet_in_message(header: ControllerHeaderInfo | None, frame: bytes) -> p4runtime_pb2.PacketIn:
    """The PacketIn for a frame the pipeline sent to the CPU port."""
    if header is None:
        return p4runtime_pb2.PacketIn(payload=frame)
    untranslatable = header.translated
    if untranslatable is not None:
        raise PacketInError(
            f"packet_in metadata {untranslatable.name} is of type {untranslatable.translated},"
            " with @p4runtime_translation: p4switch does not translate the program's values"
        )
    size = header.byte_len
    if len(frame) < size:
        raise PacketInError(
            f"a {len(frame)}-byte frame cannot hold the {size}-byte packet_in header"
        )
    word = int.from_bytes(frame[:size], "big")
    shift = size * 8
    msg = p4runtime_pb2.PacketIn(payload=frame[size:])
    for info in header.fields:
        shift -= info.bitwidth
        value = (word >> shift) & ((1 << info.bitwidth) - 1)
        msg.metadata.add(metadata_id=info.id, value=encode_uint(value))
    return msg
