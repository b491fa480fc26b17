"""Frames as they were on the wire: the outer VLAN tag that Linux took off, put back.

Linux removes the outer 802.1Q or 802.1ad tag of every frame it receives and keeps it beside the
frame (in the socket buffer's metadata), so a packet socket reads the frame without it. A NIC
with VLAN offload does this in hardware; every other device, veth included, has it done in
software by the receive path, whatever `ethtool -K <if> rxvlan off` says. Asked for
PACKET_AUXDATA, the kernel passes each frame's `struct tpacket_auxdata` as ancillary data of
`recvmsg`: its status says whether the frame had a tag (TP_STATUS_VLAN_VALID, also for a priority
tag whose TCI is 0) and whether the TPID is given (TP_STATUS_VLAN_TPID_VALID; 0x8100 if not).
`restore_outer_tag` puts those four bytes back after the MAC addresses; an inner tag (QinQ) never
left the frame.
"""

from __future__ import annotations

import socket
import struct
import sys

from p4switch.ports import PACKET_AUXDATA, SOL_PACKET

TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
ETH_P_8021Q = 0x8100
MAC_BYTES = 12  # destination and source address: the tag goes right after them

# struct tpacket_auxdata: tp_status, tp_len, tp_snaplen, tp_mac, tp_net, tp_vlan_tci,
# tp_vlan_tpid, in host byte order.
_AUXDATA = struct.Struct("=IIIHHHH")
AUXDATA_SPACE = socket.CMSG_SPACE(_AUXDATA.size)  # the ancillary buffer recvmsg needs for it
_TAG = struct.Struct("!HH")  # TPID, TCI as on the wire
_STATUS_LOW_BYTE = 0 if sys.byteorder == "little" else 3  # where tp_status's flag bits are

AncData = list[tuple[int, int, bytes]]  # recvmsg's ancillary data: (level, type, data)


def restore_outer_tag(data: bytes, status: int, tci: int, tpid: int) -> bytes:
    """`data` with the tag described by an auxdata's status, TCI and TPID put back in place.

    Unchanged if `status` says the frame had no tag.
    """
    if not status & TP_STATUS_VLAN_VALID:
        return data
    if not status & TP_STATUS_VLAN_TPID_VALID:
        tpid = ETH_P_8021Q  # older kernels give only the TCI, of an 802.1Q tag
    return data[:MAC_BYTES] + _TAG.pack(tpid, tci) + data[MAC_BYTES:]


def as_on_wire(data: bytes, ancdata: AncData) -> bytes:
    """The frame `recvmsg` returned as `data` and `ancdata`, with its outer VLAN tag restored.

    Called on every frame received: an untagged frame costs one byte test. `ancdata` comes from
    a buffer of AUXDATA_SPACE bytes, so an auxdata message is always whole.
    """
    for level, kind, aux in ancdata:
        if kind == PACKET_AUXDATA and level == SOL_PACKET:
            if not aux[_STATUS_LOW_BYTE] & TP_STATUS_VLAN_VALID:
                return data
            status, _, _, _, _, tci, tpid = _AUXDATA.unpack_from(aux)
            return restore_outer_tag(data, status, tci, tpid)
    return data
