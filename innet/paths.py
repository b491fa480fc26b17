"""Where things are in an innet checkout (the data-plane program, scenarios, results), and the
one rule for where innet writes: a command makes the folders it writes into, parents included,
and refuses before any work when it cannot.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     made = make_folder(Path(tmp) / "results" / "demo", "--out")
    ...     (Path(tmp) / "notes").write_text("a file")
    ...     check_destination(Path(tmp) / "notes" / "run", "--out")
    Traceback (most recent call last):
    ...
    innet.exceptions.InputError: --out .../notes/run: .../notes is a file, not a folder; ...
"""

from __future__ import annotations

import os
from pathlib import Path

from innet.exceptions import InputError

CHECKOUT = Path(__file__).resolve().parents[1]
INNET_P4 = CHECKOUT / "p4src" / "innet.p4"  # the data plane every edge runs
SCENARIOS = CHECKOUT / "scenarios"
DEFAULT_SCENARIO = SCENARIOS / "nine-cities.yaml"
RESULTS = CHECKOUT / "results"


def check_destination(folder: Path, what: str) -> None:
    """InputError unless `folder` can be made (with its parents) and written in: the nearest
    part of it that exists must be a folder this process may write in. Nothing is made."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(
            f"{what} {folder}: {existing} is a file, not a folder; give a path in a folder"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(
            f"{what} {folder}: cannot write in {existing} (no permission, or a read-only or "
            "immutable folder); give a folder you can write in"
        )


def make_folder(folder: Path, what: str) -> Path:
    """Make `folder` and its parents (check_destination's InputError when it cannot be)."""
    check_destination(folder, what)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # e.g. made a file meanwhile, or the disk is full
        raise InputError(f"{what} {folder}: cannot make it: {err.strerror}") from None
    return folder
