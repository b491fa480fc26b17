"""What the experiment's leaders are told each round: rate, offset, just-in-time lag, timeouts.

The planner gives each group a rate and each member a send offset that aligns arrivals; a leader
also needs when its own contribution should enter its edge's slot (the first remote copy's
arrival) and timeouts that exceed the time from a send to its result.
"""

from __future__ import annotations

import numpy as np

from workers.group import SendPolicy


def local_lag(
    delay: np.ndarray, members: tuple[int, ...], offsets: tuple[float, ...], me: int
) -> float:
    """When the first remote copy of a chunk reaches `me`'s edge, after `me` sent its own
    (`delay[u][v]`: one-way delay from u's edge to v's)."""
    at = dict(zip(members, offsets, strict=True))
    first = min(at[i] + float(delay[i][me]) for i in members if i != me)
    return first - at[me]


def send_policy(
    frame_rate_bps: float,
    frame_bits: int,
    offset_s: float,
    lag_s: float | None,
    span_s: float,
    chunks: int,
    deadline_s: float,
    slots: int | None = None,
) -> SendPolicy:
    """A leader's policy for one round: paced at `frame_rate_bps` (frames of `frame_bits` on
    the wire, at emulation scale), the whole update in flight, timeouts above the group's span;
    `lag_s` is None where the own contribution is not merged just in time (the hosts sum);
    `slots` per bank at the edges (in-line aggregation): a RESULT frees its chunk's cell."""
    frame_s = frame_bits / frame_rate_bps
    timeout = max(0.2, 2.0 * span_s + 8 * frame_s)
    return SendPolicy(
        window=max(1, chunks),
        rate_bps=frame_rate_bps,
        start_s=max(0.0, offset_s),
        local_lag_s=lag_s,
        timeout_s=timeout,
        max_timeout_s=4 * timeout,
        deadline_s=deadline_s,
        linger_s=min(2.0, 3 * timeout),
        cells=2 * slots if slots else None,
    )
