"""A folder nobody may write in, root included: immutable (chattr +i) as root, mode 0o500
otherwise. Tests of what innet refuses to write use it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def unwritable(folder: Path) -> Iterator[Path]:
    """`folder`, made and locked against writes for the block, unlocked after it."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        folder.chmod(0o500)
        try:
            yield folder
        finally:
            folder.chmod(0o700)
        return
    if shutil.which("chattr") is None:
        pytest.skip("as root only an immutable folder refuses writes, and chattr is not here")
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"as root only an immutable folder refuses writes: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
