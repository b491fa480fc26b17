"""innet/stopping.py in processes of their own: a StopSignals handles SIGINT where the
process inherited it ignored (a background job of a script), and a signal sent across an exec
that `block_for_exec` prepared reaches the new image's handler instead of being lost or killing
it. The other behaviours (held blocks, a second signal) are the module's doctest."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60.0  # hang guard: no duration is asserted

NEW_IMAGE = """
from innet.stopping import StopSignals
signals = StopSignals()
print("new image", flush=True)
try:
    signals.install()
    print("not stopped", flush=True)
except KeyboardInterrupt:
    print("stopped by", signals.name, flush=True)
"""

BEFORE_EXEC = f"""
import os, sys
from innet.stopping import StopSignals, block_for_exec
StopSignals().install()
block_for_exec()
print("blocked", flush=True)
sys.stdin.readline()  # the test signals now, then lets it exec
os.execv(sys.executable, [sys.executable, "-c", {NEW_IMAGE!r}])
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


def test_sigint_stops_a_process_that_inherited_it_ignored() -> None:
    proc = subprocess.Popen([sys.executable, "-c", WAITING], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, preexec_fn=ignoring_sigint)  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=TIMEOUT_S)
    assert out == "stopped by SIGINT\n"


def test_a_signal_across_an_exec_reaches_the_new_image() -> None:
    proc = subprocess.Popen([sys.executable, "-c", BEFORE_EXEC], cwd=REPO, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            preexec_fn=ignoring_sigint)  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline() == "blocked\n"
    proc.send_signal(signal.SIGTERM)  # blocked: pending until the new image unblocks it
    out, _ = proc.communicate("go\n", timeout=TIMEOUT_S)
    assert proc.returncode == 0
    assert out == "new image\nstopped by SIGTERM\n"
