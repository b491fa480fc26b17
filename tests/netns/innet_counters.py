"""Read an edge's innet statistics counter over P4Runtime (p4runtime-shell), as JSON by name.

python -m tests.netns.innet_counters ADDR
"""

from __future__ import annotations

import json
import sys

import p4runtime_sh.shell as sh

from controller.rounds import STATS, STATS_COUNTER


def main() -> int:
    sh.setup(device_id=1, grpc_addr=sys.argv[1], election_id=(0, 2))
    try:
        packets = {
            e.msg().index.index: e.msg().data.packet_count
            for e in sh.CounterEntry(STATS_COUNTER).read()
        }
    finally:
        sh.teardown()
    print(json.dumps({name: packets.get(i, 0) for i, name in enumerate(STATS)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
