"""Traffic for the netns tests, run inside a host namespace: `python -m tests.netns.traffic ...`.

    send --dest IP --port P --count N --size BYTES [--pps R]  UDP with checkable payloads
    recv --port P --size BYTES [--count N] [--idle S]         "ready", then a JSON summary
    garbage --iface IF --count N [--seed S]                   random raw frames, poison frames

Payload `seq` is 4 bytes of sequence number followed by bytes drawn from random.Random(seq), so
the receiver checks every byte without being told what was sent.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import struct
import sys
import time
from collections.abc import Sequence

from tests.netns.forwarder import POISON_ETHERTYPE


def payload(seq: int, size: int) -> bytes:
    return struct.pack("!I", seq) + random.Random(seq).randbytes(size - 4)


def send(dest: str, port: int, count: int, size: int, pps: float | None) -> dict[str, float]:
    payloads = [payload(seq, size) for seq in range(count)]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        start = time.monotonic()
        for seq, data in enumerate(payloads):
            if pps:
                ahead = start + seq / pps - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)  # pacing, not waiting for readiness
            sock.sendto(data, (dest, port))
        elapsed = time.monotonic() - start
    return {"sent": count, "seconds": elapsed}


def recv(port: int, size: int, count: int | None, idle: float, first_timeout: float) -> dict:
    arrivals: list[float] = []
    seqs: set[int] = set()
    intact = corrupt = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 2**20)
        sock.bind(("0.0.0.0", port))
        print("ready", flush=True)
        sock.settimeout(first_timeout)
        while count is None or len(arrivals) < count:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            arrivals.append(time.monotonic())
            sock.settimeout(idle)
            seq = struct.unpack_from("!I", data)[0] if len(data) >= 4 else -1
            if len(data) == size and data == payload(seq, size):
                intact += 1
                seqs.add(seq)
            else:
                corrupt += 1
    return {
        "received": len(arrivals),
        "intact": intact,
        "corrupt": corrupt,
        "distinct": len(seqs),
        "first": arrivals[0] if arrivals else None,
        "last": arrivals[-1] if arrivals else None,
    }


def garbage(iface: str, count: int, seed: int) -> dict[str, int]:
    """Random frames of random lengths, every tenth one a poison frame; all sent raw."""
    rng = random.Random(seed)
    poison = 0
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
        sock.bind((iface, 0))
        for i in range(count):
            frame = rng.randbytes(rng.randint(14, 1514))
            if i % 10 == 0:
                frame = frame[:12] + struct.pack("!H", POISON_ETHERTYPE) + b"boom" + frame[18:]
                poison += 1
            sock.send(frame)
    return {"sent": count, "poison": poison}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.netns.traffic")
    commands = parser.add_subparsers(dest="cmd", required=True)
    p = commands.add_parser("send")
    p.add_argument("--dest", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--pps", type=float)
    p = commands.add_parser("recv")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--count", type=int)
    p.add_argument("--idle", type=float, default=1.0)
    p.add_argument("--first-timeout", type=float, default=10.0)
    p = commands.add_parser("garbage")
    p.add_argument("--iface", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.cmd == "send":
        result: dict = send(args.dest, args.port, args.count, args.size, args.pps)
    elif args.cmd == "recv":
        result = recv(args.port, args.size, args.count, args.idle, args.first_timeout)
    else:
        result = garbage(args.iface, args.count, args.seed)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
