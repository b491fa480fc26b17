"""An island process ends without the interpreter's teardown, its output flushed first."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import logging, sys
from workers.island import exit_now
logging.basicConfig(stream=sys.stderr, format="%(message)s")
logging.warning("logged before the end")
print("an event line", end="")  # no newline: still in the buffer
exit_now(3)
"""


def test_exit_now_flushes_stdout_and_the_log_and_keeps_the_status() -> None:
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stdout == "an event line"
    assert done.stderr == "logged before the end\n"
