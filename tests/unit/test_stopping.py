"""innet/stopping.py in processes of their own: a StopSignals handles SIGINT where the
process inherited it ignored (a background job of a script), and a signal that arrived while the
process had it blocked (inherited so from its parent) reaches the handler once installed instead
of being lost. The other behaviours (held blocks, a second signal) are the module's doctest."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60.0  # hang guard: no duration is asserted

BLOCKED = """
import sys
from innet.stopping import StopSignals
signals = StopSignals()
print("blocked", flush=True)
sys.stdin.readline()  # the test signals now, then lets it install its handler
try:
    signals.install()
    print("not stopped", flush=True)
except KeyboardInterrupt:
    print("stopped by", signals.name, flush=True)
"""

WAITING = """
import time
from innet.stopping import StopSignals
signals = StopSignals().install()
try:
    print("ready", flush=True)  # the signal may come as soon as this is out
    time.sleep(60)
    print("not stopped", flush=True)
except KeyboardInterrupt:
    print("stopped by", signals.name, flush=True)
"""


def ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a non-interactive shell's `cmd &`


def blocking_both() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))  # kept by exec


def test_sigint_stops_a_process_that_inherited_it_ignored() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", WAITING],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        preexec_fn=ignoring_sigint,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=TIMEOUT_S)
    assert out == "stopped by SIGINT\n"


def test_a_signal_that_came_while_inherited_blocked_reaches_the_handler() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKED],
        cwd=REPO,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        preexec_fn=blocking_both,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline() == "blocked\n"
    proc.send_signal(signal.SIGTERM)  # blocked: pending until install unblocks it
    out, _ = proc.communicate("go\n", timeout=TIMEOUT_S)
    assert proc.returncode == 0
    assert out == "stopped by SIGTERM\n"
