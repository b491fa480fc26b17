"""The benchmarks' C libraries (bench/native/): built with the native pipeline's calling
convention (abi.h) at run time, into build/bench/ (ignored by git), again only when the source
is newer.

- `pipeline_loop.c`: frames back to back through a native pipeline's `p4s_process`;
- `portswap.c`: port 1 <-> port 2 behind that calling convention, no P4.

Run as a script it builds one and prints where the library is:

    python bench/native_build.py pipeline_loop
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import p4switch.native
from p4switch.cbuild import compile_library
from p4switch.exceptions import NativeBuildError

SOURCES = Path(__file__).resolve().parent / "native"
BUILD_DIR = SOURCES.parents[1] / "build" / "bench"
ABI_DIR = Path(p4switch.native.__file__).resolve().parent  # abi.h
CFLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-fPIC", "-shared")


def build_library(name: str, build_dir: Path = BUILD_DIR) -> Path:
    """bench/native/NAME.c compiled to build_dir/NAME.so (again only when the source is newer)."""
    source, library = SOURCES / f"{name}.c", build_dir / f"{name}.so"
    if not source.is_file():
        known = sorted(path.stem for path in SOURCES.glob("*.c"))
        raise NativeBuildError(f"no C source {source}: the libraries are {known}")
    if library.is_file() and library.stat().st_mtime >= source.stat().st_mtime:
        return library
    build_dir.mkdir(parents=True, exist_ok=True)
    flags = (*CFLAGS, f"-I{ABI_DIR}")
    compile_library([source], library, flags, NativeBuildError, f"bench/native/{name}.c")
    return library


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: native_build.py NAME (a bench/native/NAME.c)", file=sys.stderr)
        return 2
    try:
        print(build_library(argv[0]))
    except NativeBuildError as err:
        print(f"native_build: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
