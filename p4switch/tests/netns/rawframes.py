"""Raw Ethernet frames sent out of an interface in one namespace and read at one in another.

Each frame read comes back as the data the kernel leaves (it takes the outer VLAN tag off) and
the PACKET_AUXDATA fields that tell what it took: `{"data": hex, "status", "tci", "tpid"}`.

This module is also the script run inside the namespaces:

    python -m tests.netns.rawframes send IFACE HEXFRAME...
    python -m tests.netns.rawframes recv IFACE SRCMAC COUNT   "ready", then JSON frames
"""

from __future__ import annotations

import json
import select
import socket
import struct
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.netns.harness import PROJECT, ns_python, ns_run

MODULE = "tests.netns.rawframes"
ETH_P_ALL = 0x0003
SOL_PACKET, PACKET_AUXDATA, PACKET_OUTGOING = 263, 8, 4
AUXDATA = struct.Struct("=IIIHHHH")  # struct tpacket_auxdata
IDLE_S = 2.0  # the receiver gives up this long after the last frame (or after "ready")


@dataclass(frozen=True)
class Interface:
    """An interface, by name, inside a namespace."""

    namespace: str
    name: str


# -- the script inside the namespaces ---------------------------------------------------------


def send_frames(iface: str, frames: Sequence[bytes]) -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
        sock.bind((iface, 0))
        for frame in frames:
            sock.send(frame)


def receive_frames(iface: str, src_mac: bytes, count: int) -> list[dict[str, Any]]:
    """Up to `count` frames from `src_mac` arriving on `iface`: the data the kernel leaves and
    its auxdata."""
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL)) as sock:
        sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        sock.bind((iface, ETH_P_ALL))
        print("ready", flush=True)
        frames: list[dict[str, Any]] = []
        while len(frames) < count and select.select([sock], [], [], IDLE_S)[0]:
            data, ancdata, _, address = sock.recvmsg(65536, socket.CMSG_SPACE(AUXDATA.size))
            if address[2] == PACKET_OUTGOING or data[6:12] != src_mac:
                continue
            aux = next(a for level, kind, a in ancdata if (level, kind) == (SOL_PACKET, 8))
            status, _, _, _, _, tci, tpid = AUXDATA.unpack_from(aux)
            frames.append({"data": data.hex(), "status": status, "tci": tci, "tpid": tpid})
        return frames


def main(argv: Sequence[str]) -> int:
    if argv[:1] == ["send"]:
        send_frames(argv[1], [bytes.fromhex(text) for text in argv[2:]])
        return 0
    if argv[:1] == ["recv"]:
        frames = receive_frames(argv[1], bytes.fromhex(argv[2].replace(":", "")), int(argv[3]))
        print(json.dumps(frames), flush=True)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


# -- driving it from the tests ----------------------------------------------------------------


def send(src: Interface, frames: Sequence[bytes]) -> None:
    done = ns_run(src.namespace, MODULE, "send", src.name, *(f.hex() for f in frames))
    assert done.returncode == 0, done.stderr


def send_and_receive(
    src: Interface, dst: Interface, src_mac: str, frames: Sequence[bytes]
) -> list[dict[str, Any]]:
    """Send `frames` out of `src`; what `dst` received from `src_mac` meanwhile."""
    args = ("recv", dst.name, src_mac, str(len(frames)))
    receiver = subprocess.Popen(
        ns_python(dst.namespace, MODULE, *args),
        cwd=PROJECT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert receiver.stdout is not None
        ready, _, _ = select.select([receiver.stdout], [], [], 10.0)
        assert ready and receiver.stdout.readline().strip() == b"ready", "receiver not ready"
        send(src, frames)
        out, err = receiver.communicate(timeout=30)
        assert receiver.returncode == 0, err.decode(errors="replace")
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.communicate()
    return json.loads(out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
