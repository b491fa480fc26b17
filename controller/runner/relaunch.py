"""Starting a command again with the lanes per packet its scenario asks for.

innet's packet layout (`topo.siteplan.LANES`) is fixed when a process imports it, from
`INNET_LANES`; the island processes and the switches inherit it. A scenario with other `lanes`
(`LanesMismatch`) is therefore run by starting the same command line again, in this process
(exec), with `INNET_LANES` set, only where that command line is the process's own (a CLI called
with an argument list, as tests do, raises instead). Where the process handles its stop signals
(innet/stopping.py), SIGINT and SIGTERM are blocked across the exec, so one sent then is
neither lost nor fatal to the new image before it can handle it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

from controller.runner.exceptions import LanesMismatch
from controller.runner.scenario import Scenario, load_scenario
from innet.stopping import block_for_exec, installed, unblock
from topo.siteplan import LANES, LANES_ENV


def relaunch(err: LanesMismatch, allowed: bool) -> NoReturn:
    """exec this process's own command line again with INNET_LANES=err.lanes, or raise `err`
    where that is not allowed or was already done (the environment already asks for them)."""
    if not allowed or os.environ.get(LANES_ENV) == str(err.lanes) or err.lanes == LANES:
        raise err
    print(f"innet: the scenario asks for {err.lanes} lanes per packet; starting again with "
          f"{LANES_ENV}={err.lanes}", file=sys.stderr, flush=True)  # fmt: skip
    sys.stdout.flush()
    # Where this process handles its stop signals (`innet run`), one from here on waits,
    # pending, for the new image's handler (its StopSignals.install), which then stops it as at
    # any other moment of its start-up.
    blocked = installed() is not None
    if blocked:
        block_for_exec()
    try:
        os.execve(sys.executable, list(sys.orig_argv), {**os.environ, LANES_ENV: str(err.lanes)})
    finally:  # the exec failed: this process goes on handling its signals
        if blocked:
            unblock()


def load_relaunching(path: Path | str, allowed: bool) -> Scenario:
    """load_scenario(path); a scenario with other lanes than this process's relaunches it."""
    try:
        return load_scenario(path)
    except LanesMismatch as err:
        relaunch(err, allowed)
