"""What p4switch's commands share: a parser whose usage error is one line, and the folders a
command writes into made for it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

from p4switch.exceptions import UsageError


class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line naming the problem and pointing at --help (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def make_folder(folder: Path, what: str) -> Path:
    """Make `folder` and its parents for the file option `what` names, or a UsageError saying
    why not (a file in the way, no permission, a full disk)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(
            f"{what} {folder}: {existing} is a file, not a folder; give a path in a folder"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{what} {folder}: cannot make it: {err.strerror}") from None
    return folder
