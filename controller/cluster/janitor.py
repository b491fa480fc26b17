"""The janitor of a node's share of a network: it outlives the agent that built it, and undoes
what the agent recorded when the agent is gone without having undone it.

    python -m controller.cluster.janitor RUN_DIR --watch AGENT_PID [--detach --log FILE]

An agent (controller/cluster/agent.py) records every process and interface it makes in a run
directory of its own (controller/rundir.py), as `innet run` does on one machine. Ray ends an
agent when its driver disconnects or dies, and kills the agent's own child processes with it
(Mininet's host shells among them): the veths between the switches and the link emulator, and
whatever else was not a child, would stay. So the agent starts this process first, detached
(`--detach`: it forks, prints the janitor's PID and returns; the janitor, in a session of its
own, is no child of the agent, and Ray leaves it alone; its output goes to `--log`). It waits
until the agent's PID is gone, then does what `innet clean` does with the run directory (stops
exactly the recorded PIDs whose command line is still the recorded one, deletes the recorded
interfaces) and removes the directory. An agent that tears its network down itself releases
the directory first, so the janitor then finds nothing to do. SIGTERM or SIGINT makes it clean
up at once and end.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from controller.rundir import RunDir

log = logging.getLogger("controller.cluster.janitor")

POLL_S = 0.5  # how often the janitor looks whether its agent is still there


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def clean(run_dir: Path) -> list[str]:
    """Undo what the run directory records, then remove the directory; what was done."""
    done = RunDir(run_dir).clean() if run_dir.exists() else []
    shutil.rmtree(run_dir, ignore_errors=True)
    return done


def watch(run_dir: Path, pid: int, stop: threading.Event) -> list[str]:
    """Wait until `pid` is gone (or `stop` is set), then clean `run_dir`."""
    while alive(pid) and not stop.wait(POLL_S):
        pass
    return clean(run_dir)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.cluster.janitor")
    parser.add_argument("run_dir", type=Path, help="the agent's run directory")
    parser.add_argument("--watch", type=int, required=True, metavar="PID", help="the agent")
    parser.add_argument("--detach", action="store_true", help="fork, print the PID, return")
    parser.add_argument("--log", type=Path, help="with --detach: where the janitor writes")
    args = parser.parse_args(argv)
    if args.detach:
        _detach(args.log)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s janitor %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    done = watch(args.run_dir, args.watch, stop)
    for line in done:
        log.info("%s", line)
    log.info("agent %d gone: %s cleaned (%d actions)", args.watch, args.run_dir, len(done))
    return 0


def _detach(log_file: Path | None) -> None:
    """Go on in a child of a session of its own, its output to `log_file`; the parent prints
    the child's PID and ends (so the janitor is nobody's child but init's)."""
    child = os.fork()
    if child:
        print(child, flush=True)
        os._exit(0)
    os.setsid()
    out = os.open(log_file or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    os.close(null)


if __name__ == "__main__":
    os.umask(0o077)
    sys.exit(main())
