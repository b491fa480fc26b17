"""Build the generated C into a shared library once, cached on disk by what went into it.

The cache key hashes the translation unit (generated code and runtime alike), the compiler
flags and the compiler's version, so a changed program, runtime or gcc builds anew. Both the
`.c` and the `.so` are written to a temporary name and renamed, so two processes building the
same program never load a half-written library (`p4switch.cbuild`). A failed build raises
`NativeBuildError` naming the `.c`, which stays in the cache directory for inspection.
"""

from __future__ import annotations

import ctypes
import hashlib
from pathlib import Path

from p4switch.cbuild import (
    COMPILER,
    cache_dir,
    compile_library,
    compiler,
    compiler_version,
    write_atomically,
)
from p4switch.exceptions import NativeBuildError

__all__ = ["available", "cache_dir", "library", "load"]
# -O3: about 1.5x the frames/s of -O2 on innet.p4's aggregation path (its 32 register lanes);
# -march=native measured no better, and would tie the cached library to one CPU.
FLAGS = ("-std=gnu11", "-O3", "-fPIC", "-shared", "-pthread", "-Wall", "-Wextra")


def available() -> str | None:
    """None when the native back end can be used here, else why not."""
    if compiler() is None:
        return f"no C compiler ({COMPILER}) on PATH"
    return None


def library(source: str) -> Path:
    """The shared library built from `source`, from the cache when it is there."""
    gcc = compiler()
    if gcc is None:
        raise NativeBuildError(
            f"cannot build the native pipeline: no C compiler ({COMPILER}) on PATH"
        )
    key = hashlib.sha256(
        "\0".join([source, " ".join(FLAGS), compiler_version(gcc)]).encode()
    ).hexdigest()[:24]
    root = cache_dir()
    so = root / f"p4s-{key}.so"
    if so.exists():
        return so
    root.mkdir(parents=True, exist_ok=True)
    c_file = root / f"p4s-{key}.c"
    write_atomically(c_file, source.encode())
    compile_library([c_file], so, FLAGS, NativeBuildError, "the native pipeline")
    return so


def load(path: Path) -> ctypes.CDLL:
    """The library with the argument and result types of its `p4s_*` functions set."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        raise NativeBuildError(f"cannot load the native pipeline {path}: {exc}") from None
    p, u32, u64, i32 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int
    pu64, pu32 = ctypes.POINTER(u64), ctypes.POINTER(u32)
    signatures = {
        "p4s_new": (p, [u64, i32]),
        "p4s_free": (None, [p]),
        "p4s_lock": (None, [p]),
        "p4s_set_clock": (None, [p, u64]),
        "p4s_unlock": (None, [p]),
        "p4s_bind_register": (None, [p, u32, pu64]),
        "p4s_bind_counter": (None, [p, u32, pu64, pu64]),
        "p4s_table_set": (i32, [p, u32, u32, pu64, pu64, pu32, pu64, pu64, pu64]),
        "p4s_table_default": (None, [p, u32, u32, pu64, u64, u64]),
        "p4s_table_counts": (None, [p, u32, pu64, pu64]),
        "p4s_table_hits": (None, [p, u32, ctypes.POINTER(ctypes.c_uint8)]),
        "p4s_table_set_counts": (None, [p, u32, pu64, pu64]),
        "p4s_pre_set": (i32, [p, i32, u32, pu64, pu32, pu32, pu64, u32, pu64, pu64]),
        "p4s_counts": (None, [p, pu64, pu64]),
        "p4s_touched": (u32, [p, ctypes.POINTER(ctypes.c_int64)]),
        "p4s_process": (i32, [p, u32, ctypes.c_char_p, u32, p]),
        "p4s_hash": (u64, [i32, ctypes.c_char_p, u32]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib
