"""innet workers: what runs on the emulated hosts.

aggregate.py    the aggregation client: one allreduce through the edge (Aggregator)
stream.py       its pure core: a chunk stream's window, pacing, resends and recovery
collectives.py  which exchange sums a group, by the collective the runner names
exchange.py     host-side sums: direct exchange (plain IPv4) and multicast summed on the host
ring.py         the pipelined ring all-reduce over plain IPv4
timing.py       their pure core: the frame schedule and the receivers' NACK timers
unicast.py      UDP between the leaders (the plain network)
gloo.py         the gloo baseline: torch.distributed all_reduce over TCP; TCP at scale
distributed.py  innet as a torch.distributed backend ("innet"); torchhook.py registers it
group.py        a round's group, send policy and counters
packets.py      the innet header; quantise.py the fixed-point codec; transport.py UDP
train.py        the model, its data, local phases and DiLoCo's outer step
island.py       an island's process in an experiment (the leader, or another worker)
protocol.py     the messages between the experiment runner and a leader
config.py       what every island process of an experiment is configured with
"""
