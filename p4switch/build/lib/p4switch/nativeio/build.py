"""Building the native I/O loop's C sources into a shared library, once, in the cache directory.

The library is named after a hash of its sources (the pipeline's calling convention,
`p4switch/src/p4switch/native/abi.h`, among them) and the compiler flags, so a changed source or
flag builds a new one and an unchanged one is loaded as it is. The sources are copied next to it
first (kept there, so a failed build can be read and repeated by hand); `p4switch.cbuild` compiles
them and renames the library into place, so two processes building at once never load half a
library.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
from pathlib import Path

from p4switch import cbuild
from p4switch.cbuild import cache_dir, compile_library
from p4switch.nativeio.errors import NativeIOBuildError

_HERE = Path(__file__).resolve().parent
ABI = _HERE.parent / "native" / "abi.h"  # the pipeline's calling convention, shared
SOURCES = ("nio.h", "queue.c", "ring.c", "pcap.c", "loop.c")
COMPILED = ("queue.c", "ring.c", "pcap.c", "loop.c")
CFLAGS = ("-std=c11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-pthread")
LIBS = ("-lm",)

__all__ = ["build", "cache_dir", "load", "source_hash"]


def source_hash() -> str:
    """A short hash of the C sources and the flags they are built with."""
    digest = hashlib.sha256()
    for path in (ABI, *(_HERE / name for name in SOURCES)):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(" ".join((cbuild.COMPILER, *CFLAGS, *LIBS)).encode())
    return digest.hexdigest()[:16]


def build(directory: Path | None = None) -> Path:
    """The path of the built library, building it first if it is not in the cache."""
    root = cache_dir() if directory is None else directory
    try:
        key = source_hash()
    except OSError as err:
        raise NativeIOBuildError(
            f"the native I/O loop's C source {err.filename} is missing: p4switch is installed "
            "without it (reinstall p4switch with its package data)"
        ) from err
    library = root / f"nativeio-{key}.so"
    if library.exists():
        return library
    kept = root / f"nativeio-{key}"
    try:
        kept.mkdir(parents=True, exist_ok=True)
        for path in (ABI, *(_HERE / name for name in SOURCES)):
            shutil.copyfile(path, kept / path.name)
    except OSError as err:
        raise NativeIOBuildError(
            f"cannot write the native I/O library to {root}: {err.strerror}; "
            "set P4SWITCH_CACHE to a writable directory"
        ) from err
    c_files = [kept / name for name in COMPILED]
    compile_library(c_files, library, CFLAGS, NativeIOBuildError, "the native I/O loop", LIBS)
    return library


def load(directory: Path | None = None) -> ctypes.CDLL:
    """Build (if needed) and load the library."""
    path = build(directory)
    try:
        return ctypes.CDLL(str(path))
    except OSError as err:
        raise NativeIOBuildError(f"cannot load the native I/O library {path}: {err}") from err
