"""What is installed: a distribution's version, as run results and cluster checks record it."""

from __future__ import annotations

import importlib.metadata


def installed_version(distribution: str) -> str | None:
    """The installed version of `distribution` (a pip name); None when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
