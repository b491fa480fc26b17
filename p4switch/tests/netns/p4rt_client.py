"""A P4Runtime client session for the netns tests, with p4runtime-shell as users run it.

    python -m tests.netns.p4rt_client ADDR [--config P4INFO SOURCE] [--dmac MAC=PORT]... [--read]

Runs in the switch's namespace (the switch's gRPC server listens on its loopback). Without
--config it takes the pipeline the switch already runs; with it, it sets a new one. It installs
`L2Ingress.dmac` entries and prints one JSON line: how many it installed and what it read back.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import p4runtime_sh.shell as sh


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.netns.p4rt_client")
    parser.add_argument("addr")
    parser.add_argument("--config", nargs=2, metavar=("P4INFO", "SOURCE"))
    parser.add_argument("--dmac", action="append", default=[], metavar="MAC=PORT")
    args = parser.parse_args(argv)
    config = sh.FwdPipeConfig(*args.config) if args.config else None
    sh.setup(device_id=1, grpc_addr=args.addr, election_id=(0, 1), config=config)
    try:
        for item in args.dmac:
            mac, port = item.split("=")
            entry = sh.TableEntry("L2Ingress.dmac")(action="L2Ingress.forward")
            entry.match["hdr.ethernet.dstAddr"] = mac
            entry.action["port"] = port
            entry.insert()
        read = [
            {
                "mac": e.match["hdr.ethernet.dstAddr"].exact.value.hex(),
                "port": int.from_bytes(e.action["port"].value, "big"),
            }
            for e in sh.TableEntry("L2Ingress.dmac").read()
        ]
        print(json.dumps({"installed": len(args.dmac), "read": read}))
    finally:
        sh.teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
