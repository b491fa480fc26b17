"""innet workers: what runs on the emulated hosts.

aggregate.py    the aggregation client: one allreduce through the edge (Aggregator)
stream.py       its pure core: a chunk stream's window, pacing, resends and recovery
group.py        a round's group, send policy and counters
packets.py      the innet header; quantise.py the fixed-point codec; transport.py UDP
train.py        the model, its data, local phases and DiLoCo's outer step
island.py       an island's process in an experiment (the leader, or another worker)
protocol.py     the messages between the experiment runner and a leader
config.py       what every island process of an experiment is configured with
"""
