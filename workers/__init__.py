"""innet workers: the aggregation client (quantise, packetise, pace, recover) and training."""
